"""Builders for every dataset shape lancespec must read, written by the real writer (pylance 14.0.2).

Each builder is a function ``(workdir) -> Shape``: it writes one small, deterministic dataset (a few rows,
a few fragments; only file names and UUIDs are random) into ``workdir`` and describes what it wrote.
``SHAPES`` maps every shape name to its builder. The pylance calls are those of docs/lance-format.md §16;
which part of the format each shape exercises is said in the builder's docstring.

A Shape names the dataset root to open (``uri``), which snapshot of it to look at (``open_kwargs``, the
keyword arguments of ``lancespec.reference.table.Dataset.snapshot``: ``version``, ``tag`` or
``branch``), the other directories the builder wrote into (``extra_roots``: bases, clone sources), and,
when one exists, a closed set of directories (``data_file_roots``) whose ``*.lance`` files outside
``_indices/`` are exactly the data files of that snapshot: a filesystem oracle independent of any
manifest.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa

from lancespec.reference.layout import branch_root

__all__ = ["DIVERGENCE_SHAPES", "SHAPES", "Shape", "build", "rows"]


@dataclass(frozen=True)
class Shape:
    """One dataset written by pylance, and how to look at it.

    ``uri``: the dataset root to open (for a branch: the main root; ``open_kwargs`` names the branch).
    ``extra_roots``: every other directory the builder wrote into (bases, clone sources).
    ``open_kwargs``: which snapshot to look at, as ``Dataset.snapshot`` keywords (``{}`` = latest of main).
    ``data_file_roots``: directories whose ``*.lance`` files (outside ``_indices/``) are exactly the
    selected snapshot's data files; empty when no such closed set exists (e.g. files of later versions
    or of other branches lie beside them).
    """

    name: str
    uri: str
    description: str
    extra_roots: tuple[str, ...] = ()
    open_kwargs: Mapping[str, int | str] = field(default_factory=dict, hash=False)
    data_file_roots: tuple[str, ...] = ()

    @property
    def roots(self) -> tuple[str, ...]:
        """``uri`` followed by ``extra_roots``."""
        return (self.uri, *self.extra_roots)

    @property
    def branch(self) -> str | None:
        value = self.open_kwargs.get("branch")
        return str(value) if value is not None else None

    @property
    def lance_uri(self) -> str:
        """The URI pylance opens for the selected snapshot: a branch is opened at ``{root}/tree/{name}``."""
        return f"{self.uri}/tree/{self.branch}" if self.branch else self.uri

    @property
    def lance_version(self) -> int | str | None:
        """The ``version=`` argument of ``lance.dataset`` for the selected snapshot (a tag is a string)."""
        if "tag" in self.open_kwargs:
            return str(self.open_kwargs["tag"])
        version = self.open_kwargs.get("version")
        return int(version) if version is not None else None

    def open_lance(self) -> Any:
        """The pylance ``LanceDataset`` at the selected snapshot."""
        return lance.dataset(self.lance_uri, version=self.lance_version)


def rows(start: int, count: int) -> pa.Table:
    """Deterministic rows ``id = start .. start+count-1`` with a string and a float column."""
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"row-{i}" for i in ids], pa.string()),
            "value": pa.array([i * 0.5 for i in ids], pa.float64()),
        }
    )



def expected_rows(ids: Iterable[int]) -> list[dict[str, Any]]:
    """The rows ``rows`` makes for these ids, in this order, as plain dicts: written out once more, not
    derived from the Arrow table, so a reader's output compares against an independent statement."""
    return [{"id": i, "name": f"row-{i}", "value": i * 0.5} for i in ids]

def _fresh(workdir: Path) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    if any(workdir.iterdir()):
        raise FileExistsError(f"{workdir}: a shape is built into an empty directory")
    return workdir


def _append(uri: str | Path, table: pa.Table, **kwargs: Any) -> Any:
    return lance.write_dataset(table, str(uri), mode="append", **kwargs)


# --- single root ---------------------------------------------------------------------------------------


