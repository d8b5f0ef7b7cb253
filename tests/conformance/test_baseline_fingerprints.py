"""Baselines set aside findings, not requirements (``conformance.baseline``): one entry per fact, the same
across runs, across the versions that show it and across copies of the dataset, unchanged when a message is
reworded; a new breach of a requirement the baseline holds still fails."""

from __future__ import annotations

import dataclasses
import shutil
import tomllib
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.baseline import fingerprint, location
from conformance.certify import certify
from conformance.findings import Finding
from lancespec.cli import main
from reference import ops
from reference.table import Dataset


@pytest.fixture
def three_versions(tmp_path: Path) -> str:
    """Version 1 writes two data files (two rows each); versions 2 and 3 append one file each, so both
    files of version 1 are referenced by versions 1 to 3."""
    uri = str(tmp_path / "ds")
    ops.create(uri, pa.table({"a": list(range(4))}), max_rows_per_file=2)
    for _ in range(2):
        ops.append(Dataset.open(uri), pa.table({"a": [9]}))
    return uri


def _first_version_files(uri: str) -> list[Path]:
    snapshot = Dataset.open(uri).snapshot(1)
    files = [Path(f.uri) for fragment in snapshot.fragments for f in fragment.files if f.uri is not None]
    assert len(files) == 2 and all(f.exists() for f in files)
    return files


def _entries(baseline: Path) -> list[str]:
    return [e["fingerprint"] for e in tomllib.loads(baseline.read_text()).get("finding", [])]


def test_a_second_missing_data_file_fails_after_baselining_the_first(
        three_versions: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _first_version_files(three_versions)
    first.unlink()
    baseline = tmp_path / "baseline.toml"
    assert main(["certify", three_versions, "--all-versions", "--write-baseline", str(baseline)]) == 1
    err = capsys.readouterr().err
    assert f"wrote 1 baseline entry to {baseline}\n" in err  # one line saying how many and where
    [entry] = _entries(baseline)
    assert entry.startswith("BASE-004/data_file_missing@data/") and entry.endswith(f"{first.name}#fragment 0")

    assert main(["certify", three_versions, "--all-versions", "--baseline", str(baseline)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("CONFORMANT") and f"baseline {baseline}: 3 finding(s) by 1 of 1 entries" in out

    second.unlink()  # a new breach of the requirement the baseline holds
    assert main(["certify", three_versions, "--all-versions", "--baseline", str(baseline)]) == 1
    out = capsys.readouterr().out
    counted = out.split("set aside (not counted):")[0]
    assert out.startswith("NOT CONFORMANT") and "BASE-004" in counted and second.name in counted
    assert first.name not in counted  # the baselined one stays set aside


def test_one_fact_one_fingerprint_across_versions_runs_and_copies(three_versions: str, tmp_path: Path) -> None:
    first, _ = _first_version_files(three_versions)
    first.unlink()
    runs = [certify(three_versions, all_versions=True) for _ in range(2)]
    missing = [f for f in runs[0].findings if f.code == "data_file_missing"]
    assert sorted(f.version for f in missing) == [1, 2, 3]  # seen in three versions ...
    assert len({fingerprint(f, runs[0].uri) for f in missing}) == 1  # ... one fact
    assert [fingerprint(f, runs[0].uri) for f in runs[0].findings] == \
        [fingerprint(f, runs[1].uri) for f in runs[1].findings]

    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(three_versions, copy)
    moved = certify(str(copy), all_versions=True)
    assert {fingerprint(f, moved.uri) for f in moved.findings} == {fingerprint(f, runs[0].uri) for f in missing}
    baseline = tmp_path / "b.toml"
    assert main(["certify", three_versions, "--all-versions", "--write-baseline", str(baseline)]) == 1
    assert main(["certify", str(copy), "--all-versions", "--baseline", str(baseline)]) == 0


def test_rewording_a_message_keeps_the_fingerprint() -> None:
    finding = Finding("BASE-004", "MUST", 3, "/data/ds/data/x.lance", "data file x.lance does not exist",
                      detail="fragment 2", code="data_file_missing")
    reworded = dataclasses.replace(finding, message="the data file x.lance is gone", version=7)
    assert fingerprint(finding, "/data/ds") == fingerprint(reworded, "/data/ds") \
        == "BASE-004/data_file_missing@data/x.lance#fragment 2"
    assert fingerprint(dataclasses.replace(finding, code="data_file_size_mismatch"), "/data/ds") \
        != fingerprint(finding, "/data/ds")  # another kind of breach of the same file


@pytest.mark.parametrize(("path", "detail", "version", "expected"), [
    ("/d/ds/_versions/18446744073709551612.manifest", "fragment 4", 3, "MAN-019@_versions/*.manifest#fragment 4"),
    ("/d/ds/_versions/18446744073709551612.manifest", None, 3, "MAN-019@_versions/18446744073709551612.manifest"),
    ("/d/ds/tree/feat/_versions/2.manifest", "base 0", 2, "MAN-019@tree/feat/_versions/*.manifest#base 0"),
    ("/d/src/data/x.lance", None, 1, "MAN-019@../src/data/x.lance"),
    ("/d/ds", None, None, "MAN-019@."),
    ("s3://other/ds/data/x.lance", None, 1, "MAN-019@s3://other/ds/data/x.lance"),
])
def test_locations_are_relative_to_the_root(path: str, detail: str | None, version: int | None,
                                            expected: str) -> None:
    """An element of a version's manifest (a detail) is the same in every version; the manifest as a whole
    is a fact of its version; places beside the root are relative to it, other stores absolute."""
    assert fingerprint(Finding("MAN-019", "MUST", version, path, "m", detail=detail), "/d/ds") == expected


def test_object_store_locations() -> None:
    assert location("s3://b/x/ds/data/y.lance", "s3://b/x/ds") == "data/y.lance"
    assert location("s3://b/x/src/data/y.lance", "s3://b/x/ds/") == "../src/data/y.lance"
    assert location("file:///x/ds/data/y.lance", "/x/ds") == "data/y.lance"


def test_a_version_1_baseline_is_refused_in_one_line(three_versions: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.toml"
    old.write_text('format = "lancespec.baseline/1"\n[[ignore]]\nid = "BASE-004"\nreason = "r"\n')
    with pytest.raises(SystemExit) as stopped:
        main(["certify", three_versions, "--baseline", str(old)])
    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "set aside whole requirements" in err and f"--write-baseline {old}" in err


@pytest.mark.interop
def test_every_divergence_entry_matches_a_finding_of_its_dataset(tmp_path: Path) -> None:
    """Each entry of spec/divergences.toml claims, by code, findings certify really makes on the pylance
    datasets that show the divergence (F-034, LanceDB's _mem_wal/, is shown by tests/thirdparty)."""
    from conformance.divergences import load_divergences
    from conformance.shapes import DIVERGENCE_SHAPES

    reports = [certify(build(tmp_path / name).uri, all_versions=True) for name, build in DIVERGENCE_SHAPES.items()]
    unmatched = [d for d in load_divergences() if d.finding != "F-034"
                 and not any(d.matches(f, r.uri) for r in reports for f in r.findings)]
    assert unmatched == []
    assert all(f.known is not None for r in reports for f in r.findings if f.severity == "MUST")
