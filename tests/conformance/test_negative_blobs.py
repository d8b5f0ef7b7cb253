"""Negative tests of the blob checks (``blobs.descriptors``, ``blobs.routing``, ``blobs.orphans``): build a
clean blob v2 dataset with the reference writer, break exactly one thing, and assert that certify reports
the requirement it breaches and, for a MUST, no unrelated MUST.

Ways of breaking: sidecar files (delete, truncate, stray orphans), the thresholds the manifest declares,
a writer whose routing is wrong (the reference writer with its thresholds patched while it writes), and
forged descriptors: a data file whose blob column is written as a plain packed struct ``<kind, position,
size, blob_id, blob_uri>``, which the file codec stores with the same page layout pylance reads as blob
v2 descriptors, so any descriptor value can be stored.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from conformance_kit import assert_clean, assert_only, assert_reported, certify_findings, rewrite_manifest

from lancespec.conformance.findings import Finding
from lancespec.reference import ops
from lancespec.reference.apply import apply_transaction, assign_base_ids
from lancespec.reference.blob import write as blob_write
from lancespec.reference.blob.routing import INLINE_SIZE_THRESHOLD_KEY, Thresholds
from lancespec.reference.commit import commit, new_transaction
from lancespec.reference.layout import new_data_file_name, reversed_blob_id
from lancespec.reference.proto import table_pb2
from lancespec.reference.schema import arrow_to_fields
from lancespec.reference.table import Dataset
from lancespec.reference.writer import describe_data_file, encode_data_file

SMALL = {"inline_size_threshold": 100, "dedicated_size_threshold": 1000, "pack_file_size_threshold": 2500}
DESCRIPTOR = pa.struct([pa.field("kind", pa.uint8(), False), pa.field("position", pa.uint64(), False),
                        pa.field("size", pa.uint64(), False), pa.field("blob_id", pa.uint32(), False),
                        pa.field("blob_uri", pa.utf8(), False)])


def payload(n: int, seed: int) -> bytes:
    return bytes((seed + 13 * i) % 256 for i in range(n))


def blob_table(values: list[Any], **thresholds: int) -> pa.Table:
    field = lance.blob_field("blob", **thresholds)
    return pa.Table.from_arrays([pa.array(range(len(values)), pa.int64()), lance.blob_array(values)],
                                schema=pa.schema([pa.field("id", pa.int64()), field]))


def blob_findings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.requirement.startswith("BLOB")]


@pytest.fixture
def ext(tmp_path: Path) -> Path:
    directory = tmp_path / "external"
    directory.mkdir()
    (directory / "a.bin").write_bytes(payload(400, 9))
    return directory


@pytest.fixture
def blob_dataset(tmp_path: Path, ext: Path) -> Path:
    """Two fragments: inline, two packed, dedicated; external whole file, external range, empty, null;
    then a delete. Certified clean of MUST findings and of every blob finding."""
    root = tmp_path / "ds"
    values: list[Any] = [payload(40, 1), payload(600, 2), payload(900, 3), payload(5000, 4), str(ext / "a.bin"),
                         lance.Blob.from_uri(str(ext / "a.bin"), position=10, size=20), lance.Blob.empty(), None]
    ops.create(str(root), blob_table(values, **SMALL), max_rows_per_file=4,
               initial_bases=[ops.DatasetBasePath(str(ext), name="external")])
    ops.delete(Dataset(str(root)), "id = 7")
    findings = certify_findings(str(root))
    assert_clean(findings)
    assert blob_findings(findings) == []
    return root


def sidecar(root: Path, blob_id: int, fragment: int = 0) -> Path:
    name = Dataset(str(root)).snapshot().manifest.fragments[fragment].files[0].path
    return root / "data" / name[: -len(".lance")] / f"{reversed_blob_id(blob_id)}.blob"


def forged(tmp_path: Path, rows: list[tuple[int, int, int, int, str]], *, root_like: bool = False) -> str:
    """A dataset whose single data file stores exactly ``rows`` as blob descriptors (see module doc); its
    base ``external`` holds a 400-byte ``a.bin``."""
    root = tmp_path / "forged"
    external = tmp_path / "forged-external"
    fields = arrow_to_fields(blob_table([b"x"]).schema)
    column = pa.array([dict(zip(("kind", "position", "size", "blob_id", "blob_uri"), r, strict=True)) for r in rows],
                      DESCRIPTOR)
    table = pa.Table.from_arrays([pa.array(range(len(rows)), pa.int64()), column], schema=pa.schema(
        [pa.field("id", pa.int64()), pa.field("blob", DESCRIPTOR, metadata={"lance-encoding:packed": "true"})]))
    data = encode_data_file(table, "2.2")
    name = new_data_file_name()
    external.mkdir(exist_ok=True)
    (external / "a.bin").write_bytes(payload(400, 9))  # the object external rows name (BLOB-004)
    (root / "data").mkdir(parents=True)
    (root / "data" / name).write_bytes(data)
    txn = new_transaction(0)
    txn.overwrite.fragments.append(describe_data_file(name, data, fields, len(rows), (2, 2), None))
    txn.overwrite.schema.extend(fields)
    txn.overwrite.initial_bases.extend(assign_base_ids([], [table_pb2.BasePath(
        id=0, name="external", path=str(external), is_dataset_root=root_like)]))
    commit(Dataset(str(root)), txn, lambda previous, t: apply_transaction(previous, t, "2.2"), new_dataset=True)
    return str(root)


def test_forged_descriptors_read_like_written_ones(tmp_path: Path) -> None:
    """The forging technique itself: pylance reads the packed struct as blob v2 descriptors, certify finds
    nothing wrong with valid ones."""
    uri = forged(tmp_path, [(0, 0, 4, 0, ""), (3, 0, 0, 1, "a.bin")])
    assert lance.dataset(uri).to_table().column("blob").to_pylist()[1] == {
        "kind": 3, "position": 0, "size": 0, "blob_id": 1, "blob_uri": "a.bin"}
    findings = certify_findings(uri)
    assert_clean(findings)
    assert blob_findings(findings) == []


# --- BLOB-001 .. BLOB-004 (MUST) ------------------------------------------------------------------------


def test_unknown_kind(tmp_path: Path) -> None:
    found = assert_only(certify_findings(forged(tmp_path, [(0, 0, 4, 0, ""), (9, 0, 4, 0, "")])), "BLOB-001")
    assert "blob kind 9" in found[0].message and "row 1" in found[0].message


def test_managed_kind_without_the_managed_flag(tmp_path: Path) -> None:
    assert_only(certify_findings(forged(tmp_path, [(4, 0, 3, 0, "_blobs/x.blob")])), "BLOB-001")


def test_inline_range_past_the_data_file(tmp_path: Path) -> None:
    found = assert_only(certify_findings(forged(tmp_path, [(0, 100_000, 50, 0, "")])), "BLOB-002")
    assert "[100000, 100050)" in found[0].message


def test_missing_dedicated_sidecar(blob_dataset: Path) -> None:
    sidecar(blob_dataset, 2).unlink()  # fragment 0: pack 1 (600 B + 900 B), dedicated 2 (5000 B)
    found = assert_only(certify_findings(str(blob_dataset)), "BLOB-003")
    assert "does not exist" in found[0].message and found[0].path.endswith(f"{reversed_blob_id(2)}.blob")


def test_truncated_pack(blob_dataset: Path) -> None:
    pack = sidecar(blob_dataset, 1)
    pack.write_bytes(pack.read_bytes()[:1000])
    found = assert_only(certify_findings(str(blob_dataset)), "BLOB-003")
    assert "[600, 1500) lies past the end of the 1000-byte sidecar" in found[0].message


def test_packed_blob_with_sidecar_id_zero(tmp_path: Path) -> None:
    assert_only(certify_findings(forged(tmp_path, [(1, 0, 10, 0, "")])), "BLOB-003")


@pytest.mark.parametrize(("row", "root_like", "words"), [
    ((3, 0, 0, 7, "a.bin"), False, "names base 7, which the manifest does not register"),
    ((3, 0, 0, 1, "a.bin"), True, "a dataset root"),
    ((3, 0, 0, 1, "/abs/a.bin"), False, "not a path relative to the base"),
    ((3, 0, 0, 0, "a.bin"), False, "not an absolute URI"),
], ids=["unknown-base", "root-like-base", "absolute-under-base", "relative-without-base"])
def test_bad_external_reference(tmp_path: Path, row: tuple[int, int, int, int, str], root_like: bool,
                                words: str) -> None:
    findings = certify_findings(forged(tmp_path, [row], root_like=root_like))
    found = assert_only(findings, "BLOB-004")
    assert words in found[0].message


# --- BLOB-005, BLOB-006 (SHOULD) ------------------------------------------------------------------------


def test_blobs_routed_against_the_declared_thresholds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that routes with other thresholds than the field declares."""
    root = tmp_path / "ds"
    with monkeypatch.context() as patched:
        patched.setattr(blob_write, "thresholds_of", lambda field, where=None: Thresholds(inline=10_000))
        ops.create(str(root), blob_table([payload(40, 1), payload(600, 2), payload(5000, 3)], **SMALL))
    findings = certify_findings(str(root))
    assert_clean(findings)
    found = assert_reported(findings, "BLOB-005")
    assert {f.requirement for f in blob_findings(findings)} == {"BLOB-005"}
    assert any("stored inline, but its size calls for packed" in f.message for f in found)
    assert any("stored inline, but its size calls for dedicated" in f.message for f in found)