def single_base(workdir: Path) -> Shape:
    """One root, no bases: create (two fragments) then append (one fragment); every file under ``data/``."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 6), str(root), max_rows_per_file=3)
    _append(root, rows(6, 4))
    return Shape("single_base", str(root), "two versions, three fragments, all in {root}/data",
                 data_file_roots=(str(root),))


def manifest_v1(workdir: Path) -> Shape:
    """V1 manifest names (``_versions/{n}.manifest``, ``enable_v2_manifest_paths=False``): three versions
    (create, append, delete)."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 5), str(root), enable_v2_manifest_paths=False)
    _append(root, rows(5, 5))
    lance.dataset(str(root)).delete("id = 7")
    return Shape("manifest_v1", str(root), "V1 manifest names, three versions", data_file_roots=(str(root),))


def manifest_v2(workdir: Path) -> Shape:
    """V2 manifest names (``_versions/{u64::MAX - n:020}.manifest``, the default): three versions."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 5), str(root))
    _append(root, rows(5, 5))
    _append(root, rows(10, 2))
    return Shape("manifest_v2", str(root), "V2 manifest names, three versions", data_file_roots=(str(root),))


# --- deletion files -------------------------------------------------------------------------------------


def deletions_arrow(workdir: Path) -> Shape:
    """Deletion files below 5000 rows (``.arrow``, ARROW_ARRAY): cumulative deletes in fragment 0 (two
    deletes, the second file replaces the first), one row in fragment 1, and fragment 2 deleted entirely
    (dropped from the manifest, no deletion file)."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 30), str(root), max_rows_per_file=10)
    ds = lance.dataset(str(root))
    ds.delete("id = 1 OR id = 3")
    ds = lance.dataset(str(root))
    ds.delete("id = 8 OR id = 12")
    lance.dataset(str(root)).delete("id >= 20")
    # No data_file_roots: the dropped fragment's data file stays on disk, unreferenced.
    return Shape("deletions_arrow", str(root), ".arrow deletion files, one fragment fully deleted")


def deletions_bitmap(workdir: Path) -> Shape:
    """A deletion file of at least 5000 rows (``.bin``, a portable roaring bitmap): a 6000-row fragment
    with 5000 rows deleted, beside a 10-row fragment with one deleted row (``.arrow``)."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 6000), str(root))
    _append(root, rows(6000, 10))
    lance.dataset(str(root)).delete("id < 5000 OR id = 6005")
    return Shape("deletions_bitmap", str(root), ".bin deletion file (5000 rows) beside an .arrow one",
                 data_file_roots=(str(root),))


# --- bases --------------------------------------------------------------------------------------------


def multi_base_nonroot(workdir: Path) -> Shape:
    """Two non-root bases registered at create (``initial_bases``): data files round-robin over them
    (``target_bases``, ``{base}/{stem}.lance``), a later append to the root (``{root}/data``), an append
    to one base only, and a delete whose deletion file goes to the root although the data lives in a base."""
    work = _fresh(workdir)
    root, b1, b2 = work / "ds", work / "base_one", work / "base_two"
    lance.write_dataset(
        rows(0, 8), str(root), max_rows_per_file=2,
        initial_bases=[
            lance.DatasetBasePath(str(b1), name="one"),
            lance.DatasetBasePath(str(b2), name="two"),
        ],
        target_bases=["one", "two"],
    )
    _append(root, rows(8, 3))
    _append(root, rows(11, 2), target_bases=["two"])
    lance.dataset(str(root)).delete("id = 1")
    return Shape("multi_base_nonroot", str(root), "two non-root bases plus the root",
                 extra_roots=(str(b1), str(b2)), data_file_roots=(str(root), str(b1), str(b2)))


def multi_base_root(workdir: Path) -> Shape:
    """A base with ``is_dataset_root=True`` (files under ``{base}/data/``) and a non-root base (files
    directly under it), files in each and in the root."""
    work = _fresh(workdir)
    root, rootlike, plain = work / "ds", work / "rootlike", work / "plain"
    lance.write_dataset(
        rows(0, 6), str(root), max_rows_per_file=2,
        initial_bases=[
            lance.DatasetBasePath(str(rootlike), name="rootlike", is_dataset_root=True),
            lance.DatasetBasePath(str(plain), name="plain"),
        ],
        target_bases=["rootlike", "plain"],
    )
    _append(root, rows(6, 2))
    lance.dataset(str(root)).delete("id = 0")
    return Shape("multi_base_root", str(root), "a dataset-root base and a non-root base",
                 extra_roots=(str(rootlike), str(plain)),
                 data_file_roots=(str(root), str(rootlike), str(plain)))


# --- refs -----------------------------------------------------------------------------------------------


def tags(workdir: Path) -> Shape:
    """Tags on several versions, one of them moved with ``tags.update``; the snapshot looked at is the
    moved tag's (not the latest) version."""
    root = _fresh(workdir) / "ds"
    ds = lance.write_dataset(rows(0, 4), str(root))
    ds = _append(root, rows(4, 4))
    ds = _append(root, rows(8, 4))
    ds = _append(root, rows(12, 4))
    ds.tags.create("first", 1)
    ds.tags.create("second", 2)
    ds.tags.create("moving", 1)
    ds.tags.update("moving", 3)
    return Shape("tags", str(root), "four versions; tags first->1, second->2, moving 1->3",
                 open_kwargs={"tag": "moving"})


