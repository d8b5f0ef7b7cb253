"""Open a dataset at a version, tag or branch into an immutable Snapshot with every file resolved.

Reading rules: Storage Layout spec (base-path resolution), Table Format spec (manifest, fragments, data and deletion
files), docs/lance-format.md §6 (manifest names, latest-version discovery) and §11 (refs). Nothing here writes.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, overload

import numpy as np

from . import flags as feature_flags
from .codec import (
    BranchRecord,
    FragmentColumns,
    ManifestFile,
    TagRecord,
    decode_branch,
    decode_deletions,
    decode_manifest_file,
    decode_tag,
)
from .errors import (
    CannotRead,
    DatasetNotFound,
    FormatError,
    LanceSpecError,
    LimitExceeded,
    ObjectNotFound,
    RefNotFound,
    UnresolvableFile,
    UnsupportedFeatureError,
    VersionNotFound,
)
from .layout import (
    BRANCHES_DIR,
    DELETION_EXTENSIONS,
    TAGS_DIR,
    VERSIONS_DIR,
    Base,
    FileKind,
    ManifestNaming,
    base_directory,
    branch_ref_path,
    branch_root,
    deletion_file_name,
    index_directory_name,
    manifest_name,
    parse_manifest_name,
    path_escape,
    ref_name_from_file,
    tag_ref_path,
)
from .proto import table_pb2
from .store import ObjectInfo, Storage, open_store
from .store.uri import join, normalize

_R = TypeVar("_R")


@dataclass(frozen=True)
class ResolvedFile:
    """A file a manifest references: as recorded (``path``, ``base_id``) and resolved (``uri``).

    ``size`` is the size the manifest records, None when it records none (0 means unknown for data
    files). ``uri`` is None when the file cannot be resolved; ``problem`` then says why.
    """

    kind: FileKind
    path: str
    base_id: int | None
    uri: str | None
    size: int | None = None
    problem: LanceSpecError | None = None


@dataclass(frozen=True)
class DeletionView:
    """A fragment's deletion file."""

    file: ResolvedFile
    file_type: int
    read_version: int
    id: int
    num_deleted_rows: int


@dataclass(frozen=True)
class FragmentView:
    """One fragment with its files resolved."""

    id: int
    physical_rows: int
    files: tuple[ResolvedFile, ...]
    deletion: DeletionView | None
    proto: table_pb2.DataFragment = field(repr=False, compare=False)

    @property
    def num_rows(self) -> int:
        """Live rows: physical rows less deleted ones."""
        return self.physical_rows - (self.deletion.num_deleted_rows if self.deletion else 0)


def deleted_offsets(storage: Storage, fragment: FragmentView) -> list[int]:
    """The fragment's deleted row offsets, read from its deletion file (empty without one)."""
    if fragment.deletion is None:
        return []
    uri = fragment.deletion.file.uri
    if uri is None:
        raise fragment.deletion.file.problem or LanceSpecError("unresolvable deletion file")
    return decode_deletions(storage.get(uri), fragment.deletion.file_type, uri, fragment.physical_rows)


@dataclass(frozen=True)
class Head:
    """One manifest of a dataset root, decoded, with its bases and no file resolved: what a writer needs
    to build the next version (resolving every file of a 10,000-fragment manifest costs far more than
    decoding it)."""

    root: str
    version: int
    naming: ManifestNaming
    manifest_uri: str
    manifest_file: ManifestFile = field(repr=False)
    bases: tuple[Base, ...]

    @property
    def manifest(self) -> table_pb2.Manifest:
        return self.manifest_file.manifest

    @property
    def branch(self) -> str | None:
        return self.manifest.branch if self.manifest.HasField("branch") else None


