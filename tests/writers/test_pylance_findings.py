"""Divergences of pylance found by writer certification (spec/findings.md F-020..F-024), each reproduced
directly with pylance and expected: a test here fails, and its finding is revisited, the day pylance
changes."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

from reference.table import Dataset

pytestmark = pytest.mark.interop
B = lance.DatasetBasePath


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_f020_refused_operations_leave_files_behind(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    with pytest.raises(OSError, match="Duplicate base path ID 3"):
        lance.write_dataset(pa.table({"id": [1]}), str(root),
                            initial_bases=[B(str(tmp_path / "x"), name="a", id=3),
                                           B(str(tmp_path / "y"), name="b", id=3)])
    left = _files(root)
    assert any(f.startswith("data/") and f.endswith(".lance") for f in left)
    assert any(f.startswith("_transactions/") for f in left)
    assert not any(f.startswith("_versions/") for f in left)

    ds = lance.write_dataset(pa.table({"id": [1]}), str(tmp_path / "ds2"),
                             initial_bases=[B(str(tmp_path / "b1"), name="b1")])
    before = _files(tmp_path / "ds2")
    with pytest.raises(ValueError, match="Conflict detected"):
        ds.add_bases([B(str(tmp_path / "other"), name="b1")])
    added = sorted(set(_files(tmp_path / "ds2")) - set(before))
    assert len(added) == 1 and added[0].startswith("_transactions/1-")


def test_f021_duplicate_base_names_and_paths_accepted_at_create(tmp_path: Path) -> None:
    lance.write_dataset(pa.table({"id": [1]}), str(tmp_path / "names"),
                        initial_bases=[B(str(tmp_path / "x"), name="a"), B(str(tmp_path / "y"), name="a")])
    names = [b.name for b in Dataset(str(tmp_path / "names")).snapshot().bases]
    assert names == ["a", "a"]
    lance.write_dataset(pa.table({"id": [1]}), str(tmp_path / "paths"),
                        initial_bases=[B(str(tmp_path / "x"), name="a"), B(str(tmp_path / "x"), name="b")])
    paths = [b.path for b in Dataset(str(tmp_path / "paths")).snapshot().bases]
    assert paths == [str(tmp_path / "x")] * 2


def test_f022_empty_operations_commit_versions(tmp_path: Path) -> None:
    ds = lance.write_dataset(pa.table({"id": [1, 2]}), str(tmp_path / "ds"))
    ds.add_bases([])
    assert lance.dataset(str(tmp_path / "ds")).version == 2
    lance.dataset(str(tmp_path / "ds")).delete("id > 100")
    again = lance.dataset(str(tmp_path / "ds"))
    assert again.version == 3 and again.count_rows() == 2


def test_f023_existing_branch_is_an_internal_error(tmp_path: Path) -> None:
    ds = lance.write_dataset(pa.table({"id": [1]}), str(tmp_path / "ds"))
    ds.create_branch("b")
    with pytest.raises(OSError, match="internal error") as info:
        ds.create_branch("b")
    assert "already exists" not in str(info.value)
    with pytest.raises(ValueError, match="already exists"):  # tags say why
        ds.tags.create("t", 1)
        ds.tags.create("t", 1)


def test_f024_add_bases_with_a_used_id_replaces_the_base(tmp_path: Path) -> None:
    ds = lance.write_dataset(pa.table({"id": [1, 2]}), str(tmp_path / "ds"),
                             initial_bases=[B(str(tmp_path / "b1"), name="b1")], target_bases=["b1"])
    ds.add_bases([B(str(tmp_path / "q"), name="q", id=1)])
    latest = Dataset(str(tmp_path / "ds")).snapshot(strict=False)
    assert [(b.id, b.name, b.path) for b in latest.bases] == [(1, "q", str(tmp_path / "q"))]
    with pytest.raises((OSError, ValueError)):
        lance.dataset(str(tmp_path / "ds")).to_table()   # base 1's files are now looked up in q/