def branches(workdir: Path) -> Shape:
    """Branches: ``team/x`` forked from main v2 (ref file ``team%2Fx.json``, root ``tree/team/x``) with its
    own append, and ``team/x/sub`` forked from ``team/x`` (its root nested inside ``tree/team/x``) with
    its own append; main moves on after the fork; a tag names a version of ``team/x``. The snapshot
    looked at is the latest of ``team/x/sub``: files from main (base 0), from ``team/x`` (base 1) and
    its own root."""
    root = _fresh(workdir) / "ds"
    ds = lance.write_dataset(rows(0, 4), str(root))
    ds = _append(root, rows(4, 4))
    ds.create_branch("team/x")
    feat = _append(f"{root}/tree/team/x", rows(100, 3))
    feat.create_branch("team/x/sub")
    _append(f"{root}/tree/team/x/sub", rows(200, 2))
    _append(root, rows(8, 4))
    main = lance.dataset(str(root))
    main.tags.create("on-branch", ("team/x", 3))
    main.tags.create("on-main", 2)
    return Shape("branches", str(root), "main, team/x (from main v2), team/x/sub (from team/x v3)",
                 open_kwargs={"branch": "team/x/sub"})


# --- clones -----------------------------------------------------------------------------------------------


def shallow_clone(workdir: Path) -> Shape:
    """A shallow clone of a tagged source version (source data files, a source deletion file and a
    BTREE index through base 0 = the source root), then an append on the clone (clone root) and a
    delete of an inherited row (a new deletion file in the clone root replacing the inherited one).
    The source moves on after the tag."""
    work = _fresh(workdir)
    src, clone = work / "source", work / "clone"
    lance.write_dataset(rows(0, 9), str(src), max_rows_per_file=3)
    lance.dataset(str(src)).delete("id = 4 OR id = 7")
    ds = _append(src, rows(9, 2))
    ds.create_scalar_index("id", "BTREE")
    ds = lance.dataset(str(src))
    ds.tags.create("release", ds.version)
    ds = _append(src, rows(20, 2))
    ds.shallow_clone(str(clone), "release")
    _append(clone, rows(50, 3))
    lance.dataset(str(clone)).delete("id = 5 OR id = 51")
    return Shape("shallow_clone", str(clone), "shallow clone of tag release (source v4), then writes",
                 extra_roots=(str(src),))


def branch_clone(workdir: Path) -> Shape:
    """A shallow clone of a branch version (``("feat", 3)``): two dataset-root bases, main's root (id 0,
    unnamed) and the branch root (id 1, named ``feat``), then an append on the clone."""
    work = _fresh(workdir)
    root, clone = work / "ds", work / "clone"
    ds = lance.write_dataset(rows(0, 4), str(root))
    ds = _append(root, rows(4, 2))
    ds.create_branch("feat")
    _append(f"{root}/tree/feat", rows(100, 2))
    lance.dataset(str(root)).shallow_clone(str(clone), ("feat", 3))
    _append(clone, rows(200, 2))
    return Shape("branch_clone", str(clone), "shallow clone of branch feat v3", extra_roots=(str(root),),
                 data_file_roots=(str(clone), str(root)))


