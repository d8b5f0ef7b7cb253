"""Checks of a clone's lineage: a root whose first version was committed by a Clone transaction, shallow
(files inherited through a base registered for the source) or deep (files copied into its own root).
Branch roots are shallow clones of their parent with ``branch_name`` set; the same rules apply to them
(catalogue area CLONE; Storage Layout spec "Shallow Clone" and 003; docs/lance-format.md §12).

A root's first attached version is the clone, if any: once cleanup has removed it the lineage is no
longer recorded and nothing is checked. A first manifest or transaction that cannot be read is
history's finding (HIST-001, HIST-002), not these checks'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reference.codec import decode_tag
from reference.commit import load_transaction, transaction_kind
from reference.errors import LanceSpecError
from reference.layout import TAGS_DIR, TREE_DIR, FileKind
from reference.proto import transaction_pb2
from reference.store import Storage
from reference.store.uri import is_absolute, join, normalize, relative_to
from reference.table import Dataset, Head, ResolvedFile, Snapshot

from . import DatasetContext, dataset_check

#: A file as a manifest records it: kind, path and base id.
_FileKey = tuple[FileKind, str, int | None]


@dataclass(frozen=True)
class _Lineage:
    """A root whose first version is a clone: that version, its snapshot, and the Clone operation."""

    first: int
    snapshot: Snapshot
    clone: transaction_pb2.Transaction.Clone


def first_clone(dataset: Dataset, known: Mapping[int, Head]) -> _Lineage | None:
    """The root's clone lineage (its first version taken from ``known`` when there, resolved), or None when
    its first version is no (readable) clone."""
    try:
        entries = dataset.version_entries(allow_mixed=True)
        if not entries:
            return None
        first = entries[0].version
        kind = transaction_kind(dataset, first)  # a large first commit is not decoded to learn it is no clone
        if kind is None or kind[0] != "clone":
            return None
        txn = load_transaction(dataset, first)
        if txn is None or txn.WhichOneof("operation") != "clone":
            return None
        given = known.get(first)
        snapshot = given if isinstance(given, Snapshot) else dataset.snapshot(first, strict=False)
    except LanceSpecError:
        return None
    return _Lineage(first, snapshot, txn.clone)


def _under(uri: str, directory: str) -> bool:
    """Whether ``uri`` is ``directory`` or lies below it."""
    return normalize(uri) == normalize(directory) or relative_to(normalize(uri), normalize(directory)) is not None


def _key(resolved: ResolvedFile) -> _FileKey:
    return (resolved.kind, resolved.path, resolved.base_id)


def _later(ctx: DatasetContext, lineage: _Lineage) -> Iterable[Snapshot]:
    return [ctx.snapshot(v) for v in sorted(ctx.snapshots) if v > lineage.first]


def _holds_dataset(storage: Storage, uri: str) -> bool:
    try:
        return bool(Dataset(uri, storage).version_entries(allow_mixed=True))
    except LanceSpecError:
        return False


def readable_source(clone: transaction_pb2.Transaction.Clone) -> str:
    """The clone's ``ref_path`` where it names a location lancespec may read (``readable_location``); else ""."""
    return readable_location(clone.ref_path)


def readable_location(path: str) -> str:
    """``path`` where a clone's source recorded as it names a location lancespec may read: an absolute path or
    URI with no ``..`` segment; else "" (a relative or climbing path names no place, as a relative base path
    names none: nothing is read in its name, by the checks or by the lineage diagram; structure-aware fuzzing
    found ``a/../../b`` read as ``/b``, an outside review the diagram reading it still)."""
    if not path or not is_absolute(path) or ".." in path.split("/"):
        return ""
    return path


