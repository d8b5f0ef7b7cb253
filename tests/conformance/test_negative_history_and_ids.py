"""Negative tests of the rules the statement-by-statement audit added or restated (issue 19): ids never
reused and counters that never decrease across versions, fragments with data files, row-id sequences,
index directories, deletion read versions, clones faithful to their source, and the misreadings fixed
(a dropped column's field id is legal, only -1 is not; Int32 deletion offsets are what the readers
refuse). Each builds a clean dataset with the reference writer (or pylance where only it writes the
thing), breaks exactly one thing and expects exactly that requirement.
The breaches that are cases of the golden corpus (conformance/corpus/breach_*.py) are tested there, by
tests/fixtures/test_breach_cases.py; what stays here is what those cases do not show (variants, messages,
what must NOT be reported).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from conformance_kit import (
    assert_clean,
    assert_only,
    assert_reported,
    build_reference_dataset,
    certify_findings,
    latest_version,
    local_manifest_file,
    manifest_uri,
    rewrite_manifest,
    rows,
    snapshot,
)

from conformance.corpus.breach_history import (
    CASES,
    breach_field_id_in_data_files,
    breach_field_readded,
    breach_fragment_id_below_max,
)
from conformance.corpus.breaches import BREACHES, Breach, Site
from conformance.traceability import load_matrix
from reference import clone as clone_ops
from reference import ops
from reference.codec import encode_manifest_file
from reference.codec import manifest as manifest_codec
from reference.proto import file_pb2, rowids_pb2, table_pb2, transaction_pb2
from reference.table import Dataset

Build = Callable[..., str]


def _add_field(name: str, field_id: int) -> Callable[[table_pb2.Manifest], None]:
    def edit(m: table_pb2.Manifest) -> None:
        m.fields.add(name=name, id=field_id, parent_id=-1, logical_type="int64", type=file_pb2.Field.LEAF,
                     nullable=True)

    return edit


# --- MAN -------------------------------------------------------------------------------------------------


def test_man006_a_dropped_columns_field_id_is_legal(clean_dataset: Build) -> None:
    """The misreading fixed: a data file keeping the id of a field the schema dropped is no breach."""
    uri = clean_dataset()
    rewrite_manifest(uri, latest_version(uri), lambda m: m.fields.pop())
    assert not [f for f in certify_findings(uri) if f.requirement == "MAN-006"]


def test_man016_field_id_reused_after_a_drop(clean_dataset: Build) -> None:
    """v1 has a field 'ghost' (id 5) that v2 drops; v3 gives id 5 to a new field."""
    uri = clean_dataset(deletions=("arrow",))
    rewrite_manifest(uri, 1, _add_field("ghost", 5))
    rewrite_manifest(uri, 3, _add_field("other", 5))
    found = assert_only(certify_findings(uri), "MAN-016")
    assert found[0].version == 3 and "ghost" in found[0].message


def test_man016_new_field_id_not_above_the_ids_used_before(clean_dataset: Build) -> None:
    uri = clean_dataset()
    rewrite_manifest(uri, 1, _add_field("ghost", 7))
    rewrite_manifest(uri, 2, _add_field("late", 3))
    found = assert_only(certify_findings(uri), "MAN-016")
    assert "not above the highest id used before (7)" in found[0].message


def test_man016_a_dropped_field_readded_under_its_old_id(clean_dataset: Build) -> None:
    """The audit's breach: same name and type, but version 3 is a delete, not a restore; the data files
    still hold id 1, so readers return the dropped values."""
    uri = clean_dataset(deletions=("arrow",))
    breach_field_readded(uri)
    found = assert_only(certify_findings(uri), "MAN-016")
    assert [f.version for f in found] == [3]
    assert ("comes back under its old id 1 in a delete commit (data files of the version before still hold that "
            "id") in found[0].message


@pytest.fixture(params=["messages", "columns"])
def judged_from(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test twice: the manifests judged from the protobuf messages, and from the fragment columns with
    the plain fragments screened (as certify does from 1,000 fragments on)."""
    if request.param == "columns":
        monkeypatch.setattr(manifest_codec, "COLUMNS_FROM_FRAGMENTS", 0)
    return str(request.param)


