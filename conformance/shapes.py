"""Builders for every dataset shape lancespec must read, written by the real writer (pylance 14.0.2).

Each builder is a function ``(workdir) -> Shape``: it writes one small, deterministic dataset (a few rows,
a few fragments; only file names and UUIDs are random) into ``workdir`` and describes what it wrote.
``SHAPES`` maps every shape name to its builder. A builder says what to write as operations of the language
(``lancespec.conformance.operations``, locations relative to ``workdir``), applied by the pylance
implementation; only what is no table operation (a scalar index, files moved by hand) is a direct pylance or
filesystem call. Which part of the format each shape exercises is said in the builder's docstring.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lance

from lancespec.conformance.adapters import registry
from lancespec.conformance.adapters.base import Folder
from lancespec.conformance.operations import (
    Append,
    BaseSpec,
    Branch,
    Create,
    DeepClone,
    Delete,
    Operation,
    ShallowClone,
    Tag,
)
from lancespec.conformance.payload import Blob, Blobs, expected_rows, rows

__all__ = ["DIVERGENCE_SHAPES", "SHAPES", "Shape", "build", "expected_rows", "rows"]


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


def _fresh(workdir: Path) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    if any(workdir.iterdir()):
        raise FileExistsError(f"{workdir}: a shape is built into an empty directory")
    return workdir


def _write(workdir: Path, *operations: Operation) -> None:
    """Apply ``operations`` with pylance, their locations relative to ``workdir``."""
    session = registry.get("pylance").open(Folder(str(workdir)))
    for op in operations:
        session.apply(op)


def _where(*ids: int) -> str:
    return " OR ".join(f"id = {i}" for i in ids)


# --- single root ---------------------------------------------------------------------------------------


def single_base(workdir: Path) -> Shape:
    """One root, no bases: create (two fragments) then append (one fragment); every file under ``data/``."""
    _write(_fresh(workdir), Create("ds", 0, 6, max_rows_per_file=3), Append("ds", 6, 4))
    return Shape("single_base", str(workdir / "ds"), "two versions, three fragments, all in {root}/data",
                 data_file_roots=(str(workdir / "ds"),))


def manifest_v1(workdir: Path) -> Shape:
    """V1 manifest names (``_versions/{n}.manifest``, ``enable_v2_manifest_paths=False``): three versions
    (create, append, delete)."""
    _write(_fresh(workdir), Create("ds", 0, 5, manifest_naming="v1"), Append("ds", 5, 5), Delete("ds", (), _where(7)))
    return Shape("manifest_v1", str(workdir / "ds"), "V1 manifest names, three versions",
                 data_file_roots=(str(workdir / "ds"),))


def manifest_v2(workdir: Path) -> Shape:
    """V2 manifest names (``_versions/{u64::MAX - n:020}.manifest``, the default): three versions."""
    _write(_fresh(workdir), Create("ds", 0, 5), Append("ds", 5, 5), Append("ds", 10, 2))
    return Shape("manifest_v2", str(workdir / "ds"), "V2 manifest names, three versions",
                 data_file_roots=(str(workdir / "ds"),))


# --- deletion files -------------------------------------------------------------------------------------


def deletions_arrow(workdir: Path) -> Shape:
    """Deletion files below 5000 rows (``.arrow``, ARROW_ARRAY): cumulative deletes in fragment 0 (two
    deletes, the second file replaces the first), one row in fragment 1, and fragment 2 deleted entirely
    (dropped from the manifest, no deletion file)."""
    _write(_fresh(workdir), Create("ds", 0, 30, max_rows_per_file=10), Delete("ds", (), _where(1, 3)),
           Delete("ds", (), _where(8, 12)), Delete("ds", (), "id >= 20"))
    # No data_file_roots: the dropped fragment's data file stays on disk, unreferenced.
    return Shape("deletions_arrow", str(workdir / "ds"), ".arrow deletion files, one fragment fully deleted")


def deletions_bitmap(workdir: Path) -> Shape:
    """A deletion file of at least 5000 rows (``.bin``, a portable roaring bitmap): a 6000-row fragment
    with 5000 rows deleted, beside a 10-row fragment with one deleted row (``.arrow``)."""
    _write(_fresh(workdir), Create("ds", 0, 6000, max_rows_per_file=None), Append("ds", 6000, 10),
           Delete("ds", (), "id < 5000 OR id = 6005"))
    return Shape("deletions_bitmap", str(workdir / "ds"), ".bin deletion file (5000 rows) beside an .arrow one",
                 data_file_roots=(str(workdir / "ds"),))


# --- bases --------------------------------------------------------------------------------------------


def multi_base_nonroot(workdir: Path) -> Shape:
    """Two non-root bases registered at create (``initial_bases``): data files round-robin over them
    (``target_bases``, ``{base}/{stem}.lance``), a later append to the root (``{root}/data``), an append
    to one base only, and a delete whose deletion file goes to the root although the data lives in a base."""
    bases = (BaseSpec("base_one", "one", False), BaseSpec("base_two", "two", False))
    _write(_fresh(workdir), Create("ds", 0, 8, bases, ("one", "two"), max_rows_per_file=2), Append("ds", 8, 3),
           Append("ds", 11, 2, ("two",)), Delete("ds", (), _where(1)))
    roots = tuple(str(workdir / d) for d in ("ds", "base_one", "base_two"))
    return Shape("multi_base_nonroot", roots[0], "two non-root bases plus the root", extra_roots=roots[1:],
                 data_file_roots=roots)


def multi_base_root(workdir: Path) -> Shape:
    """A base with ``is_dataset_root=True`` (files under ``{base}/data/``) and a non-root base (files
    directly under it), files in each and in the root."""
    bases = (BaseSpec("rootlike", "rootlike", True), BaseSpec("plain", "plain", False))
    _write(_fresh(workdir), Create("ds", 0, 6, bases, ("rootlike", "plain"), max_rows_per_file=2),
           Append("ds", 6, 2), Delete("ds", (), _where(0)))
    roots = tuple(str(workdir / d) for d in ("ds", "rootlike", "plain"))
    return Shape("multi_base_root", roots[0], "a dataset-root base and a non-root base", extra_roots=roots[1:],
                 data_file_roots=roots)


# --- refs -----------------------------------------------------------------------------------------------


def tags(workdir: Path) -> Shape:
    """Tags on several versions, one of them moved with ``tags.update``; the snapshot looked at is the
    moved tag's (not the latest) version."""
    _write(_fresh(workdir), Create("ds", 0, 4), Append("ds", 4, 4), Append("ds", 8, 4), Append("ds", 12, 4),
           Tag("ds", "first", None, 1), Tag("ds", "second", None, 2), Tag("ds", "moving", None, 1),
           Tag("ds", "moving", None, 3, move=True))
    return Shape("tags", str(workdir / "ds"), "four versions; tags first->1, second->2, moving 1->3",
                 open_kwargs={"tag": "moving"})


