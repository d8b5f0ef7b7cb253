"""How much an Arrow IPC file's compressed buffers would inflate to, read from the file before pyarrow
decompresses anything (issue 32; docs/security.md).

A record batch whose body is compressed (``BodyCompression``, LZ4 frame or ZSTD) prefixes every buffer with
the little-endian int64 length it inflates to, and pyarrow allocates that length before it decompresses: a
66 KB file declaring 2^29 offsets costs gigabytes. ``check_inflation`` walks the file's footer and each record
batch's metadata (FlatBuffers, read by hand: only the fields named below) and refuses a compressed batch of
more rows than the reader allows, or a buffer declaring more than its rows can need (8 bytes a row, the widest integer,
plus 64 bytes of padding). Uncompressed buffers lie in the file itself and are bounded by its size.

Layout (Arrow columnar format, "IPC File Format" and "Message.fbs"/"File.fbs"): the file ends with the
Footer FlatBuffer, its int32 length and ``ARROW1``; Footer field 3 is the vector of record batch Blocks
``{int64 offset, int32 metaDataLength, pad, int64 bodyLength}``; each Block's message is ``0xFFFFFFFF``,
an int32 length and the Message FlatBuffer (field 1 header type, 3 = RecordBatch; field 2 the RecordBatch:
field 0 ``length``, field 2 the vector of Buffers ``{int64 offset, int64 length}`` into the body, field 3 the
compression), then the body.
"""

from __future__ import annotations

import struct

from ..errors import FormatError

_MAGIC = b"ARROW1"
_RECORD_BATCH = 3
_BYTES_PER_ROW = 8
_PADDING = 64


class _Table:
    """One FlatBuffers table of ``buf`` at ``pos``: its fields by index, as the vtable places them."""

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf, self.pos = buf, pos
        vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vtable_size = struct.unpack_from("<H", buf, vtable)[0]
        self.vtable = vtable

    def _at(self, index: int) -> int | None:
        slot = 4 + 2 * index
        if slot + 2 > self.vtable_size:
            return None
        offset = struct.unpack_from("<H", self.buf, self.vtable + slot)[0]
        return self.pos + offset if offset else None

    def scalar(self, index: int, fmt: str, default: int = 0) -> int:
        at = self._at(index)
        return default if at is None else int(struct.unpack_from(fmt, self.buf, at)[0])

    def table(self, index: int) -> _Table | None:
        at = self._at(index)
        return None if at is None else _Table(self.buf, at + struct.unpack_from("<I", self.buf, at)[0])

    def structs(self, index: int, fmt: str) -> list[tuple[int, ...]]:
        at = self._at(index)
        if at is None:
            return []
        vector = at + struct.unpack_from("<I", self.buf, at)[0]
        count = struct.unpack_from("<I", self.buf, vector)[0]
        size = struct.calcsize(fmt)
        if vector + 4 + count * size > len(self.buf):
            raise ValueError(f"a vector of {count} entries runs past the end")
        return [struct.unpack_from(fmt, self.buf, vector + 4 + i * size) for i in range(count)]


def _root(buf: bytes) -> _Table:
    return _Table(buf, struct.unpack_from("<I", buf, 0)[0])


def check_inflation(data: bytes, where: str, max_rows: int) -> None:
    """Refuse (FormatError) an Arrow IPC file with a compressed record batch of more than ``max_rows`` rows,
    or with a compressed buffer declaring more bytes than its batch's rows can need. Says nothing of a file that is no
    such file: pyarrow's reading, after this, reports that."""
    try:
        batches = _batches(data)
    except (struct.error, ValueError, IndexError):
        return  # not a well-formed file: pyarrow refuses it without inflating anything it cannot locate
    for rows, compressed, declared in batches:
        if not compressed:
            continue  # its buffers lie in the file, whatever its rows
        if rows > max_rows:
            raise FormatError(f"not inflated: a compressed record batch declares {rows} rows, more than the "
                              f"{max_rows} the fragment has", where)
        bound = _BYTES_PER_ROW * rows + _PADDING
        if declared > bound:
            raise FormatError(f"not inflated: a compressed buffer declares {declared} bytes once inflated, more "
                              f"than {bound} for {rows} rows", where)


def _batches(data: bytes) -> list[tuple[int, bool, int]]:
    """``(rows, compressed, largest inflated length declared)`` of each record batch the footer lists."""
    if len(data) < 2 * len(_MAGIC) + 4 or not data.endswith(_MAGIC):
        return []
    (footer_length,) = struct.unpack_from("<i", data, len(data) - len(_MAGIC) - 4)
    footer_start = len(data) - len(_MAGIC) - 4 - footer_length
    if footer_length <= 0 or footer_start < 0:
        return []
    footer = _root(data[footer_start:footer_start + footer_length])
    found = []
    for offset, meta_length, _pad, body_length in footer.structs(3, "<qiiq"):
        if offset < 0 or meta_length < 8 or body_length < 0:
            continue
        start = offset + 8 if data[offset:offset + 4] == b"\xff\xff\xff\xff" else offset + 4
        metadata = data[start:offset + meta_length]
        message = _root(metadata)
        if message.scalar(1, "<B") != _RECORD_BATCH:
            continue
        batch = message.table(2)
        if batch is None:
            continue
        body = offset + meta_length
        compressed = batch.table(3) is not None
        declared = 0
        for buffer_offset, buffer_length in batch.structs(2, "<qq") if compressed else []:
            at = body + buffer_offset
            if buffer_length >= 8 and at >= 0 and at + 8 <= len(data):
                declared = max(declared, struct.unpack_from("<q", data, at)[0])
        found.append((batch.scalar(0, "<q"), compressed, declared))
    return found
