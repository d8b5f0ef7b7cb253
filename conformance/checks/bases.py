"""Checks of a manifest's base paths: the entries themselves, the base ids files record, overlapping
locations and bases declared as dataset roots (catalogue area BASE; Storage Layout spec "Base Path System", "File
Metadata Base References"; multi-base post "Reflections on the Design"; docs/lance-format.md §10).

Also the helpers the file and portability checks share: which bases a file may be resolved through
(ids that are unique and paths that are absolute; anything else is reported here and skipped there),
how two locations relate, and a cache of storage reads that lives as long as one certify run (the
run's Storage object).
"""

from __future__ import annotations

import os
import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from reference.errors import StorageError
from reference.layout import TREE_DIR, VERSIONS_DIR, Base, FileKind, parse_manifest_name
from reference.store import Storage
from reference.store.uri import is_absolute, join, local_path, normalize, scheme_of
from reference.table import Snapshot

from . import VersionContext, version_check
from .screen import suspects, with_base_ids

T = TypeVar("T")

# --- a cache for one certify run ---------------------------------------------------------------------

_RUN_CACHES: weakref.WeakKeyDictionary[Storage, dict[tuple[str, ...], Any]] = weakref.WeakKeyDictionary()


_LAST_RUN: tuple[weakref.ref[Storage] | None, dict[tuple[str, ...], Any]] = (None, {})


def run_cached(storage: Storage, key: tuple[str, ...], compute: Callable[[], T]) -> T:
    """``compute()``, remembered under ``key`` for as long as ``storage`` (one certify run) lives.
    Checks only read, so what one version's check learnt about an object holds for every other. (The
    last run's cache is kept at hand: checks ask hundreds of thousands of times per run.)"""
    global _LAST_RUN
    owner, cache = _LAST_RUN
    if owner is None or owner() is not storage:
        cache = _RUN_CACHES.setdefault(storage, {})
        _LAST_RUN = (weakref.ref(storage, _forget_last_run), cache)
    found = cache.get(key, _MISSING)
    if found is _MISSING:
        found = cache[key] = compute()
    return cast(T, found)


_MISSING = object()


def _forget_last_run(_: weakref.ref[Storage]) -> None:
    """Drop the cache kept at hand once its run's storage is gone."""
    global _LAST_RUN
    _LAST_RUN = (None, {})


# --- bases a file may be resolved through -------------------------------------------------------------


def unusable_base_ids(snap: Snapshot) -> set[int]:
    """Ids of bases no file can be resolved through unambiguously: ids used by more than one entry
    (BASE-001) and bases whose path is not absolute (BASE-002). ``bases.entries`` reports them; the
    checks that follow files skip files recorded against them."""
    counts = Counter(b.id for b in snap.bases)
    return {b.id for b in snap.bases if counts[b.id] > 1 or not _absolute(b)}


# --- locations ----------------------------------------------------------------------------------------


def _location(uri: str) -> tuple[str, str]:
    """A comparable form of a location: its scheme and normalized path (``/x`` and ``file:///x`` agree)."""
    scheme = scheme_of(uri)
    if scheme == "file":
        return scheme, os.path.normpath(local_path(uri))
    return scheme, normalize(uri)


def _below(inner: tuple[str, str], outer: tuple[str, str]) -> bool:
    """Whether ``inner`` lies strictly below ``outer``."""
    if inner[0] != outer[0] or inner[1] == outer[1]:
        return False
    prefix = outer[1] if outer[1].endswith("/") else outer[1] + "/"
    return inner[1].startswith(prefix)


def relation(a: str, b: str) -> str | None:
    """How location ``a`` relates to ``b``: ``"equals"``, ``"contains"``, ``"lies inside"`` or None."""
    la, lb = _location(a), _location(b)
    if la == lb:
        return "equals"
    if _below(lb, la):
        return "contains"
    if _below(la, lb):
        return "lies inside"
    return None


def branch_family(a: str, b: str, dataset_roots: Iterable[str]) -> bool:
    """Whether dataset roots ``a`` and ``b`` are a main root and its branch roots, or branch roots of one
    main root: two distinct locations, each of which is some dataset root M of ``dataset_roots`` or lies
    below its ``M/tree/``.

    Lance nests branch roots inside their main root (``{root}/tree/{name}``, a name with ``/`` nesting
    further), and a branch or a clone of a branch registers those roots as dataset-root bases. That
    nesting is the format's own layout, not an overlap: a root's cleanup only lists its standard
    subdirectories and never the ``tree/`` of another, and the family shares one store and credentials.
    """
    la, lb = _location(a), _location(b)
    if la == lb:  # one location registered twice is an overlap, whatever the layout
        return False
    return any(all(loc == _location(main) or _below(loc, _location(join(main, TREE_DIR))) for loc in (la, lb))
               for main in dataset_roots)


