"""Byte-level codecs: manifest framing, deletion files, refs, data-file footers. Layouts under test are
the ones described in docs/lance-format.md §4, §5.2, §9 and §11 (facts from the Lance source and pylance)."""

from __future__ import annotations

import json
import struct

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from pyroaring import BitMap

from reference.codec import (
    BranchRecord,
    TagRecord,
    decode_branch,
    decode_deletions,
    decode_manifest_file,
    decode_tag,
    decode_version_hint,
    encode_deletions,
    encode_manifest_file,
    encode_version_hint,
    file_type_for,
    parse_footer,
)
from reference.errors import FormatError
from reference.proto import table_pb2, transaction_pb2


def _manifest() -> table_pb2.Manifest:
    m = table_pb2.Manifest(version=3, max_fragment_id=1)
    m.fragments.add(id=1, physical_rows=10).files.add(path="a.lance", fields=[0], file_size_bytes=99)
    return m


def test_manifest_framing_layout() -> None:
    txn = transaction_pb2.Transaction(read_version=2, uuid="u")
    txn.append.SetInParent()
    data = encode_manifest_file(_manifest(), txn)
    txn_bytes = txn.SerializeToString()
    # The transaction section comes first, at offset 0, as a u32 length + message.
    assert struct.unpack_from("<I", data, 0)[0] == len(txn_bytes)
    assert data[4 : 4 + len(txn_bytes)] == txn_bytes
    # Footer: u64 P, u16 0, u16 2, LANC; P is right after the transaction section.
    position, major, minor, magic = struct.unpack("<QHH4s", data[-16:])
    assert (position, major, minor, magic) == (4 + len(txn_bytes), 0, 2, b"LANC")
    decoded = decode_manifest_file(data, "x")
    assert decoded.manifest.version == 3
    assert decoded.manifest.transaction_section == 0
    assert decoded.transaction_bytes == txn_bytes
    assert decoded.index_section is None


def test_manifest_without_transaction_starts_with_manifest() -> None:
    data = encode_manifest_file(_manifest(), None)
    assert struct.unpack("<Q", data[-16:-8])[0] == 0
    assert decode_manifest_file(data).transaction is None


def test_index_section_precedes_transaction() -> None:
    index = table_pb2.IndexSection()
    index.indices.add(name="idx", fields=[0])
    data = encode_manifest_file(_manifest(), transaction_pb2.Transaction(uuid="u"), index)
    decoded = decode_manifest_file(data)
    assert decoded.manifest.index_section == 0
    assert decoded.manifest.transaction_section > 0
    assert decoded.index_section is not None and decoded.index_section.indices[0].name == "idx"


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda d: d[: len(d) // 2],
        lambda d: d[:-4] + b"LANX",
        lambda d: d[:-16] + struct.pack("<Q", 10**6) + d[-8:],
        lambda d: d[:-16] + struct.pack("<Q", 1) + d[-8:],
        lambda d: b"",
    ],
    ids=["truncated", "bad-magic", "position-past-end", "position-misaligned", "empty"],
)
def test_corrupt_manifest_is_a_format_error_naming_the_file(corrupt) -> None:  # type: ignore[no-untyped-def]
    data = corrupt(encode_manifest_file(_manifest(), transaction_pb2.Transaction(uuid="u")))
    with pytest.raises(FormatError) as info:
        decode_manifest_file(data, "/ds/_versions/1.manifest")
    assert info.value.where == "/ds/_versions/1.manifest"


@pytest.mark.parametrize("count", [0, 1, 4999, 5000, 6000])
def test_deletion_round_trip_and_threshold(count: int) -> None:
    rows = list(range(0, 2 * count, 2))
    file_type = file_type_for(count)
    assert file_type == (1 if count >= 5000 else 0)
    assert decode_deletions(encode_deletions(reversed(rows), file_type), file_type) == rows


