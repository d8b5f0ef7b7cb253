"""Negative tests of the blob checks (``blobs.descriptors``, ``blobs.routing``, ``blobs.orphans``): build a
clean blob v2 dataset with the reference writer, break exactly one thing, and assert that certify reports
the requirement it breaches and, for a MUST, no unrelated MUST.

Ways of breaking: sidecar files (delete, truncate, stray orphans), the thresholds the manifest declares,
a writer whose routing is wrong (the reference writer with its thresholds patched while it writes), and
forged descriptors: a data file whose blob column is written as a plain packed struct ``<kind, position,
size, blob_id, blob_uri>``, which the file codec stores with the same page layout pylance reads as blob
v2 descriptors, so any descriptor value can be stored (``conformance.corpus.breach_blobs``).
The breaches that are cases of the golden corpus (``breach-blob-*``) are tested there, by
tests/fixtures/test_breach_cases.py; what stays here is what those cases do not show.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import lance
import pytest
from conformance_kit import assert_clean, assert_only, assert_reported, certify_findings

from conformance.corpus.breach_blobs import SMALL, blob_table, forged, payload, sidecar
from conformance.corpus.breach_blobs import blob_dataset as build_blob_dataset
from conformance.findings import Finding
from reference import ops
from reference.blob import read as blob_read
from reference.blob import write as blob_write
from reference.blob.routing import Thresholds
from reference.layout import new_data_file_name, reversed_blob_id
from reference.table import Dataset


def blob_findings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.requirement.startswith("BLOB")]


@pytest.fixture
def blob_dataset(tmp_path: Path) -> Path:
    """``breach_blobs.blob_dataset``: two fragments, inline, two packed, dedicated; external whole file,
    external range, empty, null; then a delete. Certified clean of MUST findings and of every blob finding."""
    root = build_blob_dataset(tmp_path)
    findings = certify_findings(str(root))
    assert_clean(findings)
    assert blob_findings(findings) == []
    return root


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


def test_managed_kind_without_the_managed_flag(tmp_path: Path) -> None:
    assert_only(certify_findings(forged(tmp_path, [(4, 0, 3, 0, "_blobs/x.blob")])), "BLOB-001")


@pytest.mark.parametrize(("row", "root_like", "words"), [
    ((3, 0, 0, 1, "a.bin"), True, "a dataset root"),
], ids=["root-like-base"])  # the other bad references are breach cases of the corpus (breach-blob-004-*)
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


# --- the column screen (DescriptorColumn.exact) against row by row ------------------------------------------


def _random_descriptors(rng: random.Random, extreme: bool) -> list[tuple[int, int, int, int, str]]:
    """Rows of every kind: inline ranges inside and past the data file, packed and dedicated ones in sidecars
    1 and 2 (present, of random sizes), 3 and 2^32 - 1 (absent) and 0 (no sidecar id), externals under the
    base and outside, unknown kinds; with ``extreme``, some values a 64-bit sum cannot hold."""
    rows = []
    for _ in range(80):
        kind = rng.choice([0, 0, 1, 1, 1, 2, 3, 5])
        position = rng.choice([0, rng.randrange(500), rng.randrange(5000)])
        size = rng.choice([0, 1, rng.randrange(1, 2000), 6000])
        if extreme and rng.random() < 0.1:
            position = rng.choice([2**62, 2**63, 2**64 - 1])
        blob_id = rng.choice([0, 1, 2, 2, 3, 2**32 - 1]) if kind in (1, 2) else rng.choice([0, 1]) if kind == 3 else 0
        uri = ("a.bin" if blob_id else rng.choice(["/nowhere/a.bin", "a.bin"])) if kind == 3 else ""
        rows.append((kind, position, size, blob_id, uri))
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_the_column_screen_judges_as_row_by_row_does(tmp_path: Path, seed: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The blob checks screen a descriptor column with numpy and look at single rows only where the screen
    finds something to say. Judged row by row instead (no column exact, the code every row took before),
    random descriptors get the same blob findings, in the same order (seeds 3-5 hold values past 2^62,
    which make their column inexact either way)."""
    rng = random.Random(seed)
    uri = forged(tmp_path, _random_descriptors(rng, extreme=seed >= 3), thresholds=SMALL)
    root = Path(uri)
    for blob_id in (1, 2):
        path = sidecar(root, blob_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload(rng.randrange(3000), blob_id))
    screened = blob_findings(certify_findings(uri))
    monkeypatch.setattr(blob_read, "EXACT_BELOW", 0)  # no value is below 0: every column judged row by row
    row_by_row = blob_findings(certify_findings(uri))
    assert screened == row_by_row
    assert {f.requirement for f in screened} == {f"BLOB-00{n}" for n in range(1, 7)}