def test_declared_thresholds_changed_after_writing(blob_dataset: Path) -> None:
    """The manifest's thresholds no longer match how the blobs were routed."""
    def lower(manifest: table_pb2.Manifest) -> None:
        field = next(f for f in manifest.fields if f.name == "blob")
        field.metadata[INLINE_SIZE_THRESHOLD_KEY] = b"10"

    latest = Dataset(str(blob_dataset)).latest_version()
    rewrite_manifest(str(blob_dataset), latest, lower)
    findings = certify_findings(str(blob_dataset), all_versions=False)
    assert_clean(findings)
    assert "stored inline, but its size calls for packed" in assert_reported(findings, "BLOB-005")[0].message


def test_pack_over_the_threshold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ds"
    declared = Thresholds(inline=100, dedicated=1000, pack_file=2500)
    with monkeypatch.context() as patched:
        patched.setattr(blob_write, "thresholds_of",
                        lambda field, where=None: Thresholds(declared.inline, declared.dedicated, 10**9))
        ops.create(str(root), blob_table([payload(900, i) for i in range(4)], **SMALL))
    findings = certify_findings(str(root))
    assert_clean(findings)
    found = assert_reported(findings, "BLOB-006")
    assert "pack sidecar of 4 blobs is 3600 bytes, above the pack threshold of 2500 bytes" in found[0].message
    assert {f.requirement for f in blob_findings(findings)} == {"BLOB-006"}