def dataset_root_locations(ctx: VersionContext) -> list[str]:
    """Every location of the version that is a dataset root: its own root, its main root (for a branch)
    and the absolute bases with ``is_dataset_root``."""
    return [ctx.dataset.uri, ctx.dataset.main_root,
            *(b.path for b in ctx.snap.bases if b.is_dataset_root and _absolute(b))]


def _absolute(base: Base) -> bool:
    return bool(base.path) and is_absolute(base.path)


def _describe(base: Base) -> str:
    return f"base {base.id} ({base.name!r}, {base.path})" if base.name is not None else f"base {base.id} ({base.path})"


# --- checks ---------------------------------------------------------------------------------------------


@version_check("bases.entries", "BASE-001", "BASE-002", "BASE-006")
def entries(ctx: VersionContext) -> None:
    """Every base path entry has an id no other entry has (BASE-001) and an absolute path or URI the
    object store can interpret on its own (BASE-002); SHOULD: names, when set, are unique (BASE-006)."""
    bases, where = ctx.snap.manifest.base_paths, ctx.snap.manifest_uri
    ids = Counter(b.id for b in bases)
    for base_id, n in sorted(ids.items()):
        if n > 1:
            paths = ", ".join(b.path for b in bases if b.id == base_id)
            ctx.finding("BASE-001", where, f"base id {base_id} is used by {n} entries ({paths})", f"base {base_id}")
    for base in bases:
        if not base.path or not is_absolute(base.path):
            ctx.finding("BASE-002", where, f"base {base.id} has path {base.path!r}, which is not an absolute path or "
                        "URI", f"base {base.id}", code="base_path_relative" if base.path else "base_path_empty")
    names = Counter(b.name for b in bases if b.HasField("name"))
    for name, n in sorted(names.items()):
        if n > 1:
            ids_named = ", ".join(str(b.id) for b in bases if b.HasField("name") and b.name == name)
            ctx.finding("BASE-006", where, f"base name {name!r} is used by {n} bases (ids {ids_named})",
                        f"bases {ids_named}")


@version_check("bases.references", "BASE-003", "BASE-005")
def references(ctx: VersionContext) -> None:
    """Every base_id a data file, deletion file or index records names a base path entry of the same
    manifest (BASE-003), the snapshot's resolution problems, which the checks that follow files skip.
    SHOULD: a deletion file's base, when it has one, is a dataset root (BASE-005): the Storage Layout's
    resolution allows a non-root base, but the Lance readers refuse a deletion file there (F-032)."""
    where = ctx.snap.manifest_uri
    by_id: dict[int, list[Base]] = {}
    for base in ctx.snap.bases:
        by_id.setdefault(base.id, []).append(base)
    known = ", ".join(str(i) for i in sorted(by_id)) or "none"
    for fragment in (f.proto for f in suspects(ctx.snap, with_base_ids)):
        for data_file in fragment.files:
            if data_file.HasField("base_id") and data_file.base_id not in by_id:
                ctx.finding("BASE-003", where, f"data file records base_id {data_file.base_id}, which names no base "
                            f"(defined: {known})", f"fragment {fragment.id} file {data_file.path}",
                            code="data_file_base_unknown")
        if fragment.HasField("deletion_file") and fragment.deletion_file.HasField("base_id"):
            base_id = fragment.deletion_file.base_id
            spot = f"fragment {fragment.id} deletion file"
            if base_id not in by_id:
                ctx.finding("BASE-003", where, f"deletion file records base_id {base_id}, which names no base "
                            f"(defined: {known})", spot, code="deletion_file_base_unknown")
            elif not any(b.is_dataset_root for b in by_id[base_id]):
                ctx.finding("BASE-005", where, f"deletion file lives in {_describe(by_id[base_id][0])}, which is not "
                            "a dataset root (is_dataset_root = false): the Lance readers refuse deletion files "
                            "there (F-032)", spot)
    index_section = ctx.snap.manifest_file.index_section
    for index in index_section.indices if index_section is not None else ():
        if index.HasField("base_id") and index.base_id not in by_id:
            ctx.finding("BASE-003", where, f"index records base_id {index.base_id}, which names no base "
                        f"(defined: {known})", f"index {index.name or '(unnamed)'}", code="index_base_unknown")


