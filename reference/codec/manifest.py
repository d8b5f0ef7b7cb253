"""The ``.manifest`` file: framing around the protobuf sections, and the footer.

Layout (docs/lance-format.md §4, verified against pylance 14.0.2 files): every protobuf section is
a little-endian u32 length followed by the message. In order: the IndexSection (only when the version
has indices), the inline Transaction, then the Manifest at offset P; the file ends with a 16-byte footer
``u64 P | u16 major (0) | u16 minor (2) | b"LANC"``. The Manifest records the offsets of the other two
sections (``index_section``; ``transaction_section``, field 23 as pylance 14.0.2 writes it).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field

from ..errors import FormatError
from ..limits import DEFAULT_LIMITS, Limits, check_limit
from ..proto import table_pb2, transaction_pb2
from .fragment_columns import FRAGMENTS, FragmentColumns, decode_fragment_columns, fragment_records
from .wire import decode

MAGIC = b"LANC"
FOOTER_SIZE = 16
MANIFEST_FORMAT_MAJOR = 0
MANIFEST_FORMAT_MINOR = 2
_FOOTER = struct.Struct("<QHH4s")
_LEN = struct.Struct("<I")
#: The Manifest fields that may hold the inline transaction's offset, the current one first.
_TRANSACTION_FIELDS = ("transaction_section", "transaction_section_deprecated")


#: The fewest fragments a manifest has for ``ManifestFile.fragment_columns`` to decode them: the columnar
#: decoder's fixed cost (a few milliseconds of numpy passes) outweighs what it saves on a small manifest, and a
#: history of 10,000 small versions would pay it 10,000 times (and keep 10,000 sections' bytes). Tests set it
#: to 0, before decoding, to judge small manifests both ways.
COLUMNS_FROM_FRAGMENTS = 1000


@dataclass(frozen=True)
class ManifestFile:
    """A decoded ``.manifest`` file. ``transaction`` is None when the file carries no inline copy."""

    manifest: table_pb2.Manifest
    transaction: transaction_pb2.Transaction | None
    transaction_bytes: bytes | None
    index_section: table_pb2.IndexSection | None
    size: int
    #: The Manifest section's bytes, from which ``fragment_columns`` decodes (None: only protobuf reads it).
    section: bytes | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def fragment_columns(self) -> FragmentColumns | None:
        """The fragments as columns (``fragment_columns``), decoded on first use; None below
        ``COLUMNS_FROM_FRAGMENTS`` fragments, without the section's bytes, or where the columnar decoder cannot
        read them (every fragment is then judged from the message)."""
        if self.section is None or len(self.manifest.fragments) < COLUMNS_FROM_FRAGMENTS:
            return None
        try:
            return decode_fragment_columns(self.section)
        except FormatError:
            return None


def _section(data: bytes, offset: int, where: str, what: str) -> bytes:
    if offset + 4 > len(data):
        raise FormatError(f"{what} offset {offset} lies past the end of the file ({len(data)} bytes)", where)
    (length,) = _LEN.unpack_from(data, offset)
    end = offset + 4 + length
    if end > len(data) - FOOTER_SIZE:
        raise FormatError(f"{what} at offset {offset} claims {length} bytes, past the footer", where)
    return data[offset + 4 : end]


def read_footer(data: bytes, where: str) -> int:
    """Validate the footer and return the Manifest section's offset P."""
    if len(data) < FOOTER_SIZE:
        raise FormatError(f"manifest file is {len(data)} bytes, shorter than its 16-byte footer", where)
    position, _major, _minor, magic = _FOOTER.unpack_from(data, len(data) - FOOTER_SIZE)
    if magic != MAGIC:
        raise FormatError(f"manifest footer magic is {magic!r}, expected {MAGIC!r}", where)
    if position + 4 > len(data) - FOOTER_SIZE:
        raise FormatError(f"manifest footer points at offset {position}, past the end", where)
    (length,) = _LEN.unpack_from(data, position)
    if position + 4 + length != len(data) - FOOTER_SIZE:
        raise FormatError(
            f"manifest section at offset {position} claims {length} bytes but the footer starts at "
            f"{len(data) - FOOTER_SIZE}",
            where,
        )
    return int(position)


#: The Manifest's repeated message fields but fragments (fields, schema and table metadata, config, bases).
_ENTRY_FIELDS = frozenset(f.number for f in table_pb2.Manifest.DESCRIPTOR.fields
                          if f.is_repeated and f.message_type is not None and f.number != FRAGMENTS)