def test_man016_a_field_id_reused_after_cleanup(clean_dataset: Build, judged_from: str) -> None:
    """The versions that used id 1 are cleaned up; the data files' own schemas still hold it as 'name'."""
    uri = clean_dataset(deletions=("arrow",))
    breach_field_id_in_data_files(uri)
    assert Dataset(uri).versions() == [3]
    found = assert_only(certify_findings(uri), "MAN-016")
    assert len(found) == 4  # every data file of the latest version holds id 1
    assert all("holds field id 1 as 'name' (string), the schema gives id 1 to 'score' (int64)" in f.message
               for f in found)


def test_man016_one_field_id_two_names_in_one_fragment(clean_dataset: Build, tmp_path: Path, judged_from: str) -> None:
    """Fragment 0 gets a second data file holding id 1, which its own schema calls 'label' while the first
    file's calls it 'name': one id names two fields (a reuse whose versions a cleanup removed). Both are
    strings, so only the names disagree; the overlap itself is MAN-007's (SHOULD)."""
    uri = clean_dataset()
    labels = str(tmp_path / "labels")
    ops.create(labels, pa.table({"id": pa.array(range(4), pa.int64()), "label": list("abcd")}))
    donor = snapshot(labels).manifest.fragments[0].files[0]
    shutil.copy(Path(labels, "data", donor.path), Path(uri, "data", donor.path))

    def add(m: table_pb2.Manifest) -> None:
        extra = m.fragments[0].files.add()
        extra.CopyFrom(donor)
        extra.fields[:] = [-2, 1]

    rewrite_manifest(uri, latest_version(uri), add)
    findings = certify_findings(uri)
    found = assert_only(findings, "MAN-016")
    assert "field id 1 is 'label' (string) in this data file and 'name' (string) in " in found[0].message
    assert {f.severity for f in assert_reported(findings, "MAN-007")} == {"SHOULD"}


def _restore(uri: str, version: int, restored: int, edit: Callable[[table_pb2.Manifest], None]) -> None:
    """Make ``version`` a restore of ``restored``: its schema and fragments those of ``restored`` (then
    ``edit``ed), its transaction (inline and file) a Restore."""
    source = snapshot(uri, restored).manifest
    where = manifest_uri(uri, version)
    decoded = local_manifest_file(where)
    manifest = table_pb2.Manifest()
    manifest.CopyFrom(decoded.manifest)
    for name in ("fields", "fragments"):
        manifest.ClearField(name)  # type: ignore[arg-type]
    manifest.fields.extend(source.fields)
    manifest.fragments.extend(source.fragments)
    manifest.reader_feature_flags, manifest.writer_feature_flags = source.reader_feature_flags, \
        source.writer_feature_flags
    edit(manifest)
    txn = transaction_pb2.Transaction(read_version=version - 1, uuid=decoded.transaction.uuid if decoded.transaction
                                      else "", restore=transaction_pb2.Transaction.Restore(version=restored))
    data = txn.SerializeToString()
    Path(uri, "_transactions", manifest.transaction_file).write_bytes(data)
    Path(where).write_bytes(encode_manifest_file(manifest, data, decoded.index_section))


def test_man016_man017_a_restore_brings_back_ids_as_they_were(clean_dataset: Build) -> None:
    """Version 1 has a field 'ghost' (id 5) that version 2 drops; version 3 restores version 1, so 'ghost'
    and fragment ids come back as they were: no reuse. The same restore giving id 5 to 'other' is one."""
    uri = clean_dataset(deletions=("arrow",))
    rewrite_manifest(uri, 1, _add_field("ghost", 5))
    rewrite_manifest(uri, 2, lambda m: m.fragments.pop(1))  # fragment 1 leaves, the restore brings it back
    _restore(uri, 3, 1, lambda m: None)
    assert_clean(certify_findings(uri))
    _restore(uri, 3, 1, lambda m: setattr(m.fields[-1], "name", "other"))
    found = assert_only(certify_findings(uri), "MAN-016")
    assert ("the restore of version 1 brings back field id 5 as 'other' (int64), which version 1 had as 'ghost' "
            "(int64)") in found[0].message


