"""Builders for every dataset shape lancespec must read, written by the real writer (pylance 14.0.2).

Each builder is a function ``(workdir) -> Shape``: it writes one small, deterministic dataset (a few rows,
a few fragments; only file names and UUIDs are random) into ``workdir`` and describes what it wrote.
``SHAPES`` maps every shape name to its builder. A shape is said as a sequence of operations of the language
(``conformance.operations``, locations relative to ``workdir``), applied by the pylance
implementation; what is no table operation (a scalar index, files written or moved by hand) is a step
called with the work directory. Which part of the format each shape exercises is said above its entry.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa

from conformance.adapters import registry
from conformance.adapters.base import Folder
from conformance.operations import (
    Append,
    BaseSpec,
    Branch,
    Create,
    DeepClone,
    Delete,
    MoveTag,
    Operation,
    ShallowClone,
    Tag,
)
from conformance.payload import Blob, Blobs, rows

__all__ = ["DIVERGENCE_SHAPES", "SHAPES", "Shape"]

Step = Operation | Callable[[Path], object]
"""An operation for pylance, or a step done by hand in the work directory."""


@dataclass(frozen=True)
class Shape:
    """One dataset written by pylance, and how to look at it.

    ``uri``: the dataset root to open (for a branch: the main root; ``open_kwargs`` names the branch).
    ``extra_roots``: every other directory the builder wrote into (bases, clone sources).
    ``open_kwargs``: which snapshot to look at, as ``Dataset.snapshot`` keywords (``{}`` = latest of main).
    ``data_file_roots``: directories whose ``*.lance`` files (outside ``_indices/``) are exactly the
    selected snapshot's data files, a filesystem oracle independent of any manifest; empty when no such
    closed set exists (e.g. files of later versions or of other branches lie beside them).
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


def _fresh(workdir: Path) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    if any(workdir.iterdir()):
        raise FileExistsError(f"{workdir}: a shape is built into an empty directory")
    return workdir


def _shape(name: str, uri: str, description: str, *steps: Step, extra: tuple[str, ...] = (),
           files: tuple[str, ...] = (), open_kwargs: Mapping[str, int | str] | None = None,
           in_workdir: bool = False) -> Callable[[Path], Shape]:
    """A builder that applies ``steps`` into an empty work directory (the current directory with ``in_workdir``)
    and describes root ``uri``, the ``extra`` directories and the closed set ``files``, all relative to it."""

    def build(workdir: Path) -> Shape:
        session = registry.get("pylance").open(Folder(str(_fresh(workdir))))
        with contextlib.chdir(workdir) if in_workdir else contextlib.nullcontext():
            for step in steps:
                session.apply(step) if not callable(step) else step(workdir)
        return Shape(name, str(workdir / uri), description, tuple(str(workdir / d) for d in extra),
                     dict(open_kwargs or {}), tuple(str(workdir / d) for d in files))

    return build


def _index(root: str) -> Callable[[Path], object]:
    """A BTREE scalar index on ``id`` (pylance's ``create_scalar_index``: no operation of the language)."""
    return lambda workdir: lance.dataset(str(workdir / root)).create_scalar_index("id", "BTREE")


def _where(*ids: int) -> str:
    return " OR ".join(f"id = {i}" for i in ids)


INLINE_BLOB = b"inline blob"
PACKED_BLOB_SIZE = 70 * 1024  # > 64 KiB inline threshold, <= 4 MiB: packed sidecar
DEDICATED_BLOB_SIZE = 4 * 1024 * 1024 + 1024  # > 4 MiB: dedicated sidecar
EXTERNAL_BLOB = bytes(range(256)) * 4
EXTERNAL_RANGE_SOURCE = b"0123456789" * 100
EXTERNAL_RANGE = (10, 100)


def _external_objects(workdir: Path) -> None:
    (workdir / "external").mkdir()
    (workdir / "external" / "whole.bin").write_bytes(EXTERNAL_BLOB)
    (workdir / "external" / "ranged.bin").write_bytes(EXTERNAL_RANGE_SOURCE)


def _move(old: str, new: str) -> Callable[[Path], object]:
    """A root copied to a new place by hand, the original removed."""

    def move(workdir: Path) -> None:
        shutil.copytree(workdir / old, workdir / new)
        shutil.rmtree(workdir / old)

    return move


_TWO_BASES = (BaseSpec("base_one", "one", False), BaseSpec("base_two", "two", False))
_ROOT_AND_PLAIN = (BaseSpec("rootlike", "rootlike", True), BaseSpec("plain", "plain", False))
_PLAIN_AND_ROOT = (BaseSpec("base_plain", "plain", False), BaseSpec("base_rootlike", "rootlike", True))
_BLOBS = (Blob(text=INLINE_BLOB.decode()), Blob(fill=7, size=PACKED_BLOB_SIZE), Blob(fill=9, size=DEDICATED_BLOB_SIZE),
          Blob(at="external/whole.bin"), Blob(at="external/ranged.bin", position=EXTERNAL_RANGE[0],
                                              size=EXTERNAL_RANGE[1]), Blob(text=""), None)