@dataclass(frozen=True)
class Snapshot(Head):
    """An immutable view of one manifest of a dataset root, every referenced file resolved."""

    fragments: Sequence[FragmentView]  # a FragmentViews, resolved as asked; a tuple where a test builds one
    index_files: tuple[ResolvedFile, ...]

    @property
    def num_rows(self) -> int:
        """Live rows of every fragment (from the columns, where the fragments were decoded as columns)."""
        fragments = self.fragments
        columns = fragments.columns if isinstance(fragments, FragmentViews) else None
        if columns is None or not isinstance(fragments, FragmentViews) or columns.irregular.any():
            return sum(f.num_rows for f in fragments)
        chosen = np.asarray(fragments.positions, np.int64)
        physical = columns.physical_rows[chosen]
        deleted = np.where(columns.has_deletion[chosen], columns.deleted_rows[chosen], np.uint64(0))
        if chosen.size and max(int(physical.max()), int(deleted.max())) >= 2**63 // max(1, chosen.size):
            return sum(int(p) - int(d) for p, d in zip(physical, deleted, strict=True))  # a sum could wrap
        return int(physical.sum()) - int(deleted.sum())

    def each_fragment(self) -> Iterator[FragmentView]:
        """Every fragment, resolved for the caller and not kept (unless something resolved it before): for a
        reader that walks a large version once."""
        fragments = self.fragments
        return fragments.transient() if isinstance(fragments, FragmentViews) else iter(fragments)

    def files(self) -> Iterator[ResolvedFile]:
        """Every data, deletion and index file of this version."""
        for fragment in self.fragments:
            yield from fragment.files
            if fragment.deletion is not None:
                yield fragment.deletion.file
        yield from self.index_files

    def problems(self) -> list[LanceSpecError]:
        """Resolution problems (a base_id with no base). Where the columns show no data or deletion file
        recorded against a base and no deletion file of an unknown type, no fragment can have one and only
        the index files are looked at (no fragment is resolved)."""
        fragments = self.fragments
        columns = fragments.columns if isinstance(fragments, FragmentViews) else None
        if columns is not None and not (columns.irregular.any() or columns.has_base.any()
                                        or columns.deletion_has_base.any()) and bool(
                np.isin(columns.deletion_type[columns.has_deletion], list(DELETION_EXTENSIONS)).all()):
            return [f.problem for f in self.index_files if f.problem is not None]
        return [f.problem for f in self.files() if f.problem is not None]


@dataclass
class ResolutionMemo:
    """What was resolved for earlier snapshots of one root: its versions share most of their files and
    fragments, so a reader that builds several snapshots of a root resolves each once (``Dataset`` keeps
    one). Both are kept per set of bases: ``files`` by (base_id, kind, path, size); ``fragments``, each
    fragment's resolved files and deletion file, by the fragment's DataFragment bytes, from the second
    snapshot with those bases on, and only for fragments resolved without a problem (a problem names the
    manifest it was met in). Nothing here holds a decoded manifest."""

    files: dict[tuple[Base, ...], dict[tuple[object, ...], ResolvedFile]] = field(default_factory=dict)
    fragments: dict[tuple[Base, ...], dict[bytes, tuple[tuple[ResolvedFile, ...], DeletionView | None]]] = field(
        default_factory=dict)


class _Resolver:
    """Resolution of one manifest's files: each (base_id, kind) directory worked out once."""

    def __init__(self, root: str, bases: tuple[Base, ...], memo: ResolutionMemo | None) -> None:
        self.root, self.bases = root, bases
        self.by_id = {b.id: b for b in bases}
        self.memo = memo.files.setdefault(bases, {}) if memo is not None else {}
        self._directories: dict[tuple[int | None, FileKind], str | LanceSpecError] = {}
        self.problems = 0  # files met that cannot be resolved

    def file(self, base_id: int | None, kind: FileKind, path: str, size: int | None, where: str,
             detail: str) -> ResolvedFile:
        """The file ``path`` of ``kind`` recorded against ``base_id`` by the manifest ``where``, as its
        ``detail`` (the fragment or index) names it; unresolvable, it carries the problem, naming both."""
        key = (base_id, kind, path, size)
        found = self.memo.get(key)
        if found is not None:
            return found
        directory = self._directories.get((base_id, kind))
        if directory is None:
            try:
                directory = base_directory(self.root, self.by_id, base_id, kind, where)
            except LanceSpecError as exc:
                directory = exc
            self._directories[(base_id, kind)] = directory
        if isinstance(directory, LanceSpecError):
            self.problems += 1
            problem = type(directory)(f"{detail}: {directory.message}", where or None)
            return ResolvedFile(kind, path, base_id, None, size, problem)
        reason = path_escape(path)
        if reason is not None:  # layout.resolve's rule: a path that could leave its directory resolves to nothing
            self.problems += 1
            escape = UnresolvableFile(f"{detail}: file path {path!r} {reason}; it is not followed", where or None)
            return ResolvedFile(kind, path, base_id, None, size, escape)
        found = self.memo[key] = ResolvedFile(kind, path, base_id, join(directory, path), size)
        return found