def test_arrow_deletion_file_shape() -> None:
    reader = ipc.open_file(pa.BufferReader(encode_deletions([3, 1], 0)))
    assert reader.num_record_batches == 1
    assert reader.schema == pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])


def test_bitmap_deletion_file_is_portable_roaring() -> None:
    data = encode_deletions([1, 70000], 1)
    assert set(BitMap.deserialize(data)) == {1, 70000}


def _ipc_file(batches: list[pa.RecordBatch]) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, batches[0].schema) as w:
        for b in batches:
            w.write_batch(b)
    return bytes(sink.getvalue().to_pybytes())


def test_arrow_deletion_file_rejects_wrong_shapes() -> None:
    good = pa.record_batch([pa.array([1], pa.uint32())], names=["row_id"])
    with pytest.raises(FormatError, match="one record batch"):
        decode_deletions(_ipc_file([good, good]), 0)
    wrong_type = pa.record_batch([pa.array([1], pa.int64())], names=["row_id"])
    with pytest.raises(FormatError, match="uint32"):
        decode_deletions(_ipc_file([wrong_type]), 0)
    with pytest.raises(FormatError):
        decode_deletions(b"not arrow", 0)
    with pytest.raises(FormatError):
        decode_deletions(b"\x00\x01", 1)


def test_tag_json_matches_pylance_spelling() -> None:
    record = TagRecord(version=3, manifest_size=540, created_at="t0", updated_at="t1", metadata={"k": "v"})
    obj = json.loads(record.encode())
    assert set(obj) == {"branch", "version", "createdAt", "updatedAt", "manifestSize", "metadata"}
    assert decode_tag(record.encode()) == record
    assert not record.encode().endswith(b"\n")


def test_branch_json_matches_pylance_spelling() -> None:
    record = BranchRecord(parent_version=2, version_mapping=((2, "ab" * 16),), create_at=1795298787,
                          manifest_size=459)
    obj = json.loads(record.encode())
    assert set(obj) == {"parentBranch", "identifier", "parentVersion", "createAt", "manifestSize", "metadata"}
    assert obj["identifier"] == {"version_mapping": [[2, "ab" * 16]]}
    assert decode_branch(record.encode()) == record


@pytest.mark.parametrize(
    "payload",
    [b"{", b"[]", b'{"branch": null}', b'{"version": "3"}', b'{"version": -1}', b'{"version": 1, "metadata": 5}'],
)
def test_bad_tag_json_is_a_format_error(payload: bytes) -> None:
    with pytest.raises(FormatError):
        decode_tag(payload, "_refs/tags/x.json")


def test_version_hint() -> None:
    assert encode_version_hint(7) == b'{"version":7}'
    assert decode_version_hint(b'{"version":7}') == 7
    for bad in (b"", b"{", b'{"version":"7"}', b'{"version":-2}', b"[1]"):
        assert decode_version_hint(bad) is None


def _v2_footer(size: int, columns: int, buffers: int, major: int = 2, minor: int = 2) -> bytes:
    gbo = size - 40 - 16 * buffers
    cmo = gbo - 16 * columns
    return struct.pack("<QQQIIHH4s", cmo - 10, cmo, gbo, buffers, columns, major, minor, b"LANC")


def test_v2_data_file_footer() -> None:
    footer = parse_footer(_v2_footer(13501, 2, 1), 13501)
    assert (footer.major, footer.minor, footer.num_columns, footer.num_global_buffers) == (2, 2, 2, 1)
    assert not footer.is_legacy


def test_data_file_footer_faults() -> None:
    with pytest.raises(FormatError, match="magic"):
        parse_footer(_v2_footer(1000, 2, 1)[:-4] + b"XXXX", 1000)
    with pytest.raises(FormatError, match="inconsistent"):
        parse_footer(_v2_footer(1000, 2, 1), 1001)


def test_legacy_footer() -> None:
    footer = parse_footer(struct.pack("<QHH4s", 100, 0, 2, b"LANC"), 500)
    assert footer.is_legacy and footer.num_columns is None
