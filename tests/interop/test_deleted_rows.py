"""DEL-007: a reader returns no row whose offset is in the fragment's deletion file, and every other row
(the Table Format's "Deletion Files": readers must filter them). Datasets written by pylance 14.0.2 with
an .arrow and a .bin deletion file are read by pylance and by the reference reader; the expected rows
come from the predicates deleted, not from either reader."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from reference.read import read_snapshot
from reference.table import Dataset

lance = pytest.importorskip("lance")
pytestmark = pytest.mark.interop


@pytest.mark.parametrize(("rows", "deleted"), [
    pytest.param(20, {3, 4, 17}, id="arrow"),
    pytest.param(6000, set(range(0, 6000, 1)) - {7, 5999}, id="bitmap"),
])
def test_readers_filter_deleted_rows(tmp_path: Path, rows: int, deleted: set[int]) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": pa.array(range(rows), pa.int64())}), uri)
    keep = sorted(set(range(rows)) - deleted)
    lance.dataset(uri).delete(f"NOT (id IN ({', '.join(map(str, keep))}))")
    snapshot = Dataset(uri).snapshot()
    extension = snapshot.fragments[0].deletion.file.path.rsplit(".", 1)[-1] if snapshot.fragments[0].deletion else ""
    assert extension == ("arrow" if len(deleted) < 5000 else "bin")
    assert sorted(lance.dataset(uri).to_table().column("id").to_pylist()) == keep
    assert read_snapshot(snapshot, Dataset(uri).storage).column("id").to_pylist() == keep