@dataset_check("clones.lineage", "CLONE-001", "CLONE-002", "CLONE-003", "CLONE-004")
def lineage(ctx: DatasetContext) -> None:
    """For a root whose first version is a Clone: that version's number equals clone.ref_version
    (CLONE-002). Shallow: the source root (ref_path) still holds a dataset and every base the inherited
    files point to still holds something (CLONE-001); files added after the first version never resolve
    into the source (CLONE-003). Deep: no file resolves outside the clone's own root (CLONE-004), except
    files a later version wrote through a base registered after the clone that is not in the source.

    "The source" of CLONE-003 is the source datasets (ref_path, and inherited dataset-root bases that
    hold a dataset), not storage-only bases the clone inherited: writing there is a multi-base write."""
    found = first_clone(ctx.dataset, ctx.snapshots)
    if found is None:
        return
    clone, first = found.clone, found.snapshot
    if found.first != clone.ref_version:
        ctx.finding_at(found.first, "CLONE-002", first.manifest_uri,
                       f"the clone's first version is {found.first}, but it was cloned from version "
                       f"{clone.ref_version} of {clone.ref_path}")
    if clone.is_shallow:
        _shallow_sources_exist(ctx, found)
        _shallow_writes_stay_home(ctx, found)
    else:
        _deep_shares_nothing(ctx, found)


def _shallow_sources_exist(ctx: DatasetContext, found: _Lineage) -> None:
    clone, first = found.clone, found.snapshot
    source = _current_source_path(ctx, found)
    if source and not _holds_dataset(ctx.storage, source):
        ctx.finding("CLONE-001", source, f"the shallow clone's source {source} holds no dataset "
                    "(no manifest in _versions/): the files the clone inherits are gone", code="clone_source_missing")
    inherited: dict[int, ResolvedFile] = {}
    for resolved in first.files():
        if resolved.base_id is not None and resolved.uri is not None:
            inherited.setdefault(resolved.base_id, resolved)
    for base in first.bases:
        sample = inherited.get(base.id)
        if sample is None or sample.uri is None or normalize(base.path) == normalize(clone.ref_path):
            continue
        directory = sample.uri.rsplit("/", 1)[0]
        if next(iter(ctx.storage.list(directory, recursive=False)), None) is None:
            ctx.finding("CLONE-001", base.path, f"base {base.id} ({base.name or base.path}), which inherited files "
                        f"such as {sample.path} resolve through, holds nothing at {directory}",
                        code="inherited_base_empty")


def _current_source_path(ctx: DatasetContext, found: _Lineage) -> str:
    """Where the clone's source lives now: ``ref_path``, unless the base that registered it has since been
    relocated (Storage Layout spec "Dataset Portability"), in which case the newest certified version's path for it."""
    ref_path = readable_source(found.clone)
    if not ref_path or not ctx.snapshots:
        return ref_path
    source_ids = [b.id for b in found.snapshot.bases if normalize(b.path) == normalize(ref_path)]
    newest = ctx.snapshots[max(ctx.snapshots)]
    return next((base.path for base in newest.bases if base.id in source_ids), ref_path)


def _source_roots(storage: Storage, found: _Lineage) -> list[str]:
    """The source datasets: ref_path, and every dataset-root base the clone inherited that holds a dataset
    (the sources of a clone chain, the main root of a branch). Bases that are storage only (a non-root
    base, a dataset-root base without _versions/) are places the clone may still write to on purpose
    (``target_bases``), as pylance lets it."""
    roots = [readable_source(found.clone)] if readable_source(found.clone) else []
    for base in found.snapshot.bases:
        if base.is_dataset_root and base.path not in roots and _holds_dataset(storage, base.path):
            roots.append(base.path)
    return roots


