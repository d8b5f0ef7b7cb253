"""Checks of stable row ids: the row-id sequences of a version's fragments against its next_row_id
(catalogue ROW-001; the Table Format's Manifest next_row_id and DataFragment row_id_sequence;
docs/lance-format.md §3.6 for the RowIdSequence encoding, except that pylance 14.0.2 writes a
RangeWithBitmap's bits least significant first: after deleting the second of rows 0..3 the bitmap is 0x0d).

A sequence stored in an external file (``ExternalFile``: a byte range of a file whose path is relative to
the dataset root) is read with one ranged GET per fragment, declared as a prefetch, and judged as an
inline one; a range larger than ``--max-object-bytes`` is only checked to exist (one HEAD).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np

from reference import flags as feature_flags
from reference.codec.wire import decode
from reference.errors import FormatError, LanceSpecError, ObjectNotFound
from reference.layout import path_escape
from reference.proto import rowids_pb2, table_pb2
from reference.store import Storage
from reference.store.uri import join
from reference.table import deleted_offsets

from . import Prefetch, VersionContext, version_check
from .bases import run_cached
from .portability import is_relative_path

#: Beyond this many row ids in one version, ids are counted but not compared for duplicates.
MAX_COMPARED_IDS = 10_000_000


def _array(encoded: rowids_pb2.EncodedU64Array) -> np.ndarray:
    """The values of an encoded array as uint64 (a base plus u16 or u32 offsets, or u64 values); a trailing
    partial value is ignored."""
    kind = encoded.WhichOneof("array")
    if kind == "u16_array":
        raw = encoded.u16_array.offsets
        return np.frombuffer(raw[: len(raw) // 2 * 2], "<u2").astype(np.uint64) + np.uint64(encoded.u16_array.base)
    if kind == "u32_array":
        raw = encoded.u32_array.offsets
        return np.frombuffer(raw[: len(raw) // 4 * 4], "<u4").astype(np.uint64) + np.uint64(encoded.u32_array.base)
    if kind == "u64_array":
        raw = encoded.u64_array.values
        return np.frombuffer(raw[: len(raw) // 8 * 8], "<u8").astype(np.uint64)
    return np.zeros(0, np.uint64)


def _bits(bitmap: bytes) -> np.ndarray:
    """The positions set in a range's bitmap, least significant bit first (as pylance 14.0.2 writes it)."""
    return np.flatnonzero(np.unpackbits(np.frombuffer(bitmap, np.uint8), bitorder="little")).astype(np.uint64)


def _count(segment: rowids_pb2.U64Segment) -> int:
    """How many ids ``segment`` holds, counted without making them (a range of 2^63 ids is a few bytes)."""
    kind = segment.WhichOneof("segment")
    if kind == "range":
        return max(0, segment.range.end - segment.range.start)
    if kind == "range_with_holes":
        r = segment.range_with_holes
        return max(0, r.end - r.start - len(_array(r.holes)))
    if kind == "range_with_bitmap":
        return int(np.unpackbits(np.frombuffer(segment.range_with_bitmap.bitmap, np.uint8)).sum())
    if kind in ("sorted_array", "array"):
        return len(_array(getattr(segment, kind)))
    return 0


def _ids(segment: rowids_pb2.U64Segment) -> np.ndarray:
    """The ids of ``segment`` in order, as uint64 (called only below ``MAX_COMPARED_IDS`` ids in all)."""
    kind = segment.WhichOneof("segment")
    if kind == "range":
        return np.arange(segment.range.start, max(segment.range.start, segment.range.end), dtype=np.uint64)
    if kind == "range_with_holes":
        holed = segment.range_with_holes
        every = np.arange(holed.start, max(holed.start, holed.end), dtype=np.uint64)
        return every[~np.isin(every, _array(holed.holes))]
    if kind == "range_with_bitmap":
        mapped = segment.range_with_bitmap
        return _bits(mapped.bitmap) + np.uint64(mapped.start)
    if kind in ("sorted_array", "array"):
        return _array(getattr(segment, kind))
    return np.zeros(0, np.uint64)


def _external_uri(root: str, external: table_pb2.ExternalFile) -> str | None:
    """The object of an external row-id sequence (its path is relative to the dataset root), or None when
    the path is not relative or could leave the root (then it is never opened)."""
    return join(root, external.path) if is_relative_path(external.path) else None