def bases_of(manifest: table_pb2.Manifest) -> tuple[Base, ...]:
    """The base paths a manifest registers (Storage Layout spec "BasePath Message")."""
    return tuple(
        Base(b.id, b.name if b.HasField("name") else None, b.path, b.is_dataset_root) for b in manifest.base_paths
    )


def _fragment_files(resolver: _Resolver, frag: table_pb2.DataFragment,
                    manifest_uri: str) -> tuple[tuple[ResolvedFile, ...], DeletionView | None]:
    """The data files and the deletion file of ``frag``, resolved."""
    where = f"fragment {frag.id}"
    files = tuple(
        resolver.file(df.base_id if df.HasField("base_id") else None, FileKind.DATA, df.path,
                      df.file_size_bytes or None, manifest_uri, where)
        for df in frag.files
    )
    if not frag.HasField("deletion_file"):
        return files, None
    d = frag.deletion_file
    base_id = d.base_id if d.HasField("base_id") else None
    if d.file_type in DELETION_EXTENSIONS:
        name = deletion_file_name(frag.id, d.read_version, d.id, d.file_type)
        resolved = resolver.file(base_id, FileKind.DELETION, name, None, manifest_uri, where)
    else:  # no name can be derived: the file is unresolvable, not a reason to fail the whole version
        name = f"{frag.id}-{d.read_version}-{d.id}"
        resolver.problems += 1
        resolved = ResolvedFile(FileKind.DELETION, name, base_id, None, None,
                                FormatError(f"{where}: unknown deletion file type {d.file_type}", manifest_uri))
    return files, DeletionView(resolved, d.file_type, d.read_version, d.id, d.num_deleted_rows)


class FragmentViews(Sequence[FragmentView]):
    """The fragments of one snapshot (or some of them: ``subset``), each resolved when first asked for.

    A check that reads the columns (``columns``: the manifest's fragments decoded as arrays, ``positions``:
    which of them this sequence holds) never makes a Python object per fragment; one that iterates gets
    each ``FragmentView`` resolved once and kept. Resolution is ``_fragment_files``'s whichever asks first."""

    def __init__(self, manifest_file: ManifestFile, resolve: Callable[[int], FragmentView],
                 positions: Sequence[int] | None = None, cache: list[FragmentView | None] | None = None) -> None:
        self._manifest_file = manifest_file
        self._resolve = resolve
        self._positions = positions
        self._cache: list[FragmentView | None] = (
            cache if cache is not None else [None] * len(manifest_file.manifest.fragments))

    @property
    def columns(self) -> FragmentColumns | None:
        """The whole manifest's fragments as columns (None where only the protobuf decoder read them)."""
        return self._manifest_file.fragment_columns

    @property
    def positions(self) -> Sequence[int]:
        """The positions in the manifest of the fragments this sequence holds, in order."""
        return range(len(self._cache)) if self._positions is None else self._positions

    def subset(self, positions: Sequence[int]) -> FragmentViews:
        """The fragments at ``positions`` of this sequence (positions in it, not in the manifest)."""
        mine = self.positions
        return FragmentViews(self._manifest_file, self._resolve, [mine[i] for i in positions], self._cache)

    def _view(self, position: int) -> FragmentView:
        found = self._cache[position]
        if found is None:
            found = self._cache[position] = self._resolve(position)
        return found

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, index: int) -> FragmentView: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[FragmentView, ...]: ...

    def __getitem__(self, index: int | slice) -> FragmentView | tuple[FragmentView, ...]:
        if isinstance(index, slice):
            return tuple(self._view(p) for p in self.positions[index])
        return self._view(self.positions[index])

    def __iter__(self) -> Iterator[FragmentView]:
        return (self._view(p) for p in self.positions)

    def transient(self) -> Iterator[FragmentView]:
        """Every fragment, those not resolved yet resolved for the caller only (not kept)."""
        cache, resolve = self._cache, self._resolve
        return (cache[p] or resolve(p) for p in self.positions)