def branches(workdir: Path) -> Shape:
    """Branches: ``team/x`` forked from main v2 (ref file ``team%2Fx.json``, root ``tree/team/x``) with its
    own append, and ``team/x/sub`` forked from ``team/x`` (its root nested inside ``tree/team/x``) with
    its own append; main moves on after the fork; a tag names a version of ``team/x``. The snapshot
    looked at is the latest of ``team/x/sub``: files from main (base 0), from ``team/x`` (base 1) and
    its own root."""
    _write(_fresh(workdir), Create("ds", 0, 4), Append("ds", 4, 4), Branch("ds", "team/x", None, None),
           Append("ds/tree/team/x", 100, 3), Branch("ds", "team/x/sub", "team/x", None),
           Append("ds/tree/team/x/sub", 200, 2), Append("ds", 8, 4), Tag("ds", "on-branch", "team/x", 3),
           Tag("ds", "on-main", None, 2))
    return Shape("branches", str(workdir / "ds"), "main, team/x (from main v2), team/x/sub (from team/x v3)",
                 open_kwargs={"branch": "team/x/sub"})


# --- clones -----------------------------------------------------------------------------------------------


def shallow_clone(workdir: Path) -> Shape:
    """A shallow clone of a tagged source version (source data files, a source deletion file and a
    BTREE index through base 0 = the source root), then an append on the clone (clone root) and a
    delete of an inherited row (a new deletion file in the clone root replacing the inherited one).
    The source moves on after the tag."""
    _write(_fresh(workdir), Create("source", 0, 9, max_rows_per_file=3), Delete("source", (), _where(4, 7)),
           Append("source", 9, 2))
    lance.dataset(str(workdir / "source")).create_scalar_index("id", "BTREE")
    _write(workdir, Tag("source", "release", None, None), Append("source", 20, 2),
           ShallowClone("source", "release", "clone"), Append("clone", 50, 3), Delete("clone", (), _where(5, 51)))
    return Shape("shallow_clone", str(workdir / "clone"), "shallow clone of tag release (source v4), then writes",
                 extra_roots=(str(workdir / "source"),))


def branch_clone(workdir: Path) -> Shape:
    """A shallow clone of a branch version (``("feat", 3)``): two dataset-root bases, main's root (id 0,
    unnamed) and the branch root (id 1, named ``feat``), then an append on the clone."""
    _write(_fresh(workdir), Create("ds", 0, 4), Append("ds", 4, 2), Branch("ds", "feat", None, None),
           Append("ds/tree/feat", 100, 2), ShallowClone("ds", None, "clone", "feat", 3), Append("clone", 200, 2))
    return Shape("branch_clone", str(workdir / "clone"), "shallow clone of branch feat v3",
                 extra_roots=(str(workdir / "ds"),), data_file_roots=(str(workdir / "clone"), str(workdir / "ds")))


