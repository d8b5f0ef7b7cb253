"""Negative tests of the rules the statement-by-statement audit added or restated (issue 19): ids never
reused and counters that never decrease across versions, fragments with data files, row-id sequences,
index directories, deletion read versions, clones faithful to their source, and the misreadings fixed
(a dropped column's field id is legal, only -1 is not; Int32 deletion offsets are what the readers
refuse). Each builds a clean dataset with the reference writer (or pylance where only it writes the
thing), breaks exactly one thing and expects exactly that requirement.
The breaches that are cases of the golden corpus (conformance/fixtures/breach_*.py) are tested there, by
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
    certify_findings,
    latest_version,
    rewrite_manifest,
    rows,
)

from lancespec.reference.proto import file_pb2, rowids_pb2, table_pb2
from lancespec.reference.table import Dataset

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


def test_man016_a_restored_field_is_no_reuse(clean_dataset: Build) -> None:
    uri = clean_dataset(deletions=("arrow",))
    rewrite_manifest(uri, 1, _add_field("ghost", 5))
    rewrite_manifest(uri, 3, _add_field("ghost", 5))
    assert not [f for f in certify_findings(uri) if f.requirement == "MAN-016"]


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




# --- IDX-002 (breach: breach-idx-002-rewritten-fragment-still-covered) -----------------------------------


@pytest.mark.interop
def test_idx002_pylance_index_maintenance_keeps_coverage_true(tmp_path: Path) -> None:
    """pylance 14.0.2 remaps or narrows an index when compaction, update, add_columns and optimize_indices
    rewrite fragments, and refuses a cast of an indexed column: no IDX-002 on what it writes."""
    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "indexed")
    table = pa.table({"id": pa.array(range(40), pa.int64()), "v": pa.array([float(i) for i in range(40)])})
    dataset = lance.write_dataset(table, uri, max_rows_per_file=10)
    dataset.create_scalar_index("id", "BTREE")
    dataset.delete("id < 5")
    dataset.optimize.compact_files(target_rows_per_fragment=25, materialize_deletions_threshold=0.01)
    dataset = lance.dataset(uri)
    dataset.update({"v": "2.0"}, where="id = 20")
    dataset.add_columns({"w": "id * 2"})
    lance.dataset(uri).optimize.optimize_indices()
    lance.dataset(uri).create_scalar_index("v", "BTREE")
    lance.dataset(uri).update({"v": "3.0"}, where="id = 30")
    findings = certify_findings(uri)
    assert_clean(findings)
    assert not [f for f in findings if f.requirement == "IDX-002"]