def clone_of_clone(workdir: Path) -> Shape:
    """A shallow clone of a shallow clone: bases accumulate and chains flatten (``{0: source, 1: first
    clone}``); source files keep base 0 (a deletion file among them), first-clone files get base 1, the
    second clone's own append stays in its root."""
    work = _fresh(workdir)
    src, c1, c2 = work / "source", work / "clone1", work / "clone2"
    lance.write_dataset(rows(0, 6), str(src), max_rows_per_file=3)
    lance.dataset(str(src)).delete("id = 2")
    lance.dataset(str(src)).shallow_clone(str(c1), 2)
    _append(c1, rows(10, 3))
    lance.dataset(str(c1)).delete("id = 11")
    lance.dataset(str(c1)).shallow_clone(str(c2), 4)
    _append(c2, rows(20, 2))
    return Shape("clone_of_clone", str(c2), "clone2 of clone1 of source", extra_roots=(str(c1), str(src)),
                 data_file_roots=(str(c2), str(c1), str(src)))


def multi_base_clone(workdir: Path) -> Shape:
    """A shallow clone of a multi-base dataset: the source's bases keep their ids (1, 2) and its root
    becomes base 0; an append on the clone goes to the clone root."""
    work = _fresh(workdir)
    src, b1, b2, clone = work / "source", work / "base_plain", work / "base_rootlike", work / "clone"
    lance.write_dataset(
        rows(0, 6), str(src), max_rows_per_file=2,
        initial_bases=[
            lance.DatasetBasePath(str(b1), name="plain"),
            lance.DatasetBasePath(str(b2), name="rootlike", is_dataset_root=True),
        ],
        target_bases=["plain", "rootlike"],
    )
    ds = _append(src, rows(6, 2))
    ds.shallow_clone(str(clone), ds.version)
    _append(clone, rows(30, 2))
    return Shape("multi_base_clone", str(clone), "shallow clone of a dataset with two bases",
                 extra_roots=(str(src), str(b1), str(b2)),
                 data_file_roots=(str(clone), str(src), str(b1), str(b2)))


def deep_clone(workdir: Path) -> Shape:
    """A deep clone of a tagged version with a deletion file and a BTREE index: data files, the deletion
    file and the index directory copied under the same names into the clone root, no bases; the clone
    keeps the source version number."""
    work = _fresh(workdir)
    src, clone = work / "source", work / "clone"
    lance.write_dataset(rows(0, 6), str(src), max_rows_per_file=3)
    lance.dataset(str(src)).delete("id = 1")
    lance.dataset(str(src)).create_scalar_index("id", "BTREE")
    ds = _append(src, rows(6, 2))
    ds.tags.create("snap", 3)
    ds = _append(src, rows(8, 2))
    ds.deep_clone(str(clone), "snap")
    return Shape("deep_clone", str(clone), "deep clone of tag snap (source v3)", extra_roots=(str(src),),
                 data_file_roots=(str(clone),))


# --- blobs and indices --------------------------------------------------------------------------------


INLINE_BLOB = b"inline blob"
PACKED_BLOB_SIZE = 70 * 1024  # > 64 KiB inline threshold, <= 4 MiB: packed sidecar
DEDICATED_BLOB_SIZE = 4 * 1024 * 1024 + 1024  # > 4 MiB: dedicated sidecar
EXTERNAL_BLOB = bytes(range(256)) * 4
EXTERNAL_RANGE_SOURCE = b"0123456789" * 100
EXTERNAL_RANGE = (10, 100)