def clone_of_clone(workdir: Path) -> Shape:
    """A shallow clone of a shallow clone: bases accumulate and chains flatten (``{0: source, 1: first
    clone}``); source files keep base 0 (a deletion file among them), first-clone files get base 1, the
    second clone's own append stays in its root."""
    _write(_fresh(workdir), Create("source", 0, 6, max_rows_per_file=3), Delete("source", (), _where(2)),
           ShallowClone("source", None, "clone1", None, 2), Append("clone1", 10, 3), Delete("clone1", (), _where(11)),
           ShallowClone("clone1", None, "clone2", None, 4), Append("clone2", 20, 2))
    roots = tuple(str(workdir / d) for d in ("clone2", "clone1", "source"))
    return Shape("clone_of_clone", roots[0], "clone2 of clone1 of source", extra_roots=roots[1:],
                 data_file_roots=roots)


def multi_base_clone(workdir: Path) -> Shape:
    """A shallow clone of a multi-base dataset: the source's bases keep their ids (1, 2) and its root
    becomes base 0; an append on the clone goes to the clone root."""
    bases = (BaseSpec("base_plain", "plain", False), BaseSpec("base_rootlike", "rootlike", True))
    _write(_fresh(workdir), Create("source", 0, 6, bases, ("plain", "rootlike"), max_rows_per_file=2),
           Append("source", 6, 2), ShallowClone("source", None, "clone", None, None), Append("clone", 30, 2))
    roots = tuple(str(workdir / d) for d in ("clone", "source", "base_plain", "base_rootlike"))
    return Shape("multi_base_clone", roots[0], "shallow clone of a dataset with two bases", extra_roots=roots[1:],
                 data_file_roots=roots)


def deep_clone(workdir: Path) -> Shape:
    """A deep clone of a tagged version with a deletion file and a BTREE index: data files, the deletion
    file and the index directory copied under the same names into the clone root, no bases; the clone
    keeps the source version number."""
    _write(_fresh(workdir), Create("source", 0, 6, max_rows_per_file=3), Delete("source", (), _where(1)))
    lance.dataset(str(workdir / "source")).create_scalar_index("id", "BTREE")
    _write(workdir, Append("source", 6, 2), Tag("source", "snap", None, 3), Append("source", 8, 2),
           DeepClone("source", None, None, "clone", tag="snap"))
    return Shape("deep_clone", str(workdir / "clone"), "deep clone of tag snap (source v3)",
                 extra_roots=(str(workdir / "source"),), data_file_roots=(str(workdir / "clone"),))


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
    (work / "external").mkdir()
    (work / "external" / "whole.bin").write_bytes(EXTERNAL_BLOB)
    (work / "external" / "ranged.bin").write_bytes(EXTERNAL_RANGE_SOURCE)
    ranged = Blob(at="external/ranged.bin", position=EXTERNAL_RANGE[0], size=EXTERNAL_RANGE[1])
    values = (Blob(text=INLINE_BLOB.decode()), Blob(fill=7, size=PACKED_BLOB_SIZE),
              Blob(fill=9, size=DEDICATED_BLOB_SIZE), Blob(at="external/whole.bin"), ranged, Blob(text=""), None)
    _write(work, Create("ds", 0, len(values), (BaseSpec("external", "external", False),), max_rows_per_file=None,
                        data=Blobs(values)),
           Append("ds", 100, 2, max_rows_per_file=None, data=Blobs((Blob(text="a"), Blob(text="bb")))))
    roots = (str(work / "ds"), str(work / "external"))
    return Shape("blob_v2", roots[0], "blob v2 kinds 0-3 with a registered external base", extra_roots=roots[1:],
                 data_file_roots=roots)


def index(workdir: Path) -> Shape:
    """A BTREE scalar index on ``id`` (``_indices/{uuid}/page_data.lance``, ``page_lookup.lance``) over
    two fragments, then a third fragment the index does not cover."""
    _write(_fresh(workdir), Create("ds", 0, 10, max_rows_per_file=5))
    lance.dataset(str(workdir / "ds")).create_scalar_index("id", "BTREE")
    _write(workdir, Append("ds", 10, 3))
    return Shape("index", str(workdir / "ds"), "BTREE index over two of three fragments",
                 data_file_roots=(str(workdir / "ds"),))


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
    with contextlib.chdir(workdir):
        _write(workdir, Create("ds", 0, 4, (BaseSpec("rel/b", "b", False, raw=True),), ("b",)))
    return Shape("relative_base_path", str(workdir / "ds"), "a base registered with a relative path (F-012)",
                 extra_roots=(str(workdir / "rel" / "b"),))


def copied_root_with_branch(workdir: Path) -> Shape:
    """F-010: a root with a branch, copied to a new place with the original removed. The branch's manifests
    record the old root as an absolute base, so its inherited files are gone (breaches CLONE-001)."""
    _write(workdir, Create("old", 0, 4), Branch("old", "feat", None, None), Append("old/tree/feat", 4, 2))
    shutil.copytree(workdir / "old", workdir / "new")
    shutil.rmtree(workdir / "old")
    return Shape("copied_root_with_branch", str(workdir / "new"), "a copied root whose branch points at the removed "
                 "original (F-010)")


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
