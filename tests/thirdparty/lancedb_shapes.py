"""Datasets written by LanceDB 0.40.0 for Python (its own Lance core), through its public API only.

Each builder ``(folder) -> LanceTable`` opens a LanceDB database in an empty ``folder`` and writes one
table; the table's root (``{folder}/{name}.lance``) is what certify judges. The shapes follow issue 14's
list: every schema change, every index kind LanceDB builds on a few hundred rows, optimize and compaction,
merge_insert, update, delete, stable row ids, tags, versions (checkout, restore), V1 and V2 manifest names,
data storage versions 2.0/2.1/2.2 and legacy, branches, a shallow clone, blob v2, the LSM (MemWAL) write path
and a materialized view.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import lancedb
import pyarrow as pa
from lancedb.index import FTS, Bitmap, BTree, HnswSq, IvfFlat, IvfPq, LabelList

DIM = 8


def rows(start: int, count: int) -> pa.Table:
    """Deterministic rows ``id = start ..`` with text, a category, a label list, a float and a vector."""
    ids = range(start, start + count)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "text": pa.array([f"row {i} says word{i % 7}" for i in ids]),
        "cat": pa.array([f"c{i % 4}" for i in ids]),
        "tags": pa.array([[f"t{i % 3}", f"u{i % 5}"] for i in ids], pa.list_(pa.string())),
        "value": pa.array([i * 0.5 for i in ids], pa.float64()),
        "vec": pa.array([[((i * 7 + j * 3) % 11) / 11 for j in range(DIM)] for i in ids], pa.list_(pa.float32(), DIM)),
    })


def _db(folder: Path) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    return lancedb.connect(str(folder))


def basic(folder: Path) -> Any:
    """Create, add, delete, update: V2 manifest names, the default data storage version."""
    table = _db(folder).create_table("t", rows(0, 10))
    table.add(rows(10, 5))
    table.delete("id = 3")
    table.update(where="id = 4", values={"text": "four"})
    return table


def schema_evolution(folder: Path) -> Any:
    """Add a computed column, add an all-null column, rename a column and a nested field, cast a column,
    make a column nullable, drop a column and a nested field, then add rows under the final schema."""
    data = rows(0, 10).append_column("point", pa.array([{"x": i, "y": -i} for i in range(10)]))
    table = _db(folder).create_table("t", data)
    table.add_columns({"double": "id * 2"})
    table.add_columns(pa.field("note", pa.string()))
    table.alter_columns({"path": "text", "rename": "label"})
    table.alter_columns({"path": "point.x", "rename": "px"})
    table.alter_columns({"path": "value", "data_type": pa.float32()})
    table.alter_columns({"path": "double", "nullable": True})
    table.drop_columns(["cat"])
    table.drop_columns(["point.y"])
    table.add(table.to_arrow().slice(0, 2))
    return table


def restore_after_schema_change(folder: Path) -> Any:
    """The sequence from the field (issue 26): add a computed column (a second data file per fragment, same
    fragment ids), rename it, drop it, optimize (compaction), then restore version 3, where the column was
    added: its field id and fragments 0 and 1 come back as they were."""
    columns = ["id", "text", "value"]
    table = _db(folder).create_table("t", rows(0, 10).select(columns))
    table.add(rows(10, 5).select(columns))
    table.add_columns({"double": "id * 2"})
    table.alter_columns({"path": "double", "rename": "twice"})
    table.drop_columns(["twice"])
    table.optimize()
    table.restore(3)
    return table


def indices(folder: Path) -> Any:
    """BTree, Bitmap, LabelList, FTS, IVF_PQ, IVF_FLAT and IVF_HNSW_SQ on 300 rows, then rows no index
    covers and ``optimize`` (which updates the indices)."""
    table = _db(folder).create_table("t", rows(0, 300))
    table.create_index("id", config=BTree())
    table.create_index("cat", config=Bitmap())
    table.create_index("tags", config=LabelList())
    table.create_index("text", config=FTS())
    table.create_index("vec", config=IvfPq(num_partitions=2, num_sub_vectors=2))
    table.create_index("vec", config=IvfFlat(num_partitions=2), name="vec_flat")
    table.create_index("vec", config=HnswSq(num_partitions=2), name="vec_hnsw")
    table.add(rows(300, 10))
    table.optimize()
    return table


def optimize_cleanup(folder: Path) -> Any:
    """Six one-fragment writes and a delete, then ``optimize`` with cleanup of every old version: one
    compacted fragment, only the latest version left."""
    table = _db(folder).create_table("t", rows(0, 5))
    for i in range(5):
        table.add(rows(5 + 5 * i, 5))
    table.delete("id % 3 = 0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # LanceDB warns that a 0 cleanup removes every version
        table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    return table


def compaction(folder: Path) -> Any:
    """Five one-fragment writes, a BTree index and a delete, then ``optimize`` keeping every version:
    compaction and index remapping with the old files still referenced by old versions."""
    table = _db(folder).create_table("t", rows(0, 5))
    for i in range(4):
        table.add(rows(5 + 5 * i, 5))
    table.create_index("id", config=BTree())
    table.delete("id % 3 = 0")
    table.optimize()
    return table


def merge_insert(folder: Path) -> Any:
    """Upsert, insert-only, an upsert deleting what the source lacks, ``update`` with SQL."""
    table = _db(folder).create_table("t", rows(0, 10))
    table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(rows(5, 10))
    table.merge_insert("id").when_not_matched_insert_all().execute(rows(12, 6))
    table.merge_insert("id").when_matched_update_all().when_not_matched_by_source_delete().execute(rows(0, 15))
    table.update(where="id < 3", values={"value": 9.0})
    table.update(values_sql={"value": "value + 1"})
    return table


def stable_row_ids(folder: Path) -> Any:
    """Stable row ids (``new_table_enable_stable_row_ids``): add, update (rows move to a new fragment under
    their ids), delete, upsert, then compaction."""
    table = _db(folder).create_table("t", rows(0, 10), storage_options={"new_table_enable_stable_row_ids": "true"})
    table.add(rows(10, 5))
    table.update(where="id < 3", values={"value": 9.0})
    table.delete("id = 7")
    table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(rows(8, 4))
    table.optimize()
    return table


def tags_versions(folder: Path) -> Any:
    """Tags created, moved and deleted; ``checkout`` of an old version and back; ``restore`` of version 2
    (a new version holding version 2's fragments)."""
    table = _db(folder).create_table("t", rows(0, 5))
    table.add(rows(5, 5))
    table.add(rows(10, 5))
    table.tags.create("first", 1)
    table.tags.create("second", 2)
    table.tags.update("first", 3)
    table.checkout(1)
    table.checkout_latest()
    table.add(rows(50, 2))
    table.restore(2)
    table.tags.delete("second")
    return table


def manifest_v1(folder: Path) -> Any:
    """V1 manifest names (``new_table_enable_v2_manifest_paths = false``), three versions."""
    table = _db(folder).create_table("t", rows(0, 5),
                                     storage_options={"new_table_enable_v2_manifest_paths": "false"})
    table.add(rows(5, 5))
    table.delete("id = 2")
    return table


def _storage_version(version: str) -> Callable[[Path], Any]:
    def build(folder: Path) -> Any:
        """Data storage version ``version``: add, delete, update, add a column, drop one."""
        table = _db(folder).create_table("t", rows(0, 10), data_storage_version=version)
        table.add(rows(10, 5))
        table.delete("id = 1")
        table.update(where="id = 2", values={"value": 1.0})
        table.add_columns({"double": "id + 1"})
        table.drop_columns(["cat"])
        return table

    return build


def branches(folder: Path) -> Any:
    """A branch of main with its own writes, a branch of that branch (add, delete), main moving on."""
    table = _db(folder).create_table("t", rows(0, 5))
    table.add(rows(5, 5))
    feature = table.branches.create("feat")
    feature.add(rows(100, 3))
    nested = table.branches.create("feat2", from_ref="feat")
    nested.add(rows(200, 3))
    nested.delete("id = 1")
    table.add(rows(10, 2))
    return table


def shallow_clone(folder: Path) -> Any:
    """``clone_table`` (shallow) of a tagged version, then an add and a delete on the clone."""
    db = _db(folder)
    source = db.create_table("source", rows(0, 5))
    source.add(rows(5, 5))
    source.tags.create("release", 2)
    clone = db.clone_table("t", str(folder / "source.lance"), source_tag="release")
    clone.add(rows(100, 2))
    clone.delete("id = 3")
    return clone


def blob_v2(folder: Path) -> Any:
    """Blob v2 on data storage version 2.2: an inline, a packed (> 64 KiB) and a dedicated (> 4 MiB) blob,
    then an add of inline ones."""
    values = [b"inline", bytes([7]) * (70 * 1024), bytes([9]) * (4 * 1024 * 1024 + 1024)]
    table = _db(folder).create_table(
        "t", pa.table({"id": pa.array(range(3), pa.int64()), "blob": lance.blob_array(values)}),
        data_storage_version="2.2")
    table.add(pa.table({"id": pa.array([10, 11], pa.int64()), "blob": lance.blob_array([b"a", b"bb"])}))
    return table


def lsm_merge_insert(folder: Path) -> Any:
    """The LSM write path (``set_lsm_write_spec``, Lance's MemWAL): an unenforced primary key on a non-null
    ``id``, an unsharded spec, then upserts that go to the write-ahead log under ``_mem_wal/`` (F-034) and a
    system index ``__lance_mem_wal`` recording the region."""
    schema = rows(0, 1).schema.set(0, pa.field("id", pa.int64(), nullable=False))
    table = _db(folder).create_table("t", rows(0, 10).cast(schema))
    table.set_unenforced_primary_key("id")
    table.set_lsm_write_spec(lancedb.LsmWriteSpec.unsharded())
    table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(rows(5, 10).cast(schema))
    return table


def materialized_view(folder: Path) -> Any:
    """A materialized view over a table with stable row ids: the view is a table of its own, created empty
    with the stable row ids flag (no fragment yet) and then filled; the source moves on."""
    db = _db(folder)
    source = db.create_table("source", rows(0, 20), storage_options={"new_table_enable_stable_row_ids": "true"})
    view = db.create_materialized_view("t", "source", select=["id", "value"], where="id > 5")
    source.add(rows(20, 5))
    source.delete("id = 7")
    return view


SHAPES: dict[str, Callable[[Path], Any]] = {
    "basic": basic,
    "schema_evolution": schema_evolution,
    "restore_after_schema_change": restore_after_schema_change,
    "indices": indices,
    "optimize_cleanup": optimize_cleanup,
    "compaction": compaction,
    "merge_insert": merge_insert,
    "stable_row_ids": stable_row_ids,
    "tags_versions": tags_versions,
    "manifest_v1": manifest_v1,
    **{f"storage_{v.replace('.', '_')}": _storage_version(v) for v in ("2.0", "2.1", "2.2", "legacy")},
    "branches": branches,
    "shallow_clone": shallow_clone,
    "blob_v2": blob_v2,
    "lsm_merge_insert": lsm_merge_insert,
    "materialized_view": materialized_view,
}


def table_root(folder: Path) -> str:
    """The root of the table every builder leaves as ``t``."""
    return str(folder / "t.lance")
