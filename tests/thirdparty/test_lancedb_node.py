"""Zero false positives on LanceDB for Node: tests/thirdparty/node/write_shapes.mjs writes seven tables with
@lancedb/lancedb 0.39.0 (create, add, delete, update, add/rename/cast/drop columns, scalar, full-text and
vector indices, optimize, merge_insert, tags, checkout and restore, a restore from before a schema
change); each certifies --all-versions with no MUST finding and only known divergences, and the reference
reader reads what pylance reads from it. The database folder itself is answered with the tables it holds.
Skipped, with the reason, when node or the package is not installed (``npm install --prefix
tests/thirdparty/node``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conformance.certify import certify
from lancespec.cli import main
from reference.read import read_snapshot
from reference.table import Dataset

NODE_DIR = Path(__file__).resolve().parent / "node"
TABLES = ["basic", "schema_evolution", "indices", "optimize", "merge_insert", "restore_after_schema_change",
          "tags_versions"]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database folder write_shapes.mjs wrote (once per module)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    if not (NODE_DIR / "node_modules" / "@lancedb" / "lancedb").is_dir():
        pytest.skip("@lancedb/lancedb is not installed: run npm install --prefix tests/thirdparty/node")
    folder = tmp_path_factory.mktemp("lancedb-node") / "db"
    done = subprocess.run([node, str(NODE_DIR / "write_shapes.mjs"), str(folder)], capture_output=True, text=True,
                          timeout=600, check=False, cwd=NODE_DIR)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == TABLES
    return folder


@pytest.mark.parametrize("name", TABLES)
def test_no_must_finding_and_every_finding_known(database: Path, name: str) -> None:
    report = certify(str(database / f"{name}.lance"), all_versions=True)
    assert report.readable and not report.cannot_judge
    assert report.must_findings == []
    assert [f for f in report.findings if f.known is None] == []
    assert report.exit_code == 0 and report.versions


@pytest.mark.parametrize("name", TABLES)
def test_reference_reads_what_pylance_reads(database: Path, name: str) -> None:
    lance = pytest.importorskip("lance")
    uri = str(database / f"{name}.lance")
    dataset = Dataset.open(uri)
    mine = read_snapshot(dataset.snapshot(), dataset.storage).to_pylist()
    theirs = lance.dataset(uri).to_table().to_pylist()

    def key(row: dict[str, Any]) -> tuple[int, str]:
        return row["id"], repr(sorted(row.items()))

    assert sorted(mine, key=key) == sorted(theirs, key=key)


def test_the_database_folder_is_answered_with_its_tables(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", str(database)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "LanceDB database folder" in err
    assert all(f"{name}.lance" in err for name in TABLES)
