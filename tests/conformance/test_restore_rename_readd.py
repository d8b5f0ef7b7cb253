"""Certify's reading of a restore, a rename and a re-add on datasets pylance 14.0.2 writes (spec/README.md
"Restore, rename, re-add"; issue 26). The sequence from the field (write, add_columns, rename, drop_columns,
compact, restore an earlier version) is read by pylance at every version and must certify --all-versions
with exit 0: the restore brings back field and fragment ids as they were in the restored version, under a
Restore transaction. A rename keeps the id. A dropped field added again is a new field: pylance gives it
the dropped field's id when no data file holds that id any more (F-040), which certify reports."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from conformance_kit import assert_clean, certify_findings

from lancespec.cli import main
from reference.table import Dataset

lance = pytest.importorskip("lance")
pytestmark = pytest.mark.interop


def _field_sequence(uri: str) -> None:
    """Versions 1-6: write (two fragments), add_columns x, rename x to y, drop y, compact (reserve + rewrite)."""
    table = pa.table({"id": pa.array(range(10), pa.int64()), "name": [f"n{i}" for i in range(10)]})
    lance.write_dataset(table, uri, max_rows_per_file=5)
    lance.dataset(uri).add_columns({"x": "id * 2"})
    lance.dataset(uri).alter_columns({"path": "x", "name": "y"})
    lance.dataset(uri).drop_columns(["y"])
    lance.dataset(uri).optimize.compact_files()


@pytest.mark.parametrize("restored", [1, 2, 3])
def test_a_restore_from_before_a_schema_change_certifies(tmp_path: Path, restored: int) -> None:
    """Restoring version 2 brings back field id 2 as 'x' (renamed 'y', then dropped) and fragments 0 and 1
    with the second data file add_columns gave them: the checks that compared an id with its last
    appearance reported MAN-016 and MAN-017 here."""
    uri = str(tmp_path / "ds")
    _field_sequence(uri)
    lance.dataset(uri).checkout_version(restored).restore()
    dataset = lance.dataset(uri)
    assert dataset.version == 7
    for version in range(1, 8):
        assert lance.dataset(uri, version=version).to_table().num_rows == 10
    latest, source = (Dataset.open(uri).snapshot(v).manifest for v in (7, restored))
    assert list(latest.fields) == list(source.fields) and list(latest.fragments) == list(source.fragments)
    assert_clean(certify_findings(uri))
    assert main(["certify", uri, "--all-versions"]) == 0


def test_a_rename_keeps_the_id(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _field_sequence(uri)
    renamed = [(f.id, f.name) for f in Dataset.open(uri).snapshot(3).manifest.fields]
    assert renamed == [(0, "id"), (1, "name"), (2, "y")]
    assert_clean(certify_findings(uri))


def test_a_restore_cleanup_removed_between_tagged_versions(tmp_path: Path) -> None:
    """Versions 1 and 3 are tagged; version 2 deletes fragment 1, version 4 restores version 1 (fragment 1
    back), version 5 appends; cleanup removes 2 and 4. Between the attached versions 3 and 5, fragment 1
    returns in an append: the commits that made the difference are gone, so the append is not taken for
    the one that brought the id back (the check that did reported MAN-017 here)."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": pa.array(range(6), pa.int64())}), uri, max_rows_per_file=3)
    lance.dataset(uri).tags.create("one", 1)
    lance.dataset(uri).delete("id >= 3")
    lance.dataset(uri).add_columns({"x": "id * 2"})
    lance.dataset(uri).tags.create("three", 3)
    lance.dataset(uri).checkout_version(1).restore()
    lance.write_dataset(pa.table({"id": pa.array([9], pa.int64())}), uri, mode="append")
    lance.dataset(uri).cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)
    assert [v["version"] for v in lance.dataset(uri).versions()] == [1, 3, 5]
    assert [f.id for f in Dataset.open(uri).snapshot(3).manifest.fragments] == [0]
    assert [f.id for f in Dataset.open(uri).snapshot(5).manifest.fragments] == [0, 1, 2]
    assert_clean(certify_findings(uri))


def test_an_overwrite_starts_the_schema_afresh(tmp_path: Path) -> None:
    """pylance numbers an overwrite's fields from 0, as at creation: after x (id 2) was added and dropped,
    an overwrite with id, name, y gives y id 2. No data file of the overwrite holds x, so no reuse."""
    uri = str(tmp_path / "ds")
    _field_sequence(uri)
    table = pa.table({"id": pa.array([1], pa.int64()), "name": ["a"], "y": pa.array([2.5], pa.float64())})
    lance.write_dataset(table, uri, mode="overwrite")
    fields = Dataset.open(uri).snapshot().manifest.fields
    assert [(f.id, f.name, f.logical_type) for f in fields] == [(0, "id", "int64"), (1, "name", "string"),
                                                               (2, "y", "double")]
    assert_clean(certify_findings(uri))