def blob_v2(workdir: Path) -> Shape:
    """Blob v2 (``lance.blob_array``, data_storage_version 2.2): an inline value (kind 0), a packed one
    (kind 1, > 64 KiB, sidecar ``{stem}/1000…0.blob``), a dedicated one (kind 2, > 4 MiB), an external
    URI inside a registered non-root base (kind 3, base id + relative path), an external range, an empty
    blob and a null; a second fragment of inline values. About 4.3 MB."""
    work = _fresh(workdir)
    root, ext = work / "ds", work / "external"
    ext.mkdir()
    (ext / "whole.bin").write_bytes(EXTERNAL_BLOB)
    (ext / "ranged.bin").write_bytes(EXTERNAL_RANGE_SOURCE)
    values: list[Any] = [
        INLINE_BLOB,
        bytes([7]) * PACKED_BLOB_SIZE,
        bytes([9]) * DEDICATED_BLOB_SIZE,
        str(ext / "whole.bin"),
        lance.Blob.from_uri(str(ext / "ranged.bin"), position=EXTERNAL_RANGE[0], size=EXTERNAL_RANGE[1]),
        lance.Blob.empty(),
        None,
    ]
    table = pa.table({"id": pa.array(range(len(values)), pa.int64()), "blob": lance.blob_array(values)})
    lance.write_dataset(table, str(root), data_storage_version="2.2",
                        initial_bases=[lance.DatasetBasePath(str(ext), name="external")])
    more = pa.table({"id": pa.array([100, 101], pa.int64()), "blob": lance.blob_array([b"a", b"bb"])})
    _append(root, more)
    return Shape("blob_v2", str(root), "blob v2 kinds 0-3 with a registered external base",
                 extra_roots=(str(ext),), data_file_roots=(str(root), str(ext)))


def index(workdir: Path) -> Shape:
    """A BTREE scalar index on ``id`` (``_indices/{uuid}/page_data.lance``, ``page_lookup.lance``) over
    two fragments, then a third fragment the index does not cover."""
    root = _fresh(workdir) / "ds"
    ds = lance.write_dataset(rows(0, 10), str(root), max_rows_per_file=5)
    ds.create_scalar_index("id", "BTREE")
    _append(root, rows(10, 3))
    return Shape("index", str(root), "BTREE index over two of three fragments", data_file_roots=(str(root),))


# --- what every writer does day to day: schema evolution, indices, compaction, merges, row ids ------------


def schema_evolution(workdir: Path) -> Shape:
    """Every schema change (docs/lance-format.md §16.7) on two fragments with a struct column: add a computed
    column (new data files), add an all-null column (metadata only), rename a column and a nested field,
    cast a column (rewritten under a new field id), drop a column and a nested field (metadata only: the
    data files keep the dropped ids), then append under the final schema."""
    root = _fresh(workdir) / "ds"
    table = rows(0, 6).append_column("point", pa.array([{"x": i, "y": -i} for i in range(6)]))
    ds = lance.write_dataset(table, str(root), max_rows_per_file=3)
    ds.add_columns({"double": "id * 2"})
    ds.add_columns(pa.field("note", pa.string()))
    _alter(root, path="name", name="label")
    _alter(root, path="point.x", name="px")
    _alter(root, path="value", data_type=pa.float32())
    ds = lance.dataset(str(root))
    ds.drop_columns(["double"])
    ds.drop_columns(["point.y"])
    _append(root, lance.dataset(str(root)).to_table().slice(0, 2))
    return Shape("schema_evolution", str(root), "add, add null, rename, rename nested, cast, drop, drop nested")


def _alter(root: Path, **alteration: Any) -> None:
    """One ``alter_columns`` change of the latest version (``path`` and ``name``, ``data_type`` or
    ``nullable``)."""
    change: Any = alteration  # pylance's annotation wants an iterable of changes per argument
    lance.dataset(str(root)).alter_columns(change)


def _vectors(start: int, count: int, dim: int = 8) -> pa.Array:
    """Deterministic float32 vectors of ``dim`` values for rows ``start ..``."""
    return pa.array([[((i * 7 + j * 3) % 11) / 11 for j in range(dim)] for i in range(start, start + count)],
                    pa.list_(pa.float32(), dim))