# --- shapes written by pylance calls an operation cannot say (schema evolution, indices, compaction, ...) ---


def _append(root: Path, table: pa.Table) -> Any:
    return lance.write_dataset(table, str(root), mode="append")


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


def restore_after_schema_change(workdir: Path) -> Shape:
    """The sequence from the field (issue 26): two fragments, add_columns ``x`` (a second data file per
    fragment, same fragment ids), rename ``x`` to ``y``, drop ``y``, compact (fragments 0 and 1 become 2),
    then restore version 2: field id 2 comes back as ``x`` and fragments 0 and 1 with both data files."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 6), str(root), max_rows_per_file=3)
    lance.dataset(str(root)).add_columns({"x": "id * 2"})
    _alter(root, path="x", name="y")
    lance.dataset(str(root)).drop_columns(["y"])
    lance.dataset(str(root)).optimize.compact_files()
    second: Any = lance.dataset(str(root), version=2)
    second.restore()
    return Shape("restore_after_schema_change", str(root), "add, rename, drop, compact, then version 2 restored")


def field_readded(workdir: Path) -> Shape:
    """F-040: add_columns ``x``, drop it (its data files leave the fragments), add ``z``: pylance gives ``z``
    the dropped field's id 2 (breaches MAN-016)."""
    root = _fresh(workdir) / "ds"
    lance.write_dataset(rows(0, 6), str(root), max_rows_per_file=3)
    lance.dataset(str(root)).add_columns({"x": "id * 2"})
    lance.dataset(str(root)).drop_columns(["x"])
    lance.dataset(str(root)).add_columns({"z": "id * 3"})
    return Shape("field_readded", str(root), "a dropped field's id given to the next field added (F-040)")


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
    # One root, no bases: create (two fragments) then append (one fragment); every file under ``data/``.
    "single_base": _shape("single_base", "ds", "two versions, three fragments, all in {root}/data",
                          Create("ds", 0, 6, max_rows_per_file=3), Append("ds", 6, 4), files=("ds",)),
    # Two non-root bases registered at create (``initial_bases``): data files round-robin over them
    # (``target_bases``, ``{base}/{stem}.lance``), a later append to the root (``{root}/data``), an append to one
    # base only, and a delete whose deletion file goes to the root although the data lives in a base.
    "multi_base_nonroot": _shape("multi_base_nonroot", "ds", "two non-root bases plus the root",
                                 Create("ds", 0, 8, _TWO_BASES, ("one", "two"), max_rows_per_file=2),
                                 Append("ds", 8, 3), Append("ds", 11, 2, ("two",)), Delete("ds", (), _where(1)),
                                 extra=("base_one", "base_two"), files=("ds", "base_one", "base_two")),
    # A base with ``is_dataset_root=True`` (files under ``{base}/data/``) and a non-root base (files directly
    # under it), files in each and in the root.
    "multi_base_root": _shape("multi_base_root", "ds", "a dataset-root base and a non-root base",
                              Create("ds", 0, 6, _ROOT_AND_PLAIN, ("rootlike", "plain"), max_rows_per_file=2),
                              Append("ds", 6, 2), Delete("ds", (), _where(0)),
                              extra=("rootlike", "plain"), files=("ds", "rootlike", "plain")),
    # Deletion files below 5000 rows (``.arrow``, ARROW_ARRAY): cumulative deletes in fragment 0 (two deletes, the
    # second file replaces the first), one row in fragment 1, and fragment 2 deleted entirely (dropped from the
    # manifest, no deletion file; its data file stays on disk, unreferenced: no closed set of files).
    "deletions_arrow": _shape("deletions_arrow", "ds", ".arrow deletion files, one fragment fully deleted",
                              Create("ds", 0, 30, max_rows_per_file=10), Delete("ds", (), _where(1, 3)),
                              Delete("ds", (), _where(8, 12)), Delete("ds", (), "id >= 20")),
    # A deletion file of at least 5000 rows (``.bin``, a portable roaring bitmap): a 6000-row fragment with 5000
    # rows deleted, beside a 10-row fragment with one deleted row (``.arrow``).
    "deletions_bitmap": _shape("deletions_bitmap", "ds", ".bin deletion file (5000 rows) beside an .arrow one",
                               Create("ds", 0, 6000, max_rows_per_file=None), Append("ds", 6000, 10),
                               Delete("ds", (), "id < 5000 OR id = 6005"), files=("ds",)),
    # V1 manifest names (``_versions/{n}.manifest``, ``enable_v2_manifest_paths=False``): create, append, delete.
    "manifest_v1": _shape("manifest_v1", "ds", "V1 manifest names, three versions",
                          Create("ds", 0, 5, manifest_naming="v1"), Append("ds", 5, 5), Delete("ds", (), _where(7)),
                          files=("ds",)),
    # V2 manifest names (``_versions/{u64::MAX - n:020}.manifest``, the default): three versions.
    "manifest_v2": _shape("manifest_v2", "ds", "V2 manifest names, three versions",
                          Create("ds", 0, 5), Append("ds", 5, 5), Append("ds", 10, 2), files=("ds",)),
    # Tags on several versions, one of them moved with ``tags.update``; the snapshot looked at is the moved tag's
    # (not the latest) version.
    "tags": _shape("tags", "ds", "four versions; tags first->1, second->2, moving 1->3",
                   Create("ds", 0, 4), Append("ds", 4, 4), Append("ds", 8, 4), Append("ds", 12, 4),
                   Tag("ds", "first", None, 1), Tag("ds", "second", None, 2), Tag("ds", "moving", None, 1),
                   MoveTag("ds", "moving", None, 3), open_kwargs={"tag": "moving"}),
    # Branches: ``team/x`` forked from main v2 (ref file ``team%2Fx.json``, root ``tree/team/x``) with its own
    # append, and ``team/x/sub`` forked from ``team/x`` (its root nested inside ``tree/team/x``) with its own append;
    # main moves on after the fork; a tag names a version of ``team/x``. The snapshot looked at is the latest of
    # ``team/x/sub``: files from main (base 0), from ``team/x`` (base 1) and its own root.
    "branches": _shape("branches", "ds", "main, team/x (from main v2), team/x/sub (from team/x v3)",
                       Create("ds", 0, 4), Append("ds", 4, 4), Branch("ds", "team/x", None, None),
                       Append("ds/tree/team/x", 100, 3), Branch("ds", "team/x/sub", "team/x", None),
                       Append("ds/tree/team/x/sub", 200, 2), Append("ds", 8, 4), Tag("ds", "on-branch", "team/x", 3),
                       Tag("ds", "on-main", None, 2), open_kwargs={"branch": "team/x/sub"}),
    # A shallow clone of a tagged source version (source data files, a source deletion file and a BTREE index
    # through base 0 = the source root), then an append on the clone (clone root) and a delete of an inherited row
    # (a new deletion file in the clone root replacing the inherited one). The source moves on after the tag.
    "shallow_clone": _shape("shallow_clone", "clone", "shallow clone of tag release (source v4), then writes",
                            Create("source", 0, 9, max_rows_per_file=3), Delete("source", (), _where(4, 7)),
                            Append("source", 9, 2), _index("source"), Tag("source", "release", None, None),
                            Append("source", 20, 2), ShallowClone("source", "release", "clone"), Append("clone", 50, 3),
                            Delete("clone", (), _where(5, 51)), extra=("source",)),
    # A shallow clone of a branch version (``("feat", 3)``): two dataset-root bases, main's root (id 0, unnamed) and
    # the branch root (id 1, named ``feat``), then an append on the clone.
    "branch_clone": _shape("branch_clone", "clone", "shallow clone of branch feat v3",
                           Create("ds", 0, 4), Append("ds", 4, 2), Branch("ds", "feat", None, None),
                           Append("ds/tree/feat", 100, 2), ShallowClone("ds", None, "clone", "feat", 3),
                           Append("clone", 200, 2), extra=("ds",), files=("clone", "ds")),
    # A shallow clone of a shallow clone: bases accumulate and chains flatten (``{0: source, 1: first clone}``);
    # source files keep base 0 (a deletion file among them), first-clone files get base 1, the second clone's own
    # append stays in its root.
    "clone_of_clone": _shape("clone_of_clone", "clone2", "clone2 of clone1 of source",
                             Create("source", 0, 6, max_rows_per_file=3), Delete("source", (), _where(2)),
                             ShallowClone("source", None, "clone1", None, 2), Append("clone1", 10, 3),
                             Delete("clone1", (), _where(11)), ShallowClone("clone1", None, "clone2", None, 4),
                             Append("clone2", 20, 2), extra=("clone1", "source"),
                             files=("clone2", "clone1", "source")),
    # A shallow clone of a multi-base dataset: the source's bases keep their ids (1, 2) and its root becomes base
    # 0; an append on the clone goes to the clone root.
    "multi_base_clone": _shape("multi_base_clone", "clone", "shallow clone of a dataset with two bases",
                               Create("source", 0, 6, _PLAIN_AND_ROOT, ("plain", "rootlike"), max_rows_per_file=2),
                               Append("source", 6, 2), ShallowClone("source", None, "clone", None, None),
                               Append("clone", 30, 2), extra=("source", "base_plain", "base_rootlike"),
                               files=("clone", "source", "base_plain", "base_rootlike")),
    # A deep clone of a tagged version with a deletion file and a BTREE index: data files, the deletion file and
    # the index directory copied under the same names into the clone root, no bases; the clone keeps the source
    # version number.
    "deep_clone": _shape("deep_clone", "clone", "deep clone of tag snap (source v3)",
                         Create("source", 0, 6, max_rows_per_file=3), Delete("source", (), _where(1)),
                         _index("source"), Append("source", 6, 2), Tag("source", "snap", None, 3),
                         Append("source", 8, 2), DeepClone("source", None, None, "clone", tag="snap"),
                         extra=("source",), files=("clone",)),
    # Blob v2 (data_storage_version 2.2): an inline value (kind 0), a packed one (kind 1, > 64 KiB, sidecar
    # ``{stem}/1000…0.blob``), a dedicated one (kind 2, > 4 MiB), an external URI inside a registered non-root
    # base (kind 3, base id + relative path), an external range, an empty blob and a null; a second fragment of
    # inline values. About 4.3 MB.
    "blob_v2": _shape("blob_v2", "ds", "blob v2 kinds 0-3 with a registered external base", _external_objects,
                      Create("ds", 0, len(_BLOBS), (BaseSpec("external", "external", False),),
                             max_rows_per_file=None, data=Blobs(_BLOBS)),
                      Append("ds", 100, 2, max_rows_per_file=None, data=Blobs((Blob(text="a"), Blob(text="bb")))),
                      extra=("external",), files=("ds", "external")),
    # A BTREE scalar index on ``id`` (``_indices/{uuid}/page_data.lance``, ``page_lookup.lance``) over two
    # fragments, then a third fragment the index does not cover.
    "index": _shape("index", "ds", "BTREE index over two of three fragments",
                    Create("ds", 0, 10, max_rows_per_file=5), _index("ds"), Append("ds", 10, 3), files=("ds",)),
    "schema_evolution": schema_evolution,
    "indices": indices,
    "compaction": compaction,
    "merge_update": merge_update,
    "stable_row_ids": stable_row_ids,
    "restore": restore,
    "restore_after_schema_change": restore_after_schema_change,
    "manifest_migrated": manifest_migrated,
    **{f"storage_{v.replace('.', '_')}": _storage_version(v) for v in ("2.0", "2.1", "2.2", "legacy")},
}