def build_snapshot(root: str, version: int, naming: ManifestNaming, manifest_uri: str,
                   manifest_file: ManifestFile, memo: ResolutionMemo | None = None) -> Snapshot:
    """Resolve every file of a decoded manifest against ``root`` and the manifest's base paths (``memo``:
    files resolved for other snapshots of the same root, reused and extended). The fragments' files are
    resolved when first asked for (``FragmentViews``); the index files now."""
    manifest = manifest_file.manifest
    bases = bases_of(manifest)
    resolver = _Resolver(root, bases, memo)
    # fragments are remembered from the second snapshot with these bases on: one snapshot alone (the
    # common case, and the largest manifests) does not pay for a memo it never asks
    known = memo.fragments.get(bases) if memo is not None else None
    if memo is not None and known is None:
        memo.fragments[bases] = {}

    def resolve(position: int) -> FragmentView:
        frag = manifest.fragments[position]
        key = frag.SerializeToString(deterministic=True) if known is not None else b""
        resolved = known.get(key) if known is not None else None
        if resolved is None:
            problems = resolver.problems
            resolved = _fragment_files(resolver, frag, manifest_uri)
            if known is not None and resolver.problems == problems:
                known[key] = resolved
        return FragmentView(frag.id, frag.physical_rows, resolved[0], resolved[1], frag)

    index_files: list[ResolvedFile] = []
    if manifest_file.index_section is not None:
        for index in manifest_file.index_section.indices:
            index_dir = index_directory_name(index.uuid.uuid)
            where = f"index {index.name or index_dir}"
            base_id = index.base_id if index.HasField("base_id") else None
            for index_file in index.files:
                index_files.append(
                    resolver.file(base_id, FileKind.INDEX, f"{index_dir}/{index_file.path}",
                                  index_file.size_bytes or None, manifest_uri, where)
                )
    return Snapshot(root, version, naming, manifest_uri, manifest_file, bases,
                    FragmentViews(manifest_file, resolve), tuple(index_files))


@dataclass(frozen=True)
class VersionEntry:
    """A manifest found in ``_versions/``."""

    version: int
    naming: ManifestNaming
    uri: str
    size: int


#: Keys in the first page of a listing that may stop early (``Dataset.version_entries``): a writer seldom
#: finds more than a few versions newer than the one it knows; each further page is the store's full page.
EARLY_PAGE = 10
#: Decoded manifests a Dataset keeps (``Dataset.manifest_file``).
_DECODED_KEPT = 2