def indices(workdir: Path) -> Shape:
    """One index of every kind pylance builds on a few hundred rows: scalar BTREE, BITMAP, LABEL_LIST,
    INVERTED (full text), NGRAM and ZONEMAP; vector IVF_PQ and IVF_FLAT; then an append the indices do not
    cover and ``optimize_indices`` (delta indices)."""
    root = _fresh(workdir) / "ds"
    n = 300
    table = (rows(0, n).append_column("cat", pa.array([f"c{i % 4}" for i in range(n)]))
             .append_column("tags", pa.array([[f"t{i % 3}", f"u{i % 5}"] for i in range(n)]))
             .append_column("vec", _vectors(0, n)))
    ds = lance.write_dataset(table, str(root))
    kinds: tuple[tuple[str, Any], ...] = (("id", "BTREE"), ("cat", "BITMAP"), ("tags", "LABEL_LIST"),
                                          ("name", "INVERTED"), ("name", "NGRAM"), ("value", "ZONEMAP"))
    for column, kind in kinds:
        ds.create_scalar_index(column, kind, name=f"{column}_{kind.lower()}")
    ds.create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2, name="vec_ivf_pq")
    ds.create_index("vec", "IVF_FLAT", num_partitions=2, name="vec_ivf_flat")
    _append(root, table.slice(0, 10))
    lance.dataset(str(root)).optimize.optimize_indices()
    return Shape("indices", str(root), "scalar, full-text and vector indices, then an append and optimize")


def compaction(workdir: Path) -> Shape:
    """Five one-fragment writes, a BTREE index, a delete, then ``compact_files``: the fragments merge into
    one (deleted rows dropped) and the index is remapped; the old files stay until cleanup."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 4), str(root))
    for i in range(4):
        _append(root, rows(4 + 4 * i, 4))
    lance.dataset(str(root)).create_scalar_index("id", "BTREE")
    lance.dataset(str(root)).delete("id % 3 = 0")
    lance.dataset(str(root)).optimize.compact_files()
    return Shape("compaction", str(root), "five fragments, an index and a delete, compacted")


def merge_update(workdir: Path) -> Shape:
    """``merge_insert`` as an upsert, as an upsert that deletes the rows the source lacks, then ``update``:
    rewritten rows go to new fragments, the old ones get deletion files."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 10), str(root), max_rows_per_file=5)
    (lance.dataset(str(root)).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
     .execute(rows(8, 5)))
    (lance.dataset(str(root)).merge_insert("id").when_matched_update_all().when_not_matched_by_source_delete()
     .execute(rows(0, 6)))
    lance.dataset(str(root)).update({"name": "'updated'"}, where="id < 3")
    return Shape("merge_update", str(root), "upsert, upsert deleting what the source lacks, update")


def stable_row_ids(workdir: Path) -> Shape:
    """Stable row ids (``enable_stable_row_ids``, reader flag 2): an update moves rows to a new fragment
    under their ids (the old fragment keeps the ids of the rows it deleted), a delete, an upsert, then a
    compaction that gathers every live id into one fragment."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 10), str(root), enable_stable_row_ids=True, max_rows_per_file=5)
    lance.dataset(str(root)).update({"name": "'moved'"}, where="id < 3")
    lance.dataset(str(root)).delete("id = 7")
    (lance.dataset(str(root)).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
     .execute(rows(8, 4)))
    lance.dataset(str(root)).optimize.compact_files()
    return Shape("stable_row_ids", str(root), "stable row ids through update, delete, upsert and compaction")


def restore(workdir: Path) -> Shape:
    """``restore`` of version 1 after an append: version 3 holds version 1's fragments again."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 4), str(root))
    _append(root, rows(4, 4))
    first: Any = lance.dataset(str(root), version=1)
    first.restore()
    return Shape("restore", str(root), "version 1 restored as version 3")