# --- BLOB-007 (SHOULD) ----------------------------------------------------------------------------------


def test_stray_orphan_sidecars(blob_dataset: Path) -> None:
    stem = new_data_file_name()[: -len(".lance")]
    (blob_dataset / "data" / stem).mkdir()
    (blob_dataset / "data" / stem / f"{reversed_blob_id(1)}.blob").write_bytes(b"orphan")
    (blob_dataset / "data" / "loose.blob").write_bytes(b"loose")
    findings = certify_findings(str(blob_dataset))
    assert_clean(findings)
    found = assert_reported(findings, "BLOB-007")
    assert {f.requirement for f in blob_findings(findings)} == {"BLOB-007"}
    assert any(f"no attached version references {stem}.lance" in f.message for f in found)
    assert any("not in a data file's sidecar directory" in f.message for f in found)


def test_stray_sidecar_in_a_live_sidecar_directory(blob_dataset: Path) -> None:
    """A sidecar id no descriptor references, next to a live data file (what pylance's cleanup never
    collects, spec/findings.md F-008)."""
    pack = sidecar(blob_dataset, 1)
    stray = pack.with_name(f"{reversed_blob_id(9)}.blob")
    stray.write_bytes(pack.read_bytes())
    findings = certify_findings(str(blob_dataset))
    assert_clean(findings)
    found = assert_reported(findings, "BLOB-007")
    assert len(found) == 1 and stray.name in found[0].message and "no descriptor of the live data file" in (
        found[0].message)


def test_sidecars_of_old_versions_are_not_orphans_until_their_manifest_goes(blob_dataset: Path) -> None:
    ops.overwrite(Dataset(str(blob_dataset)), blob_table([payload(600, 5)], **SMALL))
    assert blob_findings(certify_findings(str(blob_dataset))) == []  # still referenced by versions 1-2
    for entry in Dataset(str(blob_dataset)).version_entries()[:-1]:
        Path(entry.uri).unlink()  # drop the old versions but not their files, as a broken cleanup would
    found = assert_reported(certify_findings(str(blob_dataset)), "BLOB-007")
    assert len(found) == 1 and found[0].message.startswith("2 sidecar(s) orphaned")  # fragment 0's pack, dedicated


def test_a_stem_that_is_no_data_file_is_reported_once(blob_dataset: Path) -> None:
    stem = uuid.uuid4().hex
    for blob_id in (1, 2, 3):
        target = blob_dataset / "data" / stem / f"{reversed_blob_id(blob_id)}.blob"
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(b"x")
    found = assert_reported(certify_findings(str(blob_dataset)), "BLOB-007")
    assert len(found) == 1 and found[0].message.startswith("3 sidecar(s) orphaned")