class Dataset:
    """A dataset root (the main branch's, or a branch's ``tree/{name}``) on some store."""

    def __init__(self, uri: str, storage: Storage | None = None, *, main_root: str | None = None,
                 branch: str | None = None) -> None:
        self.uri = normalize(uri)
        self.storage = storage if storage is not None else open_store()
        self.main_root = normalize(main_root) if main_root else self.uri
        self.branch_name = branch
        self._resolutions = ResolutionMemo()
        self._decoded: dict[str, ManifestFile] = {}
        self._decoded_lock = threading.Lock()  # certify decodes a root's manifests in several threads at once
        self._undecodable: dict[str, LanceSpecError] = {}

    @classmethod
    def open(cls, uri: str, storage_options: Mapping[str, str] | None = None, *,
             storage: Storage | None = None) -> Dataset:
        """Open the dataset at ``uri`` (on ``storage``, else a store made from ``storage_options``); raise
        DatasetNotFound when ``_versions/`` holds no manifest."""
        dataset = cls(uri, storage if storage is not None else open_store(storage_options))
        if not dataset.version_entries():
            raise DatasetNotFound("no dataset here: _versions/ holds no manifest", dataset.uri)
        return dataset

    # --- versions ---------------------------------------------------------------------------------

    def version_entries(self, allow_mixed: bool = False, newer_than: float | None = None) -> list[VersionEntry]:
        """Every attached version, ascending. Raises FormatError when V1 and V2 names are mixed, unless
        ``allow_mixed`` (a certifier wants to look at such a dataset, not stop at it).

        ``newer_than``: the caller needs only the newest version and those newer than this one (``math.inf``:
        the newest alone). Where the store lists in key order and the names are V2, the newest manifest is listed
        first, and the listing stops at the first page that reaches a version no newer (Lance's latest-version
        discovery on such stores, docs/lance-format.md §6); a V1 name met on the way makes it list everything."""
        prefix = join(self.uri, VERSIONS_DIR)
        early = newer_than is not None and self.storage.backend(prefix).lexically_ordered
        pages = self.storage.list_pages(prefix, EARLY_PAGE) if early else iter([self.storage.list(prefix, False)])
        entries: list[VersionEntry] = []
        for page in pages:
            for info in page:
                parsed = parse_manifest_name(info.uri.rsplit("/", 1)[-1])
                if parsed is not None and not parsed.detached:
                    entries.append(VersionEntry(parsed.version, parsed.naming, info.uri, info.size))
                    if len(entries) > self.storage.limits.max_versions:  # stop reading names past the limit
                        self._within("max_versions", len(entries), prefix, "the number of manifests in _versions/")
            if early and any(e.naming is not ManifestNaming.V2 for e in entries):
                return self.version_entries(allow_mixed)
            if early and entries and entries[-1].version <= (newer_than or 0):
                break
        self._within("max_versions", len(entries), prefix, "the number of manifests in _versions/")
        if len({e.naming for e in entries}) > 1 and not allow_mixed:
            raise FormatError("_versions/ mixes V1 and V2 manifest names", join(self.uri, VERSIONS_DIR))
        return sorted(entries, key=lambda e: e.version)

    def versions(self) -> list[int]:
        return [e.version for e in self.version_entries()]

    def latest_version(self) -> int:
        """The newest attached version, by listing ``_versions/`` (the version hint file is never trusted)."""
        entries = self.version_entries()
        if not entries:
            raise DatasetNotFound("no dataset here: _versions/ holds no manifest", self.uri)
        return entries[-1].version

    def _find_manifest(self, version: int) -> tuple[str, ManifestNaming] | None:
        for naming in (ManifestNaming.V2, ManifestNaming.V1):
            uri = join(self.uri, VERSIONS_DIR, manifest_name(version, naming))
            if self.storage.exists(uri):
                return uri, naming
        return None

    # --- snapshots --------------------------------------------------------------------------------

    def manifest_file(self, uri: str, data: bytes | None = None) -> ManifestFile:
        """The decoded manifest at ``uri``. A manifest never changes once written, so the last few decoded
        are kept: a writer reads the version it builds on, then the same version again at commit, and a
        commit that lost a race hands over the winner's bytes it read back (``data``: the object's bytes,
        already read) for its next attempt to judge and build on without reading them again."""
        with self._decoded_lock:
            found = self._decoded.pop(uri, None)
        if found is None:
            if uri in self._undecodable and data is None:
                raise self._undecodable[uri]
            try:
                found = decode_manifest_file(self.storage.get(uri) if data is None else data, uri,
                                             self.storage.limits)
            except CannotRead as exc:  # a limit reached while decoding, or a read the setup kept from it
                self.storage.note(exc)
                if isinstance(exc, LimitExceeded):  # remembered: many checks ask for the same manifest
                    self._undecodable[uri] = exc
                raise
            except FormatError as exc:  # remembered: many checks ask for the same manifest
                self._undecodable[uri] = exc
                raise
        with self._decoded_lock:  # the oldest is dropped: unguarded, another thread's insert breaks its lookup
            self._decoded[uri] = found
            while len(self._decoded) > _DECODED_KEPT:
                del self._decoded[next(iter(self._decoded))]
        return found

    def has_manifest_file(self, uri: str) -> bool:
        """Whether the manifest at ``uri`` is among those kept decoded (``manifest_file`` reads nothing)."""
        return uri in self._decoded

    def head(self, version: int | None = None, *, strict: bool = True) -> Head:
        """The manifest at ``version`` (default latest), decoded, with no file resolved. ``strict`` raises
        on reader flags this implementation lacks and on a manifest that records another version than its
        name (lenient, the version is the name's: a judge reports the mismatch as MAN-003)."""
        if version is None:  # the listing names the latest manifest: no probe for its name
            entries = self.version_entries(newer_than=math.inf)
            if not entries:
                raise DatasetNotFound("no dataset here: _versions/ holds no manifest", self.uri)
            version, naming, uri = entries[-1].version, entries[-1].naming, entries[-1].uri
        else:
            found = self._find_manifest(version)
            if found is None:
                raise VersionNotFound(f"version {version} has no manifest", join(self.uri, VERSIONS_DIR))
            uri, naming = found
        manifest_file = self.manifest_file(uri)
        if strict and manifest_file.manifest.version != version:
            raise FormatError(
                f"manifest records version {manifest_file.manifest.version} but its name says {version}", uri
            )
        if strict:
            unknown = feature_flags.unknown_bits(manifest_file.manifest.reader_feature_flags)
            if unknown:
                raise UnsupportedFeatureError(
                    f"reader feature flag bit(s) {', '.join(map(str, unknown))} not supported", uri
                )
        return Head(self.uri, version, naming, uri, manifest_file, bases_of(manifest_file.manifest))

    def snapshot(self, version: int | None = None, *, tag: str | None = None, branch: str | None = None,
                 strict: bool = True) -> Snapshot:
        """The snapshot at ``version`` (default latest), at a tag, or at the latest (or given) version of a
        branch. ``strict`` raises on unresolvable files and on reader flags this implementation lacks."""
        if tag is not None:
            record = self.tag(tag)
            target = self.branch(record.branch) if record.branch else self.main()
            return target.snapshot(record.version, strict=strict)
        if branch is not None and branch != "main":
            return self.branch(branch).snapshot(version, strict=strict)
        head = self.head(version, strict=strict)
        snap = build_snapshot(self.uri, head.version, head.naming, head.manifest_uri, head.manifest_file,
                              self._resolutions)
        if strict and snap.problems():
            raise snap.problems()[0]
        return snap

    # --- refs -------------------------------------------------------------------------------------

    def main(self) -> Dataset:
        """The main branch's dataset (this one, if it is main)."""
        return self if self.uri == self.main_root else Dataset(self.main_root, self.storage)

    def branch(self, name: str) -> Dataset:
        """The dataset of branch ``name``; raises RefNotFound when its ref file is absent."""
        if name not in self.branches():
            raise RefNotFound(f"branch {name!r} does not exist", join(self.main_root, branch_ref_path(name)))
        return Dataset(branch_root(self.main_root, name), self.storage, main_root=self.main_root, branch=name)

    def tags(self) -> dict[str, TagRecord]:
        """Every tag of the dataset (tags always live at the main root)."""
        return self._refs(TAGS_DIR, decode_tag)

    def tag(self, name: str) -> TagRecord:
        uri = join(self.main_root, tag_ref_path(name))
        try:
            return decode_tag(self.storage.get(uri), uri)
        except ObjectNotFound as exc:
            raise RefNotFound(f"tag {name!r} does not exist", uri) from exc

    def branches(self) -> dict[str, BranchRecord]:
        """Every branch of the dataset, by name."""
        return self._refs(BRANCHES_DIR, decode_branch)

    def _within(self, limit: str, value: int, where: str, what: str) -> None:
        """The run's ``limit`` checked; going past it is noted by the storage (the run stops on it, exit 2)
        even when a caller handles the error."""
        try:
            self.storage.limits.check(limit, value, where, what)
        except LimitExceeded as exc:
            self.storage.note(exc)
            raise

    def ref_files(self, directory: str) -> list[ObjectInfo]:
        """The ``*.json`` files of ``_refs/{tags,branches}/`` (``directory``) at the main root, listed, not
        read; more than the run's ``max_refs`` is refused before any is read."""
        folder = join(self.main_root, directory)
        listed = [info for info in self.storage.list(folder, recursive=False) if info.uri.endswith(".json")]
        self._within("max_refs", len(listed), folder, f"the number of ref files in {directory}/")
        return listed

    def _refs(self, directory: str, decode: Callable[[bytes, str], _R]) -> dict[str, _R]:
        """The ref records of ``_refs/{tags,branches}/`` at the main root, by name."""
        return {ref_name_from_file(info.uri.rsplit("/", 1)[-1]): decode(self.storage.get(info.uri), info.uri)
                for info in self.ref_files(directory)}

    def __repr__(self) -> str:
        return f"Dataset({self.uri!r}, branch={self.branch_name!r})"