def _shallow_writes_stay_home(ctx: DatasetContext, found: _Lineage) -> None:
    own = ctx.dataset.uri
    sources = _source_roots(ctx.storage, found)
    inherited = {_key(f) for f in found.snapshot.files()}
    reported: set[_FileKey] = set()
    for snapshot in _later(ctx, found):
        for resolved in snapshot.files():
            key = _key(resolved)
            if key in inherited or key in reported or resolved.uri is None or _under(resolved.uri, own):
                continue
            source = next((s for s in sources if _under(resolved.uri, s)), None)
            if source is not None:
                reported.add(key)
                ctx.finding_at(snapshot.version, "CLONE-003", resolved.uri,
                               f"written after the clone (version {found.first}) but resolves into the source "
                               f"{source}: {resolved.uri}")


def _deep_shares_nothing(ctx: DatasetContext, found: _Lineage) -> None:
    own = ctx.dataset.uri
    clone_base_paths = {normalize(b.path) for b in found.snapshot.bases}
    reported: set[_FileKey] = set()
    snapshots = [found.snapshot, *_later(ctx, found)]
    for snapshot in snapshots:
        bases = {b.id: b for b in snapshot.bases}
        for resolved in snapshot.files():
            key = _key(resolved)
            if key in reported or resolved.uri is None or _under(resolved.uri, own):
                continue
            base = bases.get(resolved.base_id) if resolved.base_id is not None else None
            own_later_base = (snapshot is not found.snapshot and base is not None
                              and normalize(base.path) not in clone_base_paths
                              and not (found.clone.ref_path and _under(resolved.uri, found.clone.ref_path)))
            if own_later_base:
                continue
            reported.add(key)
            ctx.finding_at(snapshot.version, "CLONE-004", resolved.uri,
                           f"a deep clone's file resolves outside its own root {own}: {resolved.uri}")


def _source_main_root(clone: transaction_pb2.Transaction.Clone) -> str:
    """The main root of the clone's source: ref_path, less ``/tree/{ref_name}`` for a branch source."""
    path = normalize(clone.ref_path)
    suffix = f"/{TREE_DIR}/{clone.ref_name}"
    if clone.ref_name and path.endswith(suffix):
        return path[: -len(suffix)]
    return path


@dataset_check("clones.source_protected", "CLONE-005")
def source_protected(ctx: DatasetContext) -> None:
    """SHOULD: the source version a shallow clone (not a branch) depends on is protected from cleanup by a
    tag in the source dataset naming ref_version on ref_name's branch (CLONE-005). An unreachable source
    is CLONE-001's finding, not this check's."""
    found = first_clone(ctx.dataset, ctx.snapshots)
    if found is None:
        return
    clone = found.clone
    if not clone.is_shallow or clone.branch_name or ctx.dataset.branch_name is not None or not readable_source(clone):
        return
    if not _holds_dataset(ctx.storage, clone.ref_path):
        return
    source_main = _source_main_root(clone)
    wanted_branch = clone.ref_name or None
    try:
        listed = list(ctx.storage.list(join(source_main, TAGS_DIR), recursive=False))
    except LanceSpecError:
        return
    for info in listed:
        if not info.uri.endswith(".json"):
            continue
        try:
            tag = decode_tag(ctx.storage.get(info.uri), info.uri)
        except LanceSpecError:
            continue  # a bad tag file is the source's own REF-001 finding
        if tag.version == clone.ref_version and (tag.branch or None) == wanted_branch:
            return
    on = f"branch {wanted_branch!r}" if wanted_branch else "main"
    ctx.finding("CLONE-005", found.snapshot.manifest_uri,
                f"no tag of the source {source_main} names version {clone.ref_version} on {on}: cleanup of the "
                "source may delete files this shallow clone reads")


def _source_snapshot(ctx: DatasetContext, found: _Lineage) -> Snapshot | None:
    """The source version the clone was made from, while it can still be read (else None)."""
    source = _current_source_path(ctx, found)
    if not source:
        return None
    try:
        return Dataset(source, ctx.storage).snapshot(found.clone.ref_version, strict=False)
    except LanceSpecError:
        return None