_SMALLEST_ELEMENT = 2  # bytes: the field key and a zero length


def _checked_columns(section: bytes, limits: Limits, where: str) -> FragmentColumns | None:
    """Refuse a manifest section of more than ``max_fragments`` fragments, or of more than
    ``max_manifest_entries`` elements of its other repeated fields and data files, before decoding it
    (decoded, each element costs memory whatever its size on disk); the walk stops at the first element too
    many. An element takes at least 2 bytes, so a section too small to hold that many is not walked (None).
    Else the walk's fragments as columns, or None when the columnar decoder cannot read the section (the
    protobuf decoder then says what is wrong with it)."""
    if len(section) <= min(limits.max_fragments, limits.max_manifest_entries) * _SMALLEST_ELEMENT:
        return None
    try:
        records = fragment_records(section, limits.max_fragments + 1, _ENTRY_FIELDS, limits.max_manifest_entries + 1)
    except FormatError:
        return None
    check_limit("max_fragments", limits.max_fragments, records.starts.size, where,
                "the number of fragments (counted so far)")
    entry_stop = limits.max_manifest_entries + 1

    def check_entries(data_files: int) -> None:
        check_limit("max_manifest_entries", limits.max_manifest_entries,
                    min(records.entries + data_files, entry_stop), where,
                    "the number of schema fields, base paths, metadata entries and data files (counted so far)")

    check_entries(0)
    try:
        return decode_fragment_columns(section, records, check_entries)
    except FormatError:
        return None


def decode_manifest_file(data: bytes, where: str = "", limits: Limits = DEFAULT_LIMITS) -> ManifestFile:
    """Decode a whole ``.manifest`` file; raise FormatError naming ``where`` on any framing fault, and
    LimitExceeded (before decoding) when it holds more fragments or other entries than ``limits`` allow."""
    position = read_footer(data, where)
    section = data[position + 4 : len(data) - FOOTER_SIZE]
    columns = _checked_columns(section, limits, where)
    manifest = decode(table_pb2.Manifest, section, where, "manifest section")
    transaction = None
    transaction_bytes = None
    offset_field = next((f for f in _TRANSACTION_FIELDS if manifest.HasField(f)), None)
    if offset_field is not None:
        transaction_bytes = _section(data, getattr(manifest, offset_field), where, "inline transaction")
        transaction = decode(transaction_pb2.Transaction, transaction_bytes, where, "inline transaction")
    index_section = None
    if manifest.HasField("index_section"):
        index_section = decode(table_pb2.IndexSection, _section(data, manifest.index_section, where,
                                                                 "index section"), where, "index section")
    kept = section if columns is not None or len(manifest.fragments) >= COLUMNS_FROM_FRAGMENTS else None
    decoded = ManifestFile(manifest, transaction, transaction_bytes, index_section, len(data), kept)
    if columns is not None:  # decoded already by the limit walk: the cached property's value
        decoded.__dict__["fragment_columns"] = columns
    return decoded


def encode_manifest_file(
    manifest: table_pb2.Manifest,
    transaction: transaction_pb2.Transaction | bytes | None,
    index_section: table_pb2.IndexSection | None = None,
) -> bytes:
    """Frame the sections as pylance 14.0.2 does; sets the offsets in a copy of ``manifest``.

    ``transaction`` may be given as encoded bytes so that the inline copy is byte-identical to the
    ``_transactions/`` file written from the same bytes.
    """
    out = bytearray()
    final = table_pb2.Manifest()
    final.CopyFrom(manifest)
    for cleared in ("index_section", *_TRANSACTION_FIELDS):
        final.ClearField(cleared)
    if index_section is not None and len(index_section.indices) > 0:
        final.index_section = len(out)
        payload = index_section.SerializeToString()
        out += _LEN.pack(len(payload)) + payload
    if transaction is not None:
        final.transaction_section = len(out)
        payload = transaction if isinstance(transaction, bytes) else transaction.SerializeToString()
        out += _LEN.pack(len(payload)) + payload
    position = len(out)
    payload = final.SerializeToString()
    out += _LEN.pack(len(payload)) + payload
    out += _FOOTER.pack(position, MANIFEST_FORMAT_MAJOR, MANIFEST_FORMAT_MINOR, MAGIC)
    return bytes(out)