def _external_slice(storage: Storage, uri: str, offset: int, size: int) -> bytes | None:
    """The bytes [offset, offset + size) of ``uri`` from one ranged GET, remembered for the run (fewer at
    the end of the object; None when the slice is above the limit of objects read whole: then only its
    existence is asked, with one HEAD). ObjectNotFound when the object does not exist."""

    def read() -> bytes | None:
        if size > storage.limits.max_object_bytes:
            storage.head(uri)
            return None
        return storage.get_range(uri, offset, size) if size else b""

    return run_cached(storage, ("row-id-sequence", uri, str(offset), str(size)), read)


def _external_reads(ctx: VersionContext) -> Iterator[Prefetch]:
    """One ranged GET per external row-id sequence of the version."""
    if not ctx.snap.manifest.reader_feature_flags & feature_flags.STABLE_ROW_IDS:
        return
    for fragment in ctx.snap.manifest.fragments:
        if fragment.WhichOneof("row_id_sequence") == "external_row_ids":
            external = fragment.external_row_ids
            uri = _external_uri(ctx.dataset.uri, external)
            if uri is not None:
                yield (("row-id-sequence", uri, str(external.offset), str(external.size)),
                       functools.partial(_external_slice, ctx.storage, uri, external.offset, external.size))


def _sequence_bytes(ctx: VersionContext, fragment: table_pb2.DataFragment) -> bytes | None:
    """The encoded row-id sequence of a fragment: inline, or read from its external file. None (after
    reporting ROW-001 where the external file is at fault) when there is none to decode."""
    where, spot = ctx.snap.manifest_uri, f"fragment {fragment.id}"
    if fragment.WhichOneof("row_id_sequence") == "inline_row_ids":
        return fragment.inline_row_ids
    external = fragment.external_row_ids
    uri = _external_uri(ctx.dataset.uri, external)
    if uri is None:
        reason = path_escape(external.path) or "is not relative to the dataset root"
        ctx.finding("ROW-001", where, f"the external row-id sequence path {external.path!r} {reason} (it is not "
                    "followed)", spot)
        return None
    try:
        data = _external_slice(ctx.storage, uri, external.offset, external.size)
    except ObjectNotFound:
        ctx.finding("ROW-001", uri, f"fragment {fragment.id}'s external row-id sequence file does not exist", spot)
        return None
    if data is not None and len(data) < external.size:
        ctx.finding("ROW-001", uri, f"fragment {fragment.id}'s external row-id sequence [{external.offset}, "
                    f"{external.offset + external.size}) lies past the end of its file", spot)
        return None
    return data


@version_check("rowids.sequences", "ROW-001", prefetch=_external_reads)
def sequences(ctx: VersionContext) -> None:
    """With stable row ids (reader flag 2): every fragment stores a row-id sequence of physical_rows ids
    (inline, or in an external file that exists and holds the recorded range),
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
        encoded = _sequence_bytes(ctx, fragment)
        if encoded is None:
            continue
        try:
            sequence = decode(rowids_pb2.RowIdSequence, encoded, where, f"the {kind.split('_')[0]} row-id sequence")
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
    # every id of the version in one array (8 bytes an id: 10M ids were 2.6 GB as a dict, an outside review)
    per_fragment = [np.concatenate([np.zeros(0, np.uint64)] + [_ids(s) for s in seq.segments]) for _, seq in decoded]
    ids = np.concatenate([np.zeros(0, np.uint64), *per_fragment])
    starts = np.cumsum([0] + [len(a) for a in per_fragment])
    owners = [fragment_id for fragment_id, _ in decoded]

    def holder(position: int) -> tuple[int, int]:
        """(fragment id, offset) of the row at ``position`` of ``ids``."""
        at = int(np.searchsorted(starts, position, side="right")) - 1
        return owners[at], position - int(starts[at])

    beyond = np.flatnonzero(ids >= np.uint64(manifest.next_row_id))
    if len(beyond):
        row_id, (fragment_id, _) = int(ids[beyond[0]]), holder(int(beyond[0]))
        ctx.finding("ROW-001", where, f"row id {row_id} is not below next_row_id {manifest.next_row_id}",
                    detail=f"fragment {fragment_id}", code="row_id_not_below_next")
        return
    order = np.argsort(ids, kind="stable")
    in_order = ids[order]
    repeated = np.flatnonzero(in_order[1:] == in_order[:-1])
    if not len(repeated):
        return
    shared: dict[int, list[tuple[int, int]]] = {}  # row id -> (fragment id, offset) of every row holding it
    for at in np.union1d(repeated, repeated + 1):
        shared.setdefault(int(in_order[at]), []).append(holder(int(order[at])))
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