def _fragments(snapshot: Snapshot) -> dict[int, tuple[object, ...]]:
    out: dict[int, tuple[object, ...]] = {}
    for f in snapshot.manifest.fragments:
        files = tuple((d.path, d.file_size_bytes, tuple(d.fields)) for d in f.files)
        deletion = ((f.deletion_file.file_type, f.deletion_file.read_version, f.deletion_file.id,
                     f.deletion_file.num_deleted_rows) if f.HasField("deletion_file") else None)
        out[f.id] = (f.physical_rows, files, deletion)
    return out


def _indices(snapshot: Snapshot) -> dict[bytes, tuple[object, ...]]:
    section = snapshot.manifest_file.index_section
    if section is None:
        return {}
    return {i.uuid.uuid: (i.name, tuple(i.fields), i.fragment_bitmap, i.dataset_version) for i in section.indices}


def _differences(clone: Snapshot, source: Snapshot) -> list[str]:
    out = []
    mine, theirs = _fragments(clone), _fragments(source)
    if set(mine) != set(theirs):
        out.append(f"fragment ids {sorted(mine)} differ from the source's {sorted(theirs)}")
    changed = sorted(i for i in set(mine) & set(theirs) if mine[i] != theirs[i])
    if changed:
        out.append(f"fragment(s) {changed} differ from the source's (rows, data files or deletion file)")
    fields = [(f.id, f.name, f.logical_type, f.parent_id, f.nullable) for f in clone.manifest.fields]
    if fields != [(f.id, f.name, f.logical_type, f.parent_id, f.nullable) for f in source.manifest.fields]:
        out.append("the schema differs from the source's")
    if _indices(clone) != _indices(source):
        out.append(f"the indices differ from the source's ({len(_indices(clone))} here, {len(_indices(source))} "
                   "there, or their names, fields or covered fragments)")
    return out


@dataset_check("clones.faithful", "CLONE-006")
def faithful(ctx: DatasetContext) -> None:
    """A clone's first version equals the source version it was cloned from in fragments (ids, rows, data
    file paths, sizes and fields, deletion files), schema and indices (uuid, name, fields, covered
    fragments); base ids may differ (CLONE-006). Checked only while the source version can be read."""
    found = first_clone(ctx.dataset, ctx.snapshots)
    source = _source_snapshot(ctx, found) if found is not None else None
    if found is None or source is None:
        return
    for difference in _differences(found.snapshot, source):
        ctx.finding_at(found.first, "CLONE-006", found.snapshot.manifest_uri,
                       f"the clone of {source.root} version {source.version}: {difference}")


#: Files up to this size are compared byte for byte by ``deep_copies_identical``; larger ones by size.
MAX_COMPARED_BYTES = 16 * 1024 * 1024


@dataset_check("clones.deep_copies_identical", "CLONE-007")
def deep_copies_identical(ctx: DatasetContext) -> None:
    """Every file a deep clone's first version holds is byte-identical to the source version's file of
    the same kind and path (by size above MAX_COMPARED_BYTES), while the source is there (CLONE-007).
    Missing files are BASE-004's and DEL-001's findings."""
    found = first_clone(ctx.dataset, ctx.snapshots)
    if found is None or found.clone.is_shallow:
        return
    source = _source_snapshot(ctx, found)
    if source is None:
        return
    originals = {(f.kind, f.path): f.uri for f in source.files() if f.uri is not None}
    for copy in found.snapshot.files():
        original = originals.get((copy.kind, copy.path))
        if copy.uri is None or original is None:
            continue
        try:
            mine, theirs = ctx.storage.head(copy.uri).size, ctx.storage.head(original).size
            same = mine == theirs and (mine > MAX_COMPARED_BYTES
                                       or ctx.storage.get(copy.uri) == ctx.storage.get(original))
        except LanceSpecError:
            continue
        if not same:
            ctx.finding_at(found.first, "CLONE-007", copy.uri,
                           f"the deep copy {copy.uri} ({mine} bytes) differs from the source's {original} "
                           f"({theirs} bytes)")