@version_check("bases.overlap", "BASE-007")
def overlap(ctx: VersionContext) -> None:
    """SHOULD: no base path equals, contains or lies inside another base or the dataset root (BASE-007):
    overlapping locations make garbage collection and credentials unsafe.

    Decision on branches and clones: a branch root lies at ``{main root}/tree/{name}`` and its manifest
    registers the main root (and, for a branch of a branch, the parent's root) as dataset-root bases; a
    clone of a branch registers both the main root and the branch root. Those dataset roots contain one
    another only through ``tree/``, the format's own place for branch roots, which no root's cleanup
    lists as its own files; the intent of the rule (cleaning one location never deletes another's
    files; one set of credentials per location) is kept, so that nesting is no finding (see
    ``branch_family``). A shallow clone's source root is not inside the clone, so it is no finding
    either. Bases whose path is not absolute are BASE-002's and are not compared.
    """
    bases = [b for b in ctx.snap.bases if _absolute(b)]
    roots = dataset_root_locations(ctx)
    own = ctx.dataset.uri
    where = ctx.snap.manifest_uri

    def family(a: str, a_is_root: bool, b: str, b_is_root: bool) -> bool:
        return a_is_root and b_is_root and branch_family(a, b, roots)

    pairs = _overlapping_pairs([b.path for b in bases])
    by_first: dict[int, list[int]] = {}
    for i, j in pairs:
        by_first.setdefault(i, []).append(j)
    for i, base in enumerate(bases):
        rel = relation(base.path, own)
        if rel is not None and not family(base.path, base.is_dataset_root, own, True):
            ctx.finding("BASE-007", where, f"{_describe(base)} {rel} the dataset root {own}", f"base {base.id}",
                        code="base_overlaps_root")
        for j in sorted(by_first.get(i, ())):
            other = bases[j]
            rel = relation(base.path, other.path)
            if rel is not None and not family(base.path, base.is_dataset_root, other.path, other.is_dataset_root):
                ctx.finding("BASE-007", where, f"{_describe(base)} {rel} {_describe(other)}", f"base {base.id}",
                            code="bases_overlap")
    if len(pairs) >= MAX_OVERLAPS:
        ctx.finding("BASE-007", where, f"more bases overlap: the listing stopped at {MAX_OVERLAPS} pairs",
                    code="bases_overlap_listing_cut")


MAX_OVERLAPS = 10_000
"""Overlapping pairs of bases BASE-007 lists; n bases equal to one another make n(n-1)/2 pairs."""


def _overlapping_pairs(paths: list[str]) -> list[tuple[int, int]]:
    """The pairs ``(i, j)``, ``i < j``, of ``paths`` where one equals or contains the other (``relation``), at
    most ``MAX_OVERLAPS``, in time n log n plus the pairs found, not n^2 (issue 32: 20,000 bases took
    minutes). Sorted by location with a trailing ``/``, the locations equal to or below one form the run of
    keys that follows it and start with it."""
    keys = []
    for index, path in enumerate(paths):
        scheme, location = _location(path)
        keys.append((scheme, location if location.endswith("/") else location + "/", index))
    keys.sort()
    found = []
    for at, (scheme, prefix, index) in enumerate(keys):
        following = at + 1
        while following < len(keys) and keys[following][0] == scheme and keys[following][1].startswith(prefix):
            other = keys[following][2]
            found.append((min(index, other), max(index, other)))
            if len(found) >= MAX_OVERLAPS:
                return sorted(found)
            following += 1
    return sorted(found)


def _holds_manifest(storage: Storage, path: str) -> bool:
    def compute() -> bool:
        listed = storage.list(join(path, VERSIONS_DIR), recursive=False)
        names = (parse_manifest_name(info.uri.rsplit("/", 1)[-1]) for info in listed)
        return any(parsed is not None and not parsed.detached for parsed in names)

    return run_cached(storage, ("holds-manifest", path), compute)


def _holds_anything(storage: Storage, directory: str) -> bool:
    def compute() -> bool:
        # Data files sit directly in data/: a shallow listing usually answers without walking the tree.
        return any(next(iter(storage.list(directory, recursive=deep)), None) is not None for deep in (False, True))

    return run_cached(storage, ("holds-anything", directory), compute)


@version_check("bases.dataset_root_bases", "BASE-008")
def dataset_root_bases(ctx: VersionContext) -> None:
    """SHOULD: a base with is_dataset_root = true points at a location laid out as a dataset root
    (BASE-008): its ``_versions/`` holds a manifest (a clone or branch source), or at least the standard
    subdirectories its files resolve into (``data/``, ``_deletions/``, ``_indices/``) hold something, as
    with pylance's data-only dataset-root bases. A base no file uses and without manifests is not judged.
    Bases that cannot be listed (an unsupported store) are skipped."""
    unusable = unusable_base_ids(ctx.snap)
    if not any(base.is_dataset_root and base.id not in unusable for base in ctx.snap.bases):
        return  # nothing to judge: no file need be looked at
    used: dict[int, set[FileKind]] = {}
    for resolved in ctx.snap.files():
        if resolved.base_id is not None:
            used.setdefault(resolved.base_id, set()).add(resolved.kind)
    for base in ctx.snap.bases:
        if not base.is_dataset_root or base.id in unusable:
            continue
        try:
            if _holds_manifest(ctx.storage, base.path):
                continue
            empty = [kind.value for kind in sorted(used.get(base.id, ()), key=lambda k: k.value)
                     if not _holds_anything(ctx.storage, join(base.path, kind.value))]
        except StorageError:
            continue
        if empty:
            ctx.finding("BASE-008", ctx.snap.manifest_uri,
                        f"{_describe(base)} is declared a dataset root but holds no manifest in {VERSIONS_DIR}/ and "
                        f"nothing in {', '.join(d + '/' for d in empty)}, where its files resolve", f"base {base.id}")