def manifest_migrated(workdir: Path) -> Shape:
    """V1 manifest names migrated to V2 (``migrate_manifest_paths_v2``, which renames every manifest), then
    an append under the V2 scheme."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 4), str(root), enable_v2_manifest_paths=False)
    _append(root, rows(4, 4)).migrate_manifest_paths_v2()
    _append(root, rows(8, 4))
    return Shape("manifest_migrated", str(root), "V1 names migrated to V2, then an append")


def _storage_version(version: Any) -> Callable[[Path], Shape]:
    """A builder for data storage version ``version`` (``legacy``: the 0.1 data format, files of version
    0.2): two fragments, a delete, a computed column, a rename, a drop and an append."""

    def build(workdir: Path) -> Shape:
        root = _fresh(workdir) / "ds"
        lance.write_dataset(rows(0, 6), str(root), data_storage_version=version, max_rows_per_file=3)
        lance.dataset(str(root)).delete("id = 1")
        lance.dataset(str(root)).add_columns({"double": "id * 2"})
        _alter(root, path="name", name="label")
        lance.dataset(str(root)).drop_columns(["value"])
        _append(root, lance.dataset(str(root)).to_table().slice(0, 2))
        return Shape(f"storage_{version.replace('.', '_')}", str(root),
                     f"data storage version {version}: delete, add, rename, drop, append")

    return build

SHAPES: dict[str, Callable[[Path], Shape]] = {
    "single_base": single_base,
    "multi_base_nonroot": multi_base_nonroot,
    "multi_base_root": multi_base_root,
    "deletions_arrow": deletions_arrow,
    "deletions_bitmap": deletions_bitmap,
    "manifest_v1": manifest_v1,
    "manifest_v2": manifest_v2,
    "tags": tags,
    "branches": branches,
    "shallow_clone": shallow_clone,
    "branch_clone": branch_clone,
    "clone_of_clone": clone_of_clone,
    "multi_base_clone": multi_base_clone,
    "deep_clone": deep_clone,
    "blob_v2": blob_v2,
    "index": index,
    "schema_evolution": schema_evolution,
    "indices": indices,
    "compaction": compaction,
    "merge_update": merge_update,
    "stable_row_ids": stable_row_ids,
    "restore": restore,
    "manifest_migrated": manifest_migrated,
    **{f"storage_{v.replace('.', '_')}": _storage_version(v) for v in ("2.0", "2.1", "2.2", "legacy")},
}


# --- shapes that show a divergence of pylance from the seeds --------------------------------------------
#
# Each writes, with pylance, a dataset that breaches a requirement because of a recorded finding
# (spec/findings.md). Certify must keep reporting them (tests/conformance/expected_failures.toml); they are
# kept apart from SHAPES, whose datasets every reader must read.


def relative_base_path(workdir: Path) -> Shape:
    """F-012: pylance accepts a relative base path and writes the data file relative to the working
    directory; the manifest records the relative path (breaches BASE-002)."""
    workdir.mkdir(parents=True, exist_ok=True)
    root = workdir / "ds"
    with contextlib.chdir(workdir):
        lance.write_dataset(rows(0, 4), str(root), initial_bases=[lance.DatasetBasePath("rel/b", name="b")],
                            target_bases=["b"])
    return Shape("relative_base_path", str(root), "a base registered with a relative path (F-012)",
                 extra_roots=(str(workdir / "rel" / "b"),))


def copied_root_with_branch(workdir: Path) -> Shape:
    """F-010: a root with a branch, copied to a new place with the original removed. The branch's manifests
    record the old root as an absolute base, so its inherited files are gone (breaches CLONE-001)."""
    old, new = workdir / "old", workdir / "new"
    ds = lance.write_dataset(rows(0, 4), str(old))
    ds.create_branch("feat")
    lance.write_dataset(rows(4, 2), branch_root(str(old), "feat"), mode="append")
    shutil.copytree(old, new)
    shutil.rmtree(old)
    return Shape("copied_root_with_branch", str(new), "a copied root whose branch points at the removed original "
                 "(F-010)")


DIVERGENCE_SHAPES: dict[str, Callable[[Path], Shape]] = {
    "relative_base_path": relative_base_path,
    "copied_root_with_branch": copied_root_with_branch,
}


def build(name: str, workdir: Path) -> Shape:
    """Build the shape called ``name`` into ``workdir``."""
    try:
        builder = SHAPES[name]
    except KeyError:
        raise KeyError(f"unknown shape {name!r}; known: {', '.join(sorted(SHAPES))}") from None
    return builder(workdir)
