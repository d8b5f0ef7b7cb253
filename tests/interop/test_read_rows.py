"""The reference reader's rows against pylance's for shapes whose schema changed after the data was written:
columns are found by field id, not by name (a renamed column, a renamed nested field, a dropped nested
field, a cast column under a new id next to its old one, an all-null column no data file holds). A legacy
(0.x) data file is refused naming the file. Both readers read the same snapshot; neither one's output is
the other's expectation alone: the schema_evolution rows are also written out independently."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from conformance_kit import latest_version, rewrite_manifest

from conformance.shapes import Shape
from reference.errors import UnsupportedFeatureError
from reference.proto import file_pb2, table_pb2
from reference.read import read_snapshot
from reference.table import Dataset

READ_BY_BOTH = ["schema_evolution", "storage_2_0", "storage_2_1", "storage_2_2", "merge_update", "stable_row_ids",
                "compaction", "restore", "manifest_migrated", "indices", "blob_v2"]


def by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["id"], repr(sorted(r.items()))))


def reference_rows(shape: Shape) -> list[dict[str, Any]]:
    dataset = Dataset.open(shape.uri)
    snapshot = dataset.snapshot(**shape.open_kwargs)
    return by_id(read_snapshot(snapshot, dataset.storage).to_pylist())


@pytest.mark.parametrize("name", READ_BY_BOTH)
def test_reference_reads_what_pylance_reads(build_shape: Callable[[str], Shape], name: str) -> None:
    shape = build_shape(name)
    pylance = shape.open_lance()
    if name == "blob_v2":  # blob columns read as their stored descriptors, not as pylance's bytes
        mine = read_snapshot(Dataset.open(shape.uri).snapshot(), Dataset.open(shape.uri).storage)
        assert mine.column("id").to_pylist() == pylance.to_table(columns=["id"]).column("id").to_pylist()
        return
    assert reference_rows(shape) == by_id(pylance.to_table().to_pylist())


def test_renamed_dropped_and_cast_columns_read_by_field_id(build_shape: Callable[[str], Shape]) -> None:
    """The rows of schema_evolution, written out from what the builder did: ``name`` renamed ``label``,
    ``point.x`` renamed ``px`` and ``point.y`` dropped, ``value`` cast to float32, ``note`` added as nulls,
    ``double`` added then dropped; rows 0 and 1 appended again at the end."""
    shape = build_shape("schema_evolution")
    expected = [{"id": i, "label": f"row-{i}", "value": i * 0.5, "point": {"px": i}, "note": None}
                for i in [*range(6), 0, 1]]
    assert reference_rows(shape) == by_id(expected)


def test_legacy_data_files_are_refused_by_name(build_shape: Callable[[str], Shape]) -> None:
    shape = build_shape("storage_legacy")
    dataset = Dataset.open(shape.uri)
    snapshot = dataset.snapshot()
    with pytest.raises(UnsupportedFeatureError) as caught:
        read_snapshot(snapshot, dataset.storage)
    first_file = snapshot.fragments[0].files[0].uri
    assert caught.value.where == first_file
    assert "legacy (0.2) data file" in caught.value.message


def _tombstoned(tmp_path: Path) -> str:
    """Two fragments of three rows with ``id``, ``name`` and a list column ``tags`` (listed in DataFile.fields
    by its item's id). In fragment 0's data file the ids of ``g`` and of ``tags``' item are tombstoned (-2);
    a field ``extra`` is in the schema and in no data file."""
    uri = str(tmp_path / "ds")
    table = pa.table({"id": pa.array(range(6), pa.int64()), "g": pa.array(range(10, 16), pa.int64()),
                      "tags": pa.array([[f"t{i}"] for i in range(6)], pa.list_(pa.string()))})
    lance.write_dataset(table, uri, max_rows_per_file=3)
    ids = {f.name: f.id for f in Dataset.open(uri).snapshot().manifest.fields}

    def edit(m: table_pb2.Manifest) -> None:
        listed = m.fragments[0].files[0].fields
        listed[:] = [-2 if i in (ids["g"], ids["item"]) else i for i in listed]
        m.fields.add(name="extra", id=max(ids.values()) + 1, parent_id=-1, logical_type="int64",
                     type=file_pb2.Field.LEAF, nullable=True)

    rewrite_manifest(uri, latest_version(uri), edit)
    return uri


def test_tombstoned_columns_and_fields_without_a_data_file_read_as_nulls(tmp_path: Path) -> None:
    """Table Format spec "Data Files": a field id replaced by the tombstone -2 is ignored, and a field no data
    file holds reads as NULL. pylance 14.0.2 reads both as NULL; so does the reference, and both give the rows
    written out here."""
    uri = _tombstoned(tmp_path)
    expected = [{"id": i, "g": None if i < 3 else 10 + i, "tags": None if i < 3 else [f"t{i}"], "extra": None}
                for i in range(6)]
    assert by_id(lance.dataset(uri).to_table().to_pylist()) == expected
    dataset = Dataset.open(uri)
    assert by_id(read_snapshot(dataset.snapshot(), dataset.storage).to_pylist()) == expected