def test_man017_a_restore_bringing_back_another_fragment(clean_dataset: Build) -> None:
    """Version 3 restores version 1, but its fragment 1 holds the data file of fragment 3 (appended by
    version 2) instead of version 1's."""
    uri = clean_dataset(deletions=("arrow",))
    rewrite_manifest(uri, 2, lambda m: m.fragments.pop(1))
    appended = snapshot(uri, 2).manifest.fragments[-1]

    def swap(m: table_pb2.Manifest) -> None:
        m.fragments[1].files[0].CopyFrom(appended.files[0])

    _restore(uri, 3, 1, swap)
    found = assert_only(certify_findings(uri), "MAN-017")
    assert found[0].version == 3
    assert "the restore of version 1 brings back fragment id 1 with other data files" in found[0].message


def test_man017_fragment_id_reused(clean_dataset: Build) -> None:
    """v2 drops fragment 1; v3 (latest) gives id 1 to the fragment v2 appended as 3."""
    uri = clean_dataset(deletions=("arrow",))
    rewrite_manifest(uri, 2, lambda m: m.fragments.pop(1))

    def reuse(m: table_pb2.Manifest) -> None:
        appended = m.fragments.pop()
        m.fragments[1].CopyFrom(appended)
        m.fragments[1].id = 1

    rewrite_manifest(uri, 3, reuse)
    found = assert_only(certify_findings(uri), "MAN-017")
    assert found[0].version == 3 and "fragment id 1 comes back in a delete commit" in found[0].message


def test_man017_fragment_id_reused_after_cleanup(clean_dataset: Build) -> None:
    """Version 1, where fragment 2 lived, is cleaned up; version 3 names new data fragment 2, not above the
    max_fragment_id 3 of version 2."""
    uri = clean_dataset(deletions=("arrow",))
    breach_fragment_id_below_max(uri)
    assert Dataset(uri).versions() == [2, 3]
    found = assert_only(certify_findings(uri), "MAN-017")
    assert [f.version for f in found] == [3]
    assert "new fragment 2 (made by a delete commit) is not above max_fragment_id 3 of version 2" in found[0].message


def test_man018_max_fragment_id_decreases(clean_dataset: Build) -> None:
    """v2 claims max_fragment_id 7; v3 (a delete, no new fragment) records 3."""
    uri = clean_dataset(deletions=("arrow",))
    rewrite_manifest(uri, 2, lambda m: setattr(m, "max_fragment_id", 7))
    found = assert_only(certify_findings(uri), "MAN-018")
    assert found[0].version == 3 and "below 7" in found[0].message


def test_man019_fragment_without_data_files(clean_dataset: Build) -> None:
    uri = clean_dataset()
    rewrite_manifest(uri, latest_version(uri), lambda m: m.fragments[-1].ClearField("files"))
    assert_only(certify_findings(uri), "MAN-019")


# --- ROW -------------------------------------------------------------------------------------------------


def _sequence(start: int, end: int) -> bytes:
    seq = rowids_pb2.RowIdSequence()
    seq.segments.add().range.CopyFrom(rowids_pb2.U64Segment.Range(start=start, end=end))
    return seq.SerializeToString()


@pytest.fixture
def stable(tmp_path: Path) -> str:
    """pylance writes stable row ids (the reference writer does not): two fragments of 4 rows, ids 0..7."""
    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "stable")
    lance.write_dataset(rows(0, 4), uri, enable_stable_row_ids=True)
    lance.write_dataset(rows(4, 4), uri, mode="append")
    assert_clean(certify_findings(uri))
    return uri


@pytest.mark.interop
@pytest.mark.parametrize(("sequence", "said"), [
    ((0, 3), "3 ids for 4 physical rows"),
    ((0, 4), "held by live rows of fragments 0, 1"),
    ((6, 10), "not below next_row_id 8"),
], ids=["short", "duplicate", "beyond-next-row-id"])
def test_row001_sequence_broken(stable: str, sequence: tuple[int, int], said: str) -> None:
    rewrite_manifest(stable, 2, lambda m: setattr(m.fragments[1], "inline_row_ids", _sequence(*sequence)))
    found = assert_only(certify_findings(stable), "ROW-001")
    assert said in found[0].message


