"""Checks of the files a version references: data files exist with their recorded size and a valid
footer, hold physical_rows rows, and deletion files exist and say what the manifest says (catalogue
areas BASE, CLONE, MAN, DEL; Storage Layout spec "File Metadata Base References"; Table Format spec "Data Files",
"Deletion Files"; docs/lance-format.md §5.2, §9, §17 items 6-7).

Files are skipped here when another check owns what is wrong with them: an unresolvable base_id or a
deletion file in a non-root base (``bases.references``), a base id used twice or a base path that is
not absolute (``bases.entries``), a path that is not relative (``portability.relative_paths``).
What is read from storage is cached for the certify run, so a file every version references is read
once.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from reference.codec import FragmentColumns
from reference.codec.datafile import (
    FOOTER_VERSION_FOR,
    OFFSET_ENTRY,
    TAIL_READ,
    V2_FOOTER_SIZE,
    TailedObject,
    decode_descriptor,
    descriptor_bytes,
    descriptor_span,
    read_footer,
)
from reference.codec.deletion import arrow_batches, deserialize_bitmap
from reference.errors import FormatError, LanceSpecError, ObjectNotFound, StorageError
from reference.layout import DELETION_ARROW, DELETION_BITMAP, FileKind
from reference.plain_fragments import PlainFragments, plain_fragments
from reference.proto import table_pb2
from reference.store import Storage, Tail
from reference.store.uri import scheme_of
from reference.table import DeletionView, FragmentView, ResolvedFile, Snapshot

from . import Prefetch, VersionContext, version_check
from .bases import run_cached, unusable_base_ids
from .clones import first_clone
from .portability import is_relative_path
from .screen import Bools, suspects

# --- what storage says about a file ------------------------------------------------------------------


class _DataFileState(NamedTuple):
    """A data file as found: its size (None when absent), its footer's ``(major, minor)`` version (None when
    unreadable), its row count (None for a legacy file or one without a footer; a sentence when it cannot be
    read), the ``(id, name, logical type)`` of each field of its own schema (its FileDescriptor; None when there
    is no count; one shared tuple for the files of one schema) and, when something is wrong with the file
    itself, a sentence saying what and a word for it (``Finding.code``). A tuple: a run keeps one per file, a
    million of them for a million-fragment version."""

    size: int | None
    version: tuple[int, int] | None
    problem: str | None
    rows: int | str | None = None
    code: str = ""
    fields: tuple[tuple[int, str, str], ...] | None = None


#: FileDescriptors decoded in one run, by their bytes: files written alike (same schema, same row count) share
#: one, decoded once. Only this many are kept, each of at most ``_DESCRIPTOR_BYTES_KEPT`` bytes (16 MB in all,
#: whatever a dataset's descriptors weigh).
_DESCRIPTORS_KEPT = 4096
_DESCRIPTOR_BYTES_KEPT = 4096
#: Footer versions kept as shared tuples (a dataset may give each file another).
_VERSIONS_KEPT = 256
#: States of files found alike (size, footer version, row count, schema) kept to be shared by the files after them.
_SHARED_STATES_KEPT = 65536


def _states(storage: Storage) -> dict[str, _DataFileState]:
    """The data files found in this run (``storage``'s), by URI."""
    return run_cached(storage, ("data-file-states",), dict)


def _data_file_state(storage: Storage, uri: str) -> _DataFileState:
    """Everything the file checks ask of a data file, from one suffix read (a second only when the
    metadata reaches further back than ``TAIL_READ``); found once per run."""
    states = _states(storage)
    found = states.get(uri)
    if found is None:
        found = states[uri] = _read_data_file(storage, uri)
    return found


def _read_data_file(storage: Storage, uri: str) -> _DataFileState:
    try:
        tail: Tail | StorageError = storage.get_tail(uri, TAIL_READ)
    except StorageError as exc:
        tail = exc
    return _found_data_file(storage, uri, tail)


def _found_data_file(storage: Storage, uri: str, tail: Tail | StorageError) -> _DataFileState:
    """The state of the data file ``uri`` from its suffix read (``TAIL_READ`` bytes), or from the error it met."""
    if isinstance(tail, ObjectNotFound):
        return _DataFileState(None, None, "does not exist", code="missing")
    if isinstance(tail, StorageError):
        return _DataFileState(None, None, f"cannot be read: {tail.message}", code="unreadable")
    obj = TailedObject(storage, uri, tail)
    try:
        footer = read_footer(obj)
    except FormatError as exc:
        return _DataFileState(obj.size, None, f"has no valid Lance footer: {exc.message}", code="footer_invalid")
    version = _VERSIONS.get((footer.major, footer.minor)) or (footer.major, footer.minor)
    if len(_VERSIONS) < _VERSIONS_KEPT:
        version = _VERSIONS.setdefault(version, version)
    if footer.is_legacy:
        return _DataFileState(obj.size, version, None)
    try:
        data = descriptor_bytes(obj, footer)
    except LanceSpecError as exc:
        return _DataFileState(obj.size, version, None, exc.message)
    descriptors: dict[bytes, tuple[int, tuple[tuple[int, str, str], ...]]] = run_cached(
        storage, ("data-file-descriptors",), dict)
    known = descriptors.get(data)
    if known is None:
        try:
            descriptor = decode_descriptor(data, uri)
        except LanceSpecError as exc:
            return _DataFileState(obj.size, version, None, exc.message)
        fields = tuple((f.id, f.name, f.logical_type) for f in descriptor.schema.fields)
        schemas: dict[tuple[tuple[int, str, str], ...], tuple[tuple[int, str, str], ...]] = run_cached(
            storage, ("data-file-schemas",), dict)
        known = (int(descriptor.length), schemas.setdefault(fields, fields))
        if len(descriptors) < _DESCRIPTORS_KEPT and len(data) <= _DESCRIPTOR_BYTES_KEPT:
            descriptors[data] = known
    # files found alike share one state (a schema tuple is kept for the run by ``data-file-schemas``: its id holds)
    shared: dict[tuple[int, tuple[int, int], int | str, int], _DataFileState] = run_cached(
        storage, ("data-file-shared-states",), dict)
    key = (obj.size, version, known[0], id(known[1]))
    state = shared.get(key)
    if state is None:
        state = _DataFileState(obj.size, version, None, known[0], fields=known[1])
        if len(shared) < _SHARED_STATES_KEPT:
            shared[key] = state
    return state


#: One tuple per footer version met (a state per file shares it).
_VERSIONS: dict[tuple[int, int], tuple[int, int]] = {}


def _followable(resolved: ResolvedFile, unusable: set[int]) -> bool:
    """Whether the file can be followed to storage without judging what other checks own; ``unusable``:
    the snapshot's ``unusable_base_ids``."""
    if resolved.uri is None or resolved.problem is not None:
        return False
    if resolved.base_id is not None and resolved.base_id in unusable:
        return False
    return resolved.kind is not FileKind.DATA or is_relative_path(resolved.path)


def _followed_in(fragments: Iterable[FragmentView], unusable: set[int]
                 ) -> Iterator[tuple[FragmentView, ResolvedFile, table_pb2.DataFile, str]]:
    for fragment in fragments:
        for resolved, data_file in zip(fragment.files, fragment.proto.files, strict=True):
            if _followable(resolved, unusable):
                assert resolved.uri is not None
                yield fragment, resolved, data_file, resolved.uri


def _followed_data_files(snap: Snapshot) -> Iterator[tuple[FragmentView, ResolvedFile, table_pb2.DataFile, str]]:
    """``(fragment, resolved file, DataFile message, uri)`` of every data file the file checks follow
    (``_followable``)."""
    return _followed_in(snap.fragments, unusable_base_ids(snap))


def _followed_uris(snap: Snapshot) -> list[str]:
    """The URI of every data file the file checks follow: those of the plain fragments (every one followed:
    no base id, a relative path) from the columns, the others' as ``_followed_data_files`` finds them."""
    plain = plain_fragments(snap)
    if plain is None:
        return [uri for _, _, _, uri in _followed_data_files(snap)]
    others = [snap.fragments[i] for i in plain.others.tolist()]
    return plain.uris + [uri for _, _, _, uri in _followed_in(others, unusable_base_ids(snap))]


def _judged_one_by_one(snap: Snapshot, flagged: Callable[[PlainFragments], Iterable[int]]
                       ) -> Iterator[tuple[FragmentView, ResolvedFile, table_pb2.DataFile, str]]:
    """What a data-file rule must judge file by file: every followed data file of the fragments that are not
    plain, and of the plain fragments ``flagged`` picks (positions in ``plain.fragments``' sequence: those in
    which the rule could find something). Without columns, every followed data file."""
    plain = plain_fragments(snap)
    if plain is None:
        yield from _followed_data_files(snap)
        return
    chosen = sorted({*flagged(plain), *plain.others.tolist()})
    yield from _followed_in((snap.fragments[i] for i in chosen), unusable_base_ids(snap))


def _inherited(ctx: VersionContext) -> frozenset[tuple[str, int | None]]:
    """The data files (path, base_id) a shallow clone (or branch) root inherited from its source: those of
    its first version, when that version was made by a shallow Clone. Empty for any other root."""

    def compute() -> frozenset[tuple[str, int | None]]:
        found = first_clone(ctx.dataset, {ctx.snap.version: ctx.snap})  # None: no clone, or history's finding
        if found is None or not found.clone.is_shallow:
            return frozenset()
        return frozenset((f.path, f.base_id) for fragment in found.snapshot.fragments for f in fragment.files)

    return run_cached(ctx.storage, ("inherited", ctx.dataset.uri), compute)


def _expected_footer_versions(major: int, minor: int) -> set[tuple[int, int]] | None:
    """The footer versions a DataFile's recorded version allows (None: any, for versions not mapped)."""
    if major == 0:
        return None
    mapped = FOOTER_VERSION_FOR.get((major, minor))
    return None if mapped is None else {mapped, (major, minor)}


#: The most data files read by one job of the prefetch on local disk (where the reads run on one thread anyway; a
#: batch of ``reference.store.local._SHARED_FROM`` files or more has a helper process read a share of them on the
#: second core); the files are cut into batches of equal size; on an object store each file is a job of its own,
#: so that the run's threads share them.
_LOCAL_BATCH = 32_768


def _data_file_reads(ctx: VersionContext) -> Iterator[Prefetch]:
    """The suffix read of every data file the file checks will follow, not found before in this run."""
    storage, states = ctx.storage, _states(ctx.storage)
    uris = [uri for uri in _followed_uris(ctx.snap) if uri not in states]
    if scheme_of(ctx.snap.root) != "file":
        for uri in uris:
            yield ("data-file", uri), functools.partial(_data_file_state, storage, uri)
        return
    if not uris:
        return
    size = -(-len(uris) // -(-len(uris) // _LOCAL_BATCH))  # the fewest batches, of equal size
    for at in range(0, len(uris), size):
        batch = uris[at:at + size]
        yield ("data-files", batch[0], batch[-1], str(len(batch))), functools.partial(_read_all, storage, batch)


def _read_all(storage: Storage, uris: list[str]) -> None:
    """Find every data file of ``uris`` (the prefetch's job on local disk: their tails read at once,
    ``Storage.get_tails``; a file that cannot be read is a state saying so, never an exception). A file alike
    one found before in the batch (``_Alike``) takes that one's state."""
    states = _states(storage)
    wanted = [uri for uri in dict.fromkeys(uris) if uri not in states]
    alike = _Alike()
    for uri, tail in zip(wanted, storage.get_tails(wanted, TAIL_READ), strict=True):
        state = alike.state(tail)
        if state is None:
            state = _found_data_file(storage, uri, tail)
            alike.learn(storage, uri, tail, state)
        states[uri] = state


class _Alike:
    """The states of a batch's v2 data files found whole from their tails, by what decides them. A state is a
    function of the file's size and of three pieces of it (``_found_data_file`` reads nothing else): its footer
    (the last ``V2_FOOTER_SIZE`` bytes, where the offset tables lie), entry 0 of its global-buffer offset table
    (where global buffer 0 lies) and global buffer 0 (the FileDescriptor). So a file of the same size and tail
    length whose three pieces equal those of a file found before has that file's state: files written alike (a
    million one-row fragments of one schema) are found by three slices and comparisons. Looked up by size and
    footer bytes; at most ``_ALIKE_KEPT`` kinds a batch."""

    def __init__(self) -> None:
        self._kinds: dict[tuple[int, bytes], tuple[int, int, bytes, int, bytes, _DataFileState]] = {}

    def state(self, tail: Tail | StorageError) -> _DataFileState | None:
        if not isinstance(tail, Tail) or len(tail.data) < V2_FOOTER_SIZE:
            return None
        data = tail.data
        kind = self._kinds.get((tail.size, data[-V2_FOOTER_SIZE:]))
        if kind is None:
            return None
        length, entry_at, entry, descriptor_at, descriptor, state = kind
        if (len(data) == length and data[entry_at:entry_at + len(entry)] == entry
                and data[descriptor_at:descriptor_at + len(descriptor)] == descriptor):
            return state
        return None

    def learn(self, storage: Storage, uri: str, tail: Tail | StorageError, state: _DataFileState) -> None:
        """Keep ``state``, found from ``tail``, for the files alike: a v2 file whose FileDescriptor and offset
        table were read from its tail, the first of its size and footer bytes."""
        if (not isinstance(tail, Tail) or state.problem is not None or state.code or not isinstance(state.rows, int)
                or state.fields is None or len(tail.data) < V2_FOOTER_SIZE or len(self._kinds) >= _ALIKE_KEPT):
            return
        data = tail.data
        key = (tail.size, data[-V2_FOOTER_SIZE:])
        if key in self._kinds:
            return
        obj = TailedObject(storage, uri, tail)
        try:
            footer = read_footer(obj)
            position, length = descriptor_span(obj, footer)
        except LanceSpecError:
            return
        covered_from = tail.size - len(data)
        assert footer.gbo_table_pos is not None  # a v2 footer: descriptor_span refuses a legacy one
        entry_at, descriptor_at = footer.gbo_table_pos - covered_from, position - covered_from
        if entry_at < 0 or descriptor_at < 0:  # read from storage, not from the tail
            return
        self._kinds[key] = (len(data), entry_at, data[entry_at:entry_at + OFFSET_ENTRY.size], descriptor_at,
                            data[descriptor_at:descriptor_at + length], state)


#: Kinds of files kept by ``_Alike`` for one batch of ``_LOCAL_BATCH`` files.
_ALIKE_KEPT = 64


@dataclass(frozen=True)
class PlainStates:
    """The states of the data files of a version's plain fragments, in ``plain.uris``' order, without a Python
    object per file: ``codes`` gives each file's state as an index into ``distinct``, the distinct state tuples
    (files found alike share one, ``_Alike``: a million one-row files have a few hundred)."""

    codes: npt.NDArray[np.unsignedinteger[Any]]
    distinct: list[_DataFileState]

    def column(self, value: Callable[[_DataFileState], object], dtype: type[np.generic]) -> npt.NDArray[Any]:
        """``value`` of each file's state, as an array (``value`` called once per distinct state)."""
        out: npt.NDArray[Any] = np.fromiter((value(s) for s in self.distinct), dtype, len(self.distinct))[self.codes]
        return out


def plain_states(plain: PlainFragments, storage: Storage) -> PlainStates:
    """The states of ``plain``'s data files (``PlainStates``), found once for the checks of one version that
    screen them (``data_files_exist``, ``physical_rows``, ``evolution.data_file_field_ids``: the run keeps the
    last fragments' states)."""
    last: list[Any] = run_cached(storage, ("plain-states",), list)  # [the fragments (a weak reference), their states]
    if last and last[0]() is plain:
        return cast(PlainStates, last[1])
    states = _states(storage)
    index: dict[int, tuple[int, _DataFileState]] = {}  # id() of a state -> its code and the state
    found = (states.get(uri) or _data_file_state(storage, uri) for uri in plain.uris)
    codes = np.fromiter((index.setdefault(id(s), (len(index), s))[0] for s in found), np.uint32, len(plain.uris))
    distinct = [state for _, state in index.values()]  # by code: in order of first sight
    table = PlainStates(codes.astype(np.min_scalar_type(len(distinct))), distinct)  # a million files, a few states
    last[:] = [weakref.ref(plain, lambda _: last.clear()), table]  # kept no longer than the fragments
    return table


def _owners_of(plain: PlainFragments, flagged: Bools) -> list[int]:
    """The positions (in the snapshot's fragment sequence) of the plain fragments owning a flagged data file
    (``flagged``: per data file of ``plain``), ascending."""
    return [int(owner) for owner in np.unique(plain.owners[flagged])]


def _footer_version_suspects(plain: PlainFragments, found: PlainStates) -> Bools:
    """Per data file of ``plain``: whether its footer's version could be one its DataFile's recorded version does
    not allow (``_expected_footer_versions``): a superset, every file found with a footer of another version than
    the recorded one and than the one ``FOOTER_VERSION_FOR`` maps it to."""
    columns, files = plain.columns, plain.files
    has = found.column(lambda s: s.version is not None, np.bool_)
    major = found.column(lambda s: s.version[0] if s.version is not None else 0, np.uint64)
    minor = found.column(lambda s: s.version[1] if s.version is not None else 0, np.uint64)
    recorded_major, recorded_minor = columns.major[files], columns.minor[files]
    fine = (major == recorded_major) & (minor == recorded_minor)
    for (from_major, from_minor), (to_major, to_minor) in FOOTER_VERSION_FOR.items():
        mapped = (recorded_major == from_major) & (recorded_minor == from_minor)
        fine |= mapped & (major == to_major) & (minor == to_minor)
    out: Bools = has & ~fine
    return out


@version_check("files.data_files_exist", "BASE-004", "CLONE-001", prefetch=_data_file_reads, fragment_local=True)
def data_files_exist(ctx: VersionContext) -> None:
    """Every data file resolves (root plus data/ without a base_id; base plus data/ for a dataset-root
    base; the base itself otherwise) to an existing object whose size equals file_size_bytes (when
    recorded), ending in a valid Lance footer (40-byte v2 footer with consistent offset tables, or the
    16-byte legacy one) of the version the DataFile records (BASE-004). A file a shallow clone or branch
    inherited from its source that fails this is reported as CLONE-001 instead: every inherited file
    resolves through a base and exists. (A plain fragment's files are screened from the columns first: one
    that is found, of the size recorded, with a footer of the version recorded, draws nothing.)"""

    def flagged(plain: PlainFragments) -> list[int]:
        found = plain_states(plain, ctx.storage)
        problem = found.column(lambda s: s.problem is not None, np.bool_)
        size = found.column(lambda s: s.size or 0, np.uint64)  # None: a problem, flagged already
        recorded = plain.columns.file_size[plain.files]
        wrong = problem | ((recorded != 0) & (size != recorded)) | _footer_version_suspects(plain, found)
        return _owners_of(plain, wrong)

    inherited: frozenset[tuple[str, int | None]] | None = None
    for fragment, resolved, data_file, uri in _judged_one_by_one(ctx.snap, flagged):
        state = _data_file_state(ctx.storage, uri)
        problem, code = state.problem, state.code
        if problem is None and resolved.size is not None and state.size != resolved.size:
            problem, code = f"is {state.size} bytes, but the manifest records {resolved.size}", "size_mismatch"
        if problem is None and state.version is not None:
            allowed = _expected_footer_versions(data_file.file_major_version, data_file.file_minor_version)
            found = state.version
            if allowed is not None and found not in allowed:
                problem = (f"has a footer of file version {found[0]}.{found[1]}, but the manifest records "
                           f"{data_file.file_major_version}.{data_file.file_minor_version}")
                code = "footer_version_mismatch"
        if problem is None:
            continue
        if inherited is None:
            inherited = _inherited(ctx)
        where = f"fragment {fragment.id}"
        if (resolved.path, resolved.base_id) in inherited:
            ctx.finding("CLONE-001", uri, f"inherited data file {uri} {problem}", where,
                        code=f"inherited_data_file_{code}")
        else:
            ctx.finding("BASE-004", uri, f"data file {uri} {problem}", where, code=f"data_file_{code}")


@version_check("files.physical_rows", "MAN-004", prefetch=_data_file_reads, fragment_local=True)
def physical_rows(ctx: VersionContext) -> None:
    """A fragment's physical_rows equals the row count of each of its data files, deleted rows included
    (MAN-004). The count is the ``length`` of the file's FileDescriptor (global buffer 0), read without
    decoding columns. Legacy (0.x) files keep it elsewhere and are skipped, as are files that are missing
    or have a bad footer (BASE-004's). (A plain fragment's files are screened from the columns first.)"""

    def flagged(plain: PlainFragments) -> list[int]:
        found = plain_states(plain, ctx.storage)
        counted = found.column(lambda s: isinstance(s.rows, int), np.bool_)
        unreadable = found.column(lambda s: isinstance(s.rows, str), np.bool_)
        rows = found.column(lambda s: s.rows if isinstance(s.rows, int) else 0, np.uint64)
        columns = plain.columns
        recorded = columns.physical_rows[columns.file_fragment[plain.files]]
        return _owners_of(plain, unreadable | (counted & (rows != recorded)))

    for fragment, _, _, uri in _judged_one_by_one(ctx.snap, flagged):
        rows = _data_file_state(ctx.storage, uri).rows
        where = f"fragment {fragment.id}"
        if isinstance(rows, str):
            ctx.finding("MAN-004", uri, f"the row count of {uri} cannot be read: {rows}", where,
                        code="row_count_unreadable")
        elif rows is not None and rows != fragment.physical_rows:
            ctx.finding("MAN-004", uri, f"data file {uri} holds {rows} rows, the fragment's physical_rows is "
                        f"{fragment.physical_rows}", where, code="row_count_mismatch")


# --- deletion files -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Deletions:
    """A deletion file as found: absent, not of its type (``problem``), or what its offsets say against
    the fragment's physical_rows: how many are distinct, how many are not below it and the first few of
    those, and for ``.arrow`` the Arrow type of the column. Offsets are counted where they lie (Arrow
    compute, roaring rank and select), never expanded into a list: a 14 KB bitmap can hold 2^26 of them."""

    exists: bool
    distinct: int = 0
    outside: int = 0
    first_outside: tuple[int, ...] = ()
    arrow_schema: str | None = None
    problem: str | None = None


_SHOWN_OFFSETS = 5


def _decode_arrow(data: bytes, physical_rows: int) -> _Deletions:
    """Lenient reading of an ``.arrow`` deletion file by DEL-002's rule (one record batch, one column of
    integers, no nulls), so that a column other than the readers' ``row_id: uint32 not null`` is reported
    as DEL-005 with its offsets still judged by DEL-003 and DEL-004."""
    try:
        batches = arrow_batches(data, "", physical_rows)
    except FormatError as exc:
        return _Deletions(True, problem=f"is {exc.message}")
    if len(batches) != 1:
        return _Deletions(True, problem=f"holds {len(batches)} record batches, not exactly one")
    batch = batches[0]
    if batch.num_columns != 1:
        return _Deletions(True, problem=f"has {batch.num_columns} columns, not exactly one")
    column = batch.column(0)
    if not pa.types.is_integer(column.type):
        return _Deletions(True, problem=f"has a column of type {column.type}, not of integers")
    if column.null_count:
        return _Deletions(True, problem=f"has {column.null_count} null offset(s)")
    field = batch.schema.field(0)
    schema = f"{field.name}: {field.type}{'' if field.nullable else ' not null'}"
    # One sort, then linear passes: memory a few times the column's, never a hash table of its values (4.2M
    # offsets through pc.unique wanted half a gigabyte at a time; issue 32).
    values = np.sort(column.to_numpy(zero_copy_only=False))
    distinct = values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values
    # physical_rows is a u64 a manifest may set past what the column's type holds: then no offset reaches it
    # (compared in the column's own type, never through an int64 the column's values may not fit)
    bits = column.type.bit_width
    signed = pa.types.is_signed_integer(column.type)
    largest = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    outside = np.zeros(len(distinct), dtype=bool)
    if physical_rows <= largest:
        outside |= distinct >= np.array(physical_rows, dtype=distinct.dtype)
    if signed:
        outside |= distinct < 0
    beyond = distinct[outside]
    return _Deletions(True, len(distinct), len(beyond), tuple(int(v) for v in beyond[:_SHOWN_OFFSETS]), schema)


def _decode_bitmap(data: bytes, physical_rows: int, uri: str) -> _Deletions:
    try:
        bitmap = deserialize_bitmap(data, uri)
    except FormatError as exc:
        return _Deletions(True, problem=exc.message)
    # a bitmap holds u32 offsets: a physical_rows past 2^32 (a u64 in the manifest) leaves none of them outside
    below = bitmap.rank(min(physical_rows - 1, 2**32 - 1)) if physical_rows > 0 else 0
    outside = len(bitmap) - below
    return _Deletions(True, len(bitmap), outside,
                      tuple(bitmap[below + k] for k in range(min(outside, _SHOWN_OFFSETS))))


def _deletions(storage: Storage, uri: str, file_type: int, physical_rows: int) -> _Deletions:
    def compute() -> _Deletions:
        try:
            data = storage.get(uri)
        except ObjectNotFound:
            return _Deletions(False)
        except LanceSpecError as exc:  # not a regular file, too large, unreadable
            return _Deletions(True, problem=f"cannot be read: {exc.message}")
        if file_type == DELETION_ARROW:
            return _decode_arrow(data, physical_rows)
        if file_type == DELETION_BITMAP:
            return _decode_bitmap(data, physical_rows, uri)
        raise AssertionError(f"deletion file type {file_type} is checked before reading")

    return run_cached(storage, ("deletions", uri, str(file_type), str(physical_rows)), compute)


#: The schema of an ``.arrow`` deletion file's one column that the Lance readers accept (DEL-005).
DELETION_ARROW_SCHEMA = "row_id: uint32 not null"


def _with_deletion(columns: FragmentColumns) -> Bools:
    """Screen: the fragments that record a deletion file (no other has one to judge)."""
    return columns.has_deletion


def _followed_deletions(snap: Snapshot) -> Iterator[tuple[FragmentView, DeletionView, str]]:
    """``(fragment, deletion, uri)`` of every deletion file of a known type the file checks follow
    (``_followable``)."""
    unusable = unusable_base_ids(snap)
    for fragment in suspects(snap, _with_deletion):
        deletion = fragment.deletion
        if (deletion is not None and deletion.file_type in (DELETION_ARROW, DELETION_BITMAP)
                and _followable(deletion.file, unusable)):
            assert deletion.file.uri is not None
            yield fragment, deletion, deletion.file.uri


def _deletion_file_reads(ctx: VersionContext) -> Iterator[Prefetch]:
    """The read of every deletion file ``deletion_files`` will follow."""
    for fragment, deletion, uri in _followed_deletions(ctx.snap):
        file_type, rows = deletion.file_type, fragment.physical_rows
        yield ("deletions", uri, str(file_type), str(rows)), functools.partial(_deletions, ctx.storage, uri,
                                                                                 file_type, rows)


@version_check("files.deletion_files", "DEL-001", "DEL-002", "DEL-003", "DEL-004", "DEL-005",
               prefetch=_deletion_file_reads, fragment_local=True)
def deletion_files(ctx: VersionContext) -> None:
    """For every fragment with a deletion file: it exists at ``_deletions/{fragment_id}-{read_version}-{id}
    .{arrow|bin}`` of the root it resolves to (DEL-001); its content matches its type, ``.arrow`` an
    Arrow IPC file of one record batch with one non-null integer column, ``.bin`` a portable 32-bit
    roaring bitmap (DEL-002); it holds exactly num_deleted_rows distinct offsets (DEL-003), each below
    physical_rows (DEL-004); the ``.arrow`` column is ``row_id: uint32 not null``, the only schema the
    Lance readers accept, though the Table Format text says Int32 (DEL-005, spec/findings.md F-002)."""
    for fragment in suspects(ctx.snap, _with_deletion):
        deletion = fragment.deletion
        if deletion is not None and deletion.file_type not in (DELETION_ARROW, DELETION_BITMAP):
            ctx.finding("DEL-002", ctx.snap.manifest_uri, f"deletion file type {deletion.file_type} is neither "
                        "ARROW_ARRAY (0) nor BITMAP (1)", f"fragment {fragment.id}",
                        code="deletion_file_type_unknown")
    for fragment, deletion, file_uri in _followed_deletions(ctx.snap):
        where = f"fragment {fragment.id}"
        found = _deletions(ctx.storage, file_uri, deletion.file_type, fragment.physical_rows)
        if not found.exists:
            ctx.finding("DEL-001", file_uri, f"deletion file {file_uri} does not exist", where)
            continue
        if found.problem is not None:
            ctx.finding("DEL-002", file_uri, f"deletion file {file_uri} {found.problem}", where,
                        code="deletion_file_invalid")
            continue
        if found.distinct != deletion.num_deleted_rows:
            ctx.finding("DEL-003", file_uri, f"deletion file holds {found.distinct} distinct offsets, the manifest "
                        f"records num_deleted_rows = {deletion.num_deleted_rows}", where)
        if found.outside:
            shown = ", ".join(map(str, found.first_outside)) + (" …" if found.outside > _SHOWN_OFFSETS else "")
            ctx.finding("DEL-004", file_uri, f"{found.outside} deleted offset(s) are not below physical_rows = "
                        f"{fragment.physical_rows}: {shown}", where)
        if found.arrow_schema is not None and found.arrow_schema != DELETION_ARROW_SCHEMA:
            ctx.finding("DEL-005", file_uri, f"the offsets column is `{found.arrow_schema}`, not "
                        f"`{DELETION_ARROW_SCHEMA}`, the only one the Lance readers accept", where)
