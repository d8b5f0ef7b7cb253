"""Checks of stable row ids: the row-id sequences of a version's fragments against its next_row_id
(catalogue ROW-001; the Table Format's Manifest next_row_id and DataFragment row_id_sequence;
docs/lance-format.md §3.6 for the RowIdSequence encoding, except that pylance 14.0.2 writes a
RangeWithBitmap's bits least significant first: after deleting the second of rows 0..3 the bitmap is 0x0d).

Only inline sequences are decoded; a fragment whose sequence is stored in an external file is counted
as having one and not decoded further.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from lancespec.reference import flags as feature_flags
from lancespec.reference.codec.wire import decode
from lancespec.reference.errors import FormatError, LanceSpecError
from lancespec.reference.proto import rowids_pb2
from lancespec.reference.table import deleted_offsets

from . import VersionContext, version_check

#: Beyond this many row ids in one version, ids are counted but not compared for duplicates.
MAX_COMPARED_IDS = 10_000_000


def _array(encoded: rowids_pb2.EncodedU64Array) -> list[int]:
    kind = encoded.WhichOneof("array")
    if kind == "u16_array":
        raw = encoded.u16_array.offsets
        return [encoded.u16_array.base + v for v in struct.unpack(f"<{len(raw) // 2}H", raw[: len(raw) // 2 * 2])]
    if kind == "u32_array":
        raw = encoded.u32_array.offsets
        return [encoded.u32_array.base + v for v in struct.unpack(f"<{len(raw) // 4}I", raw[: len(raw) // 4 * 4])]
    if kind == "u64_array":
        raw = encoded.u64_array.values
        return list(struct.unpack(f"<{len(raw) // 8}Q", raw[: len(raw) // 8 * 8]))
    return []


def _count(segment: rowids_pb2.U64Segment) -> int:
    kind = segment.WhichOneof("segment")
    if kind == "range":
        return max(0, segment.range.end - segment.range.start)
    if kind == "range_with_holes":
        r = segment.range_with_holes
        return max(0, r.end - r.start - len(_array(r.holes)))
    if kind == "range_with_bitmap":
        return sum(bin(b).count("1") for b in segment.range_with_bitmap.bitmap)
    if kind in ("sorted_array", "array"):
        return len(_array(getattr(segment, kind)))
    return 0


def _ids(segment: rowids_pb2.U64Segment) -> Iterator[int]:
    kind = segment.WhichOneof("segment")
    if kind == "range":
        yield from range(segment.range.start, segment.range.end)
    elif kind == "range_with_holes":
        holed = segment.range_with_holes
        holes = set(_array(holed.holes))
        yield from (i for i in range(holed.start, holed.end) if i not in holes)
    elif kind == "range_with_bitmap":
        mapped = segment.range_with_bitmap
        for byte_index, byte in enumerate(mapped.bitmap):
            for bit in range(8):
                if byte >> bit & 1:  # least significant bit first, as pylance 14.0.2 writes it
                    yield mapped.start + byte_index * 8 + bit
    elif kind in ("sorted_array", "array"):
        yield from _array(getattr(segment, kind))


@version_check("rowids.sequences", "ROW-001")
def sequences(ctx: VersionContext) -> None:
    """With stable row ids (reader flag 2): every fragment stores a row-id sequence of physical_rows ids,
    every id is below next_row_id, and no id is held by two live rows of the version (ROW-001). A deleted
    row keeps its id in its fragment's sequence, so an id may appear twice when all but one of its rows
    are deleted: an update moves a row to a new fragment under the same id. Deletion files are read only
    for the fragments that share an id."""
    manifest, where = ctx.snap.manifest, ctx.snap.manifest_uri
    if not manifest.reader_feature_flags & feature_flags.STABLE_ROW_IDS:
        return
    decoded: list[tuple[int, rowids_pb2.RowIdSequence]] = []
    for fragment in manifest.fragments:
        spot = f"fragment {fragment.id}"
        kind = fragment.WhichOneof("row_id_sequence")
        if kind is None:
            ctx.finding("ROW-001", where, f"fragment {fragment.id} stores no row-id sequence, but the version uses "
                        "stable row ids", spot, code="row_id_sequence_missing")
            continue
        if kind != "inline_row_ids":
            continue
        try:
            sequence = decode(rowids_pb2.RowIdSequence, fragment.inline_row_ids, where, "the inline row-id sequence")
        except FormatError as exc:
            ctx.finding("ROW-001", where, exc.message, spot, code="row_id_sequence_unreadable")
            continue
        count = sum(_count(s) for s in sequence.segments)
        if count != fragment.physical_rows:
            ctx.finding("ROW-001", where, f"the row-id sequence holds {count} ids for {fragment.physical_rows} "
                        "physical rows", spot, code="row_id_count_mismatch")
            continue
        decoded.append((fragment.id, sequence))
    if sum(_count(s) for _, seq in decoded for s in seq.segments) > MAX_COMPARED_IDS:
        return
    holders: dict[int, list[tuple[int, int]]] = {}  # row id -> (fragment id, offset) of every row holding it
    for fragment_id, sequence in decoded:
        offset = 0
        for segment in sequence.segments:
            for row_id in _ids(segment):
                if row_id >= manifest.next_row_id:
                    ctx.finding("ROW-001", where, f"row id {row_id} is not below next_row_id {manifest.next_row_id}",
                                detail=f"fragment {fragment_id}", code="row_id_not_below_next")
                    return
                holders.setdefault(row_id, []).append((fragment_id, offset))
                offset += 1
    shared = {row_id: rows for row_id, rows in holders.items() if len(rows) > 1}
    if not shared:
        return
    deleted = _deleted_offsets(ctx, {fragment_id for rows in shared.values() for fragment_id, _ in rows})
    for row_id, rows in sorted(shared.items()):
        live = [fragment_id for fragment_id, offset in rows if offset not in deleted.get(fragment_id, ())]
        if len(live) > 1:
            ctx.finding("ROW-001", where, f"row id {row_id} is held by live rows of fragments "
                        f"{', '.join(map(str, live))}", detail=f"fragment {live[-1]}", code="row_id_shared")
            return


def _deleted_offsets(ctx: VersionContext, fragment_ids: set[int]) -> dict[int, frozenset[int]]:
    """The deleted row offsets of the given fragments (a deletion file that cannot be read counts as
    deleting nothing: the deletion-file checks report it)."""
    out: dict[int, frozenset[int]] = {}
    for fragment in ctx.snap.fragments:
        if fragment.id in fragment_ids:
            try:
                out[fragment.id] = frozenset(deleted_offsets(ctx.storage, fragment))
            except LanceSpecError:
                out[fragment.id] = frozenset()
    return out