@pytest.mark.interop
def test_row001_an_updated_row_keeps_its_id(stable: str) -> None:
    """An update with stable row ids moves the row to a new fragment under the same id and deletes it from
    the old one, whose sequence keeps the id: one id in two sequences, one of them deleted, is no breach."""
    lance = pytest.importorskip("lance")
    lance.dataset(stable).update({"name": "'moved'"}, where="id = 1")
    snapshot = Dataset.open(stable).snapshot()
    held = []
    for fragment in snapshot.manifest.fragments:
        sequence = rowids_pb2.RowIdSequence.FromString(fragment.inline_row_ids)
        held += [row_id for segment in sequence.segments if segment.WhichOneof("segment") == "range"
                 for row_id in range(segment.range.start, segment.range.end)]
    assert held.count(1) == 2  # the old row (deleted) and the moved one
    assert_clean(certify_findings(stable))


@pytest.mark.interop
def test_row002_next_row_id_decreases(stable: str) -> None:
    rewrite_manifest(stable, 1, lambda m: setattr(m, "next_row_id", 100))
    found = assert_only(certify_findings(stable), "ROW-002")
    assert found[0].version == 2


# --- IDX -------------------------------------------------------------------------------------------------


@pytest.fixture
def indexed(tmp_path: Path) -> str:
    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "indexed")
    lance.write_dataset(rows(0, 10), uri, max_rows_per_file=5).create_scalar_index("id", "BTREE")
    assert_clean(certify_findings(uri))
    return uri


@pytest.mark.interop
def test_idx001_index_directory_removed(indexed: str) -> None:
    shutil.rmtree(Path(indexed, "_indices"))
    found = assert_only(certify_findings(indexed), "IDX-001")
    assert "holds nothing" in found[0].message


@pytest.mark.interop
def test_idx001_index_file_truncated(indexed: str) -> None:
    listed = next(p for p in Path(indexed, "_indices").rglob("*") if p.is_file())
    listed.write_bytes(listed.read_bytes()[:-1])
    assert_only(certify_findings(indexed), "IDX-001")


# --- DEL -------------------------------------------------------------------------------------------------


# --- BASE-005 (a SHOULD since the resolution rules allow it) -----------------------------------------------


# --- CLONE -----------------------------------------------------------------------------------------------




def test_clone007_deep_copy_differs(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path)
    target = clone_ops.deep_clone(Dataset(uri), 2, str(tmp_path / "deep"))
    assert_clean(certify_findings(target.uri))
    copy = Path(snapshot(target.uri).fragments[0].files[0].uri or "")
    data = bytearray(copy.read_bytes())
    data[10] ^= 0xFF
    copy.write_bytes(bytes(data))
    found = assert_only(certify_findings(target.uri), "CLONE-007")
    assert "differs from the source's" in found[0].message
    assert ops  # the reference writer built both


# --- the breach cases of conformance/corpus/breach_history.py, as the corpus will build them ------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_history_breach_cases(case: Breach, tmp_path: Path) -> None:
    """Each case, applied to the clean dataset it names, gives its requirement at MUST and no other MUST;
    its statements are in the matrix and list that requirement."""
    uri = build_reference_dataset(tmp_path, deletions=case.clean.deletions)
    assert_clean(certify_findings(uri))
    case.edit(Site(tmp_path, uri, uri))
    assert {f.severity for f in assert_only(certify_findings(uri), case.requirement)} == {"MUST"}
    statements = load_matrix().statements
    for sid in case.statements:
        assert case.requirement in statements[sid].requirements, sid


def test_history_breaches_are_in_the_corpus_registry() -> None:
    """The three cases are the registry's own, on the clean dataset with an ``.arrow`` deletion."""
    assert [c.id for c in CASES] == ["breach-man-016-field-readded", "breach-man-016-field-id-in-data-files",
                                     "breach-man-017-fragment-id-below-max"]
    assert all(BREACHES[c.id] is c and c.clean.deletions == ("arrow",) for c in CASES)
    assert [c.requirement for c in CASES] == ["MAN-016", "MAN-016", "MAN-017"]
