"""Zero false positives on LanceDB for Python: every shape of ``lancedb_shapes`` (written with LanceDB 0.40.0's
public API) certifies --all-versions with no MUST finding, and every finding it does get is a known
divergence (spec/divergences.toml). The reference reader reads what LanceDB reads. Damaged copies (a data
file deleted or cut short, a deletion file, an index file or a blob sidecar deleted) give exit 1 naming the
file."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

lancedb = pytest.importorskip("lancedb",
                              reason="LanceDB for Python is not installed (pip install 'lancespec[lancedb]')")

from lancedb_shapes import SHAPES, table_root  # noqa: E402  (after the skip: it imports lancedb)

from conformance.certify import certify  # noqa: E402
from lancespec.cli import main  # noqa: E402
from reference.read import read_snapshot  # noqa: E402
from reference.table import Dataset  # noqa: E402

#: Shapes the reference reader does not read row by row: legacy data files (it refuses them by name), blobs
#: (it reads their descriptors, LanceDB their bytes).
NOT_READ = {"storage_legacy", "blob_v2"}


@pytest.fixture
def built(lancedb_built: Callable[[str], Path]) -> Callable[[str], Path]:
    return lancedb_built


def open_table(folder: Path) -> Any:
    return lancedb.connect(str(folder)).open_table("t")


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_no_must_finding_and_every_finding_known(built: Callable[[str], Path], name: str) -> None:
    folder = built(name)
    report = certify(table_root(folder), all_versions=True)
    assert report.readable and not report.cannot_judge
    assert report.must_findings == []
    assert [f for f in report.findings if f.known is None] == []
    assert report.exit_code == 0
    table = open_table(folder)
    assert report.versions == sorted(v["version"] for v in table.list_versions())
    assert sorted(report.branch_versions) == sorted(table.branches.list())


@pytest.mark.parametrize("name", sorted(set(SHAPES) - NOT_READ))
def test_reference_reads_what_lancedb_reads(built: Callable[[str], Path], name: str) -> None:
    folder = built(name)
    dataset = Dataset.open(table_root(folder))
    mine = read_snapshot(dataset.snapshot(), dataset.storage).to_pylist()
    theirs = open_table(folder).to_arrow().to_pylist()

    def key(row: dict[str, Any]) -> tuple[int, str]:
        return row["id"], repr(sorted(row.items()))

    assert sorted(mine, key=key) == sorted(theirs, key=key)


def test_branches_are_counted(built: Callable[[str], Path], capsys: pytest.CaptureFixture[str]) -> None:
    """--all-versions says which versions of which branch it checked (LanceDB's own listing is the oracle)."""
    folder = built("branches")
    table = open_table(folder)
    assert main(["certify", table_root(folder), "--all-versions"]) == 0
    summary = capsys.readouterr().out.splitlines()[1]
    for name in table.branches.list():
        versions = [v["version"] for v in table.branches.checkout(name).list_versions()]
        assert f"{name} {min(versions)}-{max(versions)}" in summary, summary


# --- damaged copies -----------------------------------------------------------------------------------------


def _copy(built: Callable[[str], Path], name: str, tmp_path: Path) -> Path:
    copy = tmp_path / "db"
    shutil.copytree(built(name), copy)
    return copy


def _files(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.rglob(pattern) if p.is_file())


def _delete(path: Path) -> None:
    path.unlink()


def _cut(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(("name", "pattern", "damage", "requirement"), [
    ("basic", "data/*.lance", _delete, "BASE-004"),
    ("basic", "data/*.lance", _cut, "BASE-004"),
    ("basic", "_deletions/*", _delete, "DEL-001"),
    ("indices", "_indices/*/*", _delete, "IDX-001"),
    ("blob_v2", "data/*/*.blob", _delete, "BLOB-003"),
], ids=["data-file-deleted", "data-file-cut", "deletion-file-deleted", "index-file-deleted", "sidecar-deleted"])
def test_damaged_copy_fails_naming_the_file(built: Callable[[str], Path], tmp_path: Path, name: str, pattern: str,
                                            damage: Callable[[Path], None], requirement: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    copy = _copy(built, name, tmp_path)
    root = Path(table_root(copy))
    latest = Dataset.open(str(root)).snapshot()
    used = {f.uri for f in latest.files()}
    target = next(p for p in _files(root, pattern) if str(p) in used or p.suffix == ".blob")
    damage(target)
    assert main(["certify", str(root)]) == 1
    out = capsys.readouterr().out
    assert requirement in out and str(target) in out, out
