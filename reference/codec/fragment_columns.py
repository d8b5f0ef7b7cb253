"""A manifest's fragments as columns: the repeated ``Manifest.fragments`` field decoded from the wire into
numpy arrays, one entry per fragment and per data file, without a Python object per fragment.

Field numbers are those of protos/table.proto (``DataFragment``, ``DataFile``, ``DeletionFile``), taken from
the generated descriptors. The top level of the Manifest section is walked once in Python (one step per
field, the lengths read inline); the fragments, their data files and their deletion files are then decoded
field by field in lockstep, every message at once (one numpy pass per field position, so the passes number
the most fields any one message has, not the messages).

What the columns hold equals what the protobuf decoder reads (tests/unit/test_fragment_columns.py compares
them on generated messages and on pylance-written manifests): a singular field met twice keeps its last
value. Where an encoding is legal but unusual (a message field met twice in one fragment, which protobuf
merges; repeated ids not packed; a known field with another wire type; a group), the fragment is marked
``irregular`` rather than decoded a second way: callers judge irregular fragments from the protobuf
message (``Manifest.fragments[i]``), as they judge every fragment a column flags.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import FormatError
from ..proto import table_pb2
from .wire import varint

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
Bools = npt.NDArray[np.bool_]


def _number(message: type, name: str) -> int:
    return int(message.DESCRIPTOR.fields_by_name[name].number)  # type: ignore[attr-defined]


_F = table_pb2.DataFragment
_D = table_pb2.DataFile
_X = table_pb2.DeletionFile
FRAGMENTS = _number(table_pb2.Manifest, "fragments")
FRAG_ID, FRAG_FILES, FRAG_DELETION, FRAG_ROWS = (_number(_F, n) for n in ("id", "files", "deletion_file",
                                                                           "physical_rows"))
#: The fields of the ``row_id_sequence`` oneof (a fragment with either stores stable row ids).
FRAG_ROW_IDS = frozenset(f.number for f in _F.DESCRIPTOR.oneofs_by_name["row_id_sequence"].fields)
#: DataFragment fields decoded elsewhere or not at all, but whose wire type is known.
_FRAG_BYTES_FIELDS = frozenset(f.number for f in _F.DESCRIPTOR.fields if f.number not in (FRAG_ID, FRAG_ROWS))
FILE_PATH, FILE_FIELDS, FILE_COLUMNS, FILE_MAJOR, FILE_MINOR, FILE_SIZE, FILE_BASE = (
    _number(_D, n) for n in ("path", "fields", "column_indices", "file_major_version", "file_minor_version",
                             "file_size_bytes", "base_id"))
DEL_TYPE, DEL_READ_VERSION, DEL_ID, DEL_ROWS, DEL_BASE = (
    _number(_X, n) for n in ("file_type", "read_version", "id", "num_deleted_rows", "base_id"))

_WIRE_VARINT, _WIRE_I64, _WIRE_LEN, _WIRE_I32 = 0, 1, 2, 5


@dataclass(frozen=True)
class FragmentRecords:
    """Where each ``fragments`` record of a Manifest section lies (``starts``, ``lengths``: its bytes, in
    manifest order), and how many top-level fields of the entry numbers asked for there are (``entries``)."""

    starts: I64
    lengths: I64
    entries: int


def fragment_records(section: bytes, stop: int | None = None, entry_fields: Collection[int] = (),
                     entry_stop: int | None = None) -> FragmentRecords:
    """The ``fragments`` records at the top level of a Manifest section, and the count of its fields numbered
    in ``entry_fields``. ``stop``, ``entry_stop``: the walk ends at this many fragments or entries (a bound is
    all a limit check needs). Raises FormatError on a malformed top level."""
    starts: list[int] = []
    lengths: list[int] = []
    entries = 0
    add_start, add_length = starts.append, lengths.append
    i, end = 0, len(section)
    limit = stop if stop is not None else end + 1
    entry_limit = entry_stop if entry_stop is not None else end + 1
    found = 0
    record_key = FRAGMENTS << 3 | _WIRE_LEN  # one byte: a fragments record's key
    try:
        while i < end:
            key = section[i]  # one-byte keys and lengths inline: the hot loop of a huge section
            if key == record_key and section[i + 1] < 0x80:  # a fragments record under 128 bytes, the most met
                if found == limit:
                    break
                found += 1
                add_start(i + 2)
                add_length(section[i + 1])
                i += 2 + section[i + 1]
                continue
            if key < 0x80:
                i += 1
            else:
                key, i = varint(section, i)
            wire = key & 7
            if wire == _WIRE_LEN:
                length = section[i]
                if length < 0x80:
                    i += 1
                else:
                    length, i = varint(section, i)
                if key >> 3 == FRAGMENTS:
                    if found == limit:
                        break
                    found += 1
                    add_start(i)
                    add_length(length)
                elif key >> 3 in entry_fields:
                    entries += 1
                    if entries == entry_limit:
                        break
                i += length
            elif wire == _WIRE_VARINT:
                _, i = varint(section, i)
            elif wire in (_WIRE_I64, _WIRE_I32):
                i += 8 if wire == _WIRE_I64 else 4
            else:
                raise FormatError(f"unsupported protobuf wire type {wire} in the manifest section")
    except IndexError:
        raise FormatError("truncated manifest section") from None
    if i > end:
        raise FormatError("truncated manifest section")
    return FragmentRecords(np.asarray(starts, np.int64), np.asarray(lengths, np.int64), entries)


def _varints(buf: U8, at: I64) -> tuple[U64, I64]:
    """The varint starting at each offset ``at`` of ``buf`` and the offset after it (vectorised); raises
    FormatError when one runs past the buffer or past ten bytes."""
    size = len(buf)
    if at.size and int(at.max()) >= size:
        raise FormatError("truncated protobuf varint")
    byte = buf[at]
    value = (byte & 0x7F).astype(np.uint64)
    after = at + 1
    going = np.flatnonzero(byte >= 0x80)
    shift = 7
    while going.size:
        if shift > 63:
            raise FormatError("protobuf varint longer than ten bytes")
        where = after[going]
        if int(where.max()) >= size:
            raise FormatError("truncated protobuf varint")
        byte = buf[where]
        value[going] |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
        after[going] = where + 1
        going = going[byte >= 0x80]
        shift += 7
    return value, after


@dataclass(frozen=True)
class _Fields:
    """Every field of a set of messages, in wire order per message: the message (``owner``), field number,
    wire type, value (a varint's value; else the payload's offset) and payload length (wire type 2). A
    group (wire types 3 and 4) is listed and ends the walk of its message; its owner is irregular."""

    owner: I64
    number: npt.NDArray[np.int32]
    wire: npt.NDArray[np.int8]
    value: U64
    length: I64


#: Below this many messages still being walked, the rest are walked one field at a time in Python: lockstep
#: passes over a handful of long messages (a fragment of a million data files) would cost a pass per field.
_LOCKSTEP_FLOOR = 32
#: A watched field is counted (``Watch``) at least every this many fields of a message walked one by one.
_WATCH_EVERY = 4096

#: ``(field number, check)``: ``check(n)`` is called with the count of fields of that number met so far,
#: during the walk, so that a limit can stop it before it has decoded everything.
Watch = tuple[int, Callable[[int], None]]


def _fields(data: bytes, buf: U8, starts: I64, ends: I64, watch: Watch | None = None) -> _Fields:
    """Decode the fields of the messages ``data[starts[k]:ends[k]]`` (``buf``: the same bytes as an array),
    all messages in lockstep while there are many."""
    parts: list[tuple[Any, ...]] = []
    owner = np.arange(starts.size, dtype=np.int64)
    at, end = starts.astype(np.int64), ends.astype(np.int64)
    live = at < end
    owner, at, end = owner[live], at[live], end[live]
    position = 0
    watched = 0
    while owner.size >= _LOCKSTEP_FLOOR:
        key, at = _varints(buf, at)
        wire = (key & np.uint64(7)).astype(np.int64)
        number = (key >> np.uint64(3)).astype(np.int64)
        value = np.zeros(owner.size, np.uint64)
        length = np.zeros(owner.size, np.int64)
        kind = wire == _WIRE_VARINT
        if kind.any():
            value[kind], at[kind] = _varints(buf, at[kind])
        kind = wire == _WIRE_LEN
        if kind.any():
            n, after = _varints(buf, at[kind])
            length[kind] = n.astype(np.int64)
            value[kind] = after.astype(np.uint64)
            at[kind] = after + length[kind]
        kind = (wire == _WIRE_I64) | (wire == _WIRE_I32)
        value[kind] = at[kind].astype(np.uint64)
        at[kind] += np.where(wire[kind] == _WIRE_I64, 8, 4)
        if np.any(wire > 5):
            raise FormatError(f"unsupported protobuf wire type {int(wire[wire > 5][0])}")
        group = (wire == 3) | (wire == 4)  # a group has no length: its message is left to protobuf
        if np.any(at[~group] > end[~group]):
            raise FormatError("a protobuf field runs past the end of its message")
        parts.append((position, owner, number.astype(np.int32), wire.astype(np.int8), length, value))
        if watch is not None:
            watched += int(np.count_nonzero(number == watch[0]))
            watch[1](watched)
        live = (at < end) & ~group
        owner, at, end = owner[live], at[live], end[live]
        position += 1
    tail = (_walk_each(data, owner.tolist(), at.tolist(), end.tolist(), position, watch, watched)
            if owner.size else None)
    return _in_message_order(starts.size, parts, tail)


def _in_message_order(messages: int, parts: list[tuple[Any, ...]], tail: tuple[Any, ...] | None) -> _Fields:
    """The fields of ``parts`` (one lockstep pass each: its position and its fields' owners, numbers, wire
    types, lengths, values) and ``tail`` (the same with a position per field) by message, wire order within
    each: a message's k-th field goes k places after its first. Each pass is dropped once placed."""
    counts = np.zeros(messages, np.int64)
    for part in parts:
        counts[part[1]] += 1
    if tail is not None:
        counts += np.bincount(tail[1], minlength=messages)
    first = np.zeros(messages + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    total = int(first[-1])
    owner, number = np.empty(total, np.int64), np.empty(total, np.int32)
    wire, length, value = np.empty(total, np.int8), np.empty(total, np.int64), np.empty(total, np.uint64)
    pieces = [(p[1], p[0], p[2:]) for p in parts]
    parts.clear()
    if tail is not None:
        pieces.append((tail[1], tail[0], tail[2:]))
    while pieces:
        of, position, rest = pieces.pop(0)
        at = first[of] + position
        owner[at] = of
        number[at], wire[at], length[at], value[at] = rest
    return _Fields(owner, number, wire, value, length)


def _walk_each(data: bytes, owners: list[int], ats: list[int], ends: list[int], position: int,
               watch: Watch | None, watched: int) -> tuple[Any, ...]:
    """The rest of the fields of a few messages (each ``owners[k]`` from ``ats[k]`` to ``ends[k]``, its first
    ``position`` fields walked already), one field at a time: each field's position in its message, owner,
    number, wire type, length and value."""
    out_owner: list[int] = []
    out_number: list[int] = []
    out_wire: list[int] = []
    out_value: list[int] = []
    out_length: list[int] = []
    out_position: list[int] = []
    watched_number = watch[0] if watch is not None else -1
    try:
        for owner, i, end in zip(owners, ats, ends, strict=True):
            k = position
            while i < end:
                key, i = varint(data, i)
                number, wire = key >> 3, key & 7
                length = 0
                if wire == _WIRE_VARINT:
                    value, i = varint(data, i)
                elif wire == _WIRE_LEN:
                    length, value = varint(data, i)
                    i = value + length
                elif wire in (_WIRE_I64, _WIRE_I32):
                    value, i = i, i + (8 if wire == _WIRE_I64 else 4)
                elif wire in (3, 4):
                    value, i = i, end  # a group ends the walk of its message (irregular)
                else:
                    raise FormatError(f"unsupported protobuf wire type {wire}")
                if i > end:
                    raise FormatError("a protobuf field runs past the end of its message")
                out_owner.append(owner)
                out_number.append(number)
                out_wire.append(wire)
                out_value.append(value)
                out_length.append(length)
                out_position.append(k)
                k += 1
                if number == watched_number:
                    watched += 1
                    if watch is not None and watched % _WATCH_EVERY == 0:
                        watch[1](watched)
        if watch is not None:
            watch[1](watched)
        return (np.asarray(out_position, np.int64), np.asarray(out_owner, np.int64), np.asarray(out_number, np.int32),
                np.asarray(out_wire, np.int8), np.asarray(out_length, np.int64), np.asarray(out_value, np.uint64))
    except OverflowError:
        raise FormatError("protobuf varint longer than ten bytes") from None


def _groups(fields: _Fields) -> Bools:
    groups: Bools = (fields.wire == 3) | (fields.wire == 4)
    return groups


def _last(count: int, owner: I64, value: U64) -> tuple[U64, Bools]:
    """Per message, the last of its ``value`` (owners ascending, wire order within each) and whether it had one."""
    out = np.zeros(count, np.uint64)
    out[owner] = value  # numpy assigns in order: the last write of an owner wins, as protobuf's last value
    present = np.zeros(count, np.bool_)
    present[owner] = True
    return out, present


def _packed(buf: U8, owner: I64, start: I64, length: I64) -> tuple[I64, U64]:
    """The varints of packed repeated fields (``length`` bytes at each ``start``): each value's message and
    value, in order. Raises FormatError when a run ends inside a varint."""
    total = int(length.sum())
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    run = np.repeat(np.arange(owner.size), length)
    first = np.cumsum(length) - length
    index = np.arange(total, dtype=np.int64) - first[run] + start[run]
    byte = buf[index]
    last_of_run = np.zeros(total, np.bool_)
    last_of_run[np.cumsum(length) - 1] = True
    ends = byte < 0x80
    if np.any(last_of_run & ~ends):
        raise FormatError("a packed repeated field ends inside a varint")
    begins = np.ones(total, np.bool_)
    begins[1:] = ends[:-1]
    which = np.cumsum(begins) - 1
    starts_at = np.flatnonzero(begins)
    shift = ((np.arange(total) - starts_at[which]) * 7).astype(np.uint64)
    if shift.size and int(shift.max()) > 63:
        raise FormatError("protobuf varint longer than ten bytes")
    parts = (byte & 0x7F).astype(np.uint64) << shift
    values = np.bitwise_or.reduceat(parts, starts_at)
    return owner[run[starts_at]], values


def _int32(values: U64) -> I64:
    """protobuf int32 values as read: the low 32 bits, signed."""
    return (values & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).astype(np.int64)


@dataclass(frozen=True)
class FragmentColumns:
    """The fragments of one Manifest section as columns (``decode_fragment_columns``).

    Per fragment (``count`` of them, in manifest order): its bytes in ``section`` (``record_start``,
    ``record_length``), ``id``, ``physical_rows``, ``file_offsets`` (its data files are
    ``file_offsets[k]:file_offsets[k+1]``), ``has_deletion`` and the deletion file's ``deletion_type``,
    ``deletion_read_version``, ``deletion_id``, ``deleted_rows``, ``deletion_has_base`` (its base_id set),
    ``has_row_ids`` (a row-id sequence stored, inline or external), ``irregular`` (see the module
    docstring). Per data file: ``file_fragment`` (its fragment's position), ``major``, ``minor``,
    ``file_size``, ``has_base``, ``base_id``, ``path_start`` and ``path_length`` (into ``section``), and its
    field ids and column indices as flattened lists: ``field_ids`` with ``field_file`` (the data file each
    belongs to), likewise ``column_indices`` with ``column_file``."""

    section: bytes
    record_start: I64
    record_length: I64
    id: U64
    physical_rows: U64
    file_offsets: I64
    has_deletion: Bools
    deletion_type: U64
    deletion_read_version: U64
    deletion_id: U64
    deleted_rows: U64
    deletion_has_base: Bools
    has_row_ids: Bools
    irregular: Bools
    file_fragment: I64
    major: U64
    minor: U64
    file_size: U64
    has_base: Bools
    base_id: U64
    path_start: I64
    path_length: I64
    field_ids: I64
    field_file: I64
    column_indices: I64
    column_file: I64

    @property
    def count(self) -> int:
        return int(self.id.size)

    @property
    def file_count(self) -> int:
        return int(self.file_fragment.size)

    def files_per_fragment(self) -> I64:
        return np.diff(self.file_offsets)

    def path(self, file: int) -> str:
        """The path of data file ``file``, decoded as protobuf decodes a string."""
        start = int(self.path_start[file])
        return self.section[start:start + int(self.path_length[file])].decode("utf-8")


def decode_fragment_columns(section: bytes, records: FragmentRecords | None = None,
                            check_files: Callable[[int], None] | None = None) -> FragmentColumns:
    """The fragments of a Manifest ``section`` as columns. ``records``: ``fragment_records(section)``, when the
    caller walked the top level already (a walk cut short by its ``stop`` gives the fragments it found).
    ``check_files(n)`` is called with the number of data files met so far while the fragments are walked,
    and before the data files are decoded (a limit check may raise). Raises FormatError where the protobuf
    decoder would fail on the fragments' bytes (a truncated field, an unknown wire type)."""
    if records is None:
        records = fragment_records(section)
    starts, lengths = records.starts, records.lengths
    buf = np.frombuffer(section, np.uint8)
    count = starts.size
    watch: Watch | None = (FRAG_FILES, check_files) if check_files is not None else None
    top = _fields(section, buf, starts, starts + lengths, watch)
    irregular = np.zeros(count, np.bool_)
    irregular[top.owner[_groups(top)]] = True

    def scalar(fields: _Fields, number: int) -> tuple[U64, Bools]:
        chosen = fields.number == number
        bad = chosen & (fields.wire != _WIRE_VARINT)
        irregular[fields.owner[bad]] = True
        chosen &= ~bad
        return _last(count, fields.owner[chosen], fields.value[chosen])

    ids, _ = scalar(top, FRAG_ID)
    rows, _ = scalar(top, FRAG_ROWS)
    known_bytes = np.isin(top.number, list(_FRAG_BYTES_FIELDS))
    irregular[top.owner[known_bytes & (top.wire != _WIRE_LEN)]] = True
    has_row_ids = np.zeros(count, np.bool_)
    has_row_ids[top.owner[np.isin(top.number, list(FRAG_ROW_IDS)) & (top.wire == _WIRE_LEN)]] = True
    # a oneof keeps the last member set; a fragment listing more than one member is left to protobuf
    deletions = (top.number == FRAG_DELETION) & (top.wire == _WIRE_LEN)
    deletion_owner = top.owner[deletions]
    if deletion_owner.size:
        repeated = deletion_owner[1:][deletion_owner[1:] == deletion_owner[:-1]]
        irregular[repeated] = True  # a message field met twice is merged by protobuf
    oneof_members = top.owner[np.isin(top.number, list(FRAG_ROW_IDS))]
    if oneof_members.size:
        irregular[oneof_members[1:][oneof_members[1:] == oneof_members[:-1]]] = True
    has_deletion = np.zeros(count, np.bool_)
    has_deletion[deletion_owner] = True
    d_start = top.value[deletions].astype(np.int64)
    dfields = _fields(section, buf, d_start, d_start + top.length[deletions])
    downer = deletion_owner[dfields.owner]  # deletion k belongs to fragment deletion_owner[k]
    irregular[downer[_groups(dfields)]] = True
    dscalar: dict[int, U64] = {}
    for number in (DEL_TYPE, DEL_READ_VERSION, DEL_ID, DEL_ROWS, DEL_BASE):
        chosen = dfields.number == number
        irregular[downer[chosen & (dfields.wire != _WIRE_VARINT)]] = True
        chosen &= dfields.wire == _WIRE_VARINT
        dscalar[number], _ = _last(count, downer[chosen], dfields.value[chosen])
    deletion_bases = np.zeros(count, np.bool_)
    deletion_bases[downer[(dfields.number == DEL_BASE) & (dfields.wire == _WIRE_VARINT)]] = True

    files = (top.number == FRAG_FILES) & (top.wire == _WIRE_LEN)
    file_fragment = top.owner[files]  # owners ascending, wire order within: manifest order of data files
    f_start = top.value[files].astype(np.int64)
    nfiles = file_fragment.size
    f_end = f_start + top.length[files]
    del top, files  # the fragments' own fields are read: their memory goes before the data files' is taken
    ffields = _fields(section, buf, f_start, f_end)
    irregular[file_fragment[ffields.owner[_groups(ffields)]]] = True
    file_offsets = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(file_fragment, minlength=count), out=file_offsets[1:])

    def file_scalar(number: int) -> tuple[U64, Bools]:
        chosen = ffields.number == number
        bad = chosen & (ffields.wire != _WIRE_VARINT)
        irregular[file_fragment[ffields.owner[bad]]] = True
        chosen &= ~bad
        return _last(nfiles, ffields.owner[chosen], ffields.value[chosen])

    major, _ = file_scalar(FILE_MAJOR)
    minor, _ = file_scalar(FILE_MINOR)
    size, _ = file_scalar(FILE_SIZE)
    base_id, has_base = file_scalar(FILE_BASE)
    paths = ffields.number == FILE_PATH
    irregular[file_fragment[ffields.owner[paths & (ffields.wire != _WIRE_LEN)]]] = True
    paths &= ffields.wire == _WIRE_LEN
    path_start = np.zeros(nfiles, np.int64)
    path_length = np.zeros(nfiles, np.int64)
    path_start[ffields.owner[paths]] = ffields.value[paths].astype(np.int64)
    path_length[ffields.owner[paths]] = ffields.length[paths]

    def packed(number: int) -> tuple[I64, I64]:
        chosen = ffields.number == number
        irregular[file_fragment[ffields.owner[chosen & (ffields.wire != _WIRE_LEN)]]] = True  # unpacked
        chosen &= ffields.wire == _WIRE_LEN
        owner, values = _packed(buf, ffields.owner[chosen], ffields.value[chosen].astype(np.int64),
                                ffields.length[chosen])
        return _int32(values), owner

    field_ids, field_file = packed(FILE_FIELDS)
    column_indices, column_file = packed(FILE_COLUMNS)
    return FragmentColumns(
        section, starts, lengths, ids, rows, file_offsets, has_deletion, dscalar[DEL_TYPE], dscalar[DEL_READ_VERSION],
        dscalar[DEL_ID], dscalar[DEL_ROWS], deletion_bases, has_row_ids, irregular, file_fragment, major, minor, size,
        has_base, base_id, path_start, path_length, field_ids, field_file, column_indices, column_file)


__all__ = ["FRAGMENTS", "FragmentColumns", "FragmentRecords", "decode_fragment_columns", "fragment_records"]