# --- shapes that show a divergence of pylance from the seeds --------------------------------------------
#
# Each writes, with pylance, a dataset that breaches a requirement because of a recorded finding
# (spec/findings.md). Certify must keep reporting them (tests/conformance/expected_failures.toml); they are
# kept apart from SHAPES, whose datasets every reader must read.

def _config_over_overwrite(workdir: Path) -> None:
    """A handle opened at v1; another overwrites (v2); the stale handle's update_config lands as v3, built on v1."""
    uri = str(workdir / "ds")
    stale = lance.dataset(uri)
    lance.write_dataset(stale.to_table(), uri, mode="overwrite")
    stale.update_config({"owner": "stale"})


DIVERGENCE_SHAPES: dict[str, Callable[[Path], Shape]] = {
    # F-012: pylance accepts a relative base path and writes the data file relative to the working directory; the
    # manifest records the relative path (breaches BASE-002).
    "relative_base_path": _shape("relative_base_path", "ds", "a base registered with a relative path (F-012)",
                                 Create("ds", 0, 4, (BaseSpec("rel/b", "b", False, raw=True),), ("b",)),
                                 extra=("rel/b",), in_workdir=True),
    # F-010: a root with a branch, copied to a new place with the original removed. The branch's manifests record
    # the old root as an absolute base, so its inherited files are gone (breaches CLONE-001).
    "copied_root_with_branch": _shape("copied_root_with_branch", "new", "a copied root whose branch points at the "
                                      "removed original (F-010)", Create("old", 0, 4),
                                      Branch("old", "feat", None, None), Append("old/tree/feat", 4, 2),
                                      _move("old", "new")),
    # F-038: an UpdateConfig that sets only config keys lands after a concurrent Overwrite (breaches COMMIT-002).
    "config_over_overwrite": _shape("config_over_overwrite", "ds", "an update_config committed over a concurrent "
                                    "overwrite it never saw (F-038)", Create("ds", 0, 4), _config_over_overwrite),
    # F-040: a field added after a drop takes the dropped field's id once no data file holds it (breaches
    # MAN-016).
    "field_readded": field_readded,
}

