"""The manifest codec against pylance 14.0.2 manifests: byte-identical re-encoding, and a manifest
lancespec encodes (with a changed timestamp) that pylance then reads."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import lance
import pyarrow as pa
from google.protobuf.message import Message

from conformance.shapes import Shape
from reference.codec import decode_manifest_file, encode_manifest_file
from reference.proto import table_pb2
from reference.table import Dataset


def manifests_of(shape: Shape) -> list[Path]:
    """Every ``_versions/*.manifest`` the shape wrote, in every root and branch."""
    found = []
    for root in shape.roots:
        for dirpath, _dirs, files in os.walk(root):
            if os.path.basename(dirpath) == "_versions":
                found.extend(Path(dirpath, f) for f in files if f.endswith(".manifest"))
    return sorted(found)


def reencode(data: bytes, manifest: table_pb2.Manifest | None = None) -> bytes:
    decoded = decode_manifest_file(data)
    return encode_manifest_file(
        decoded.manifest if manifest is None else manifest, decoded.transaction_bytes, decoded.index_section
    )


def _has_unordered_maps(message: Message) -> bool:
    """Whether ``message`` (recursively) holds a protobuf map whose bytes pylance does not fix: two or
    more entries (pylance 14.0.2 writes map entries in hash order, different on every write), or an entry
    with an empty key or value (prost leaves such a field out of the entry; the Python runtime writes it)."""
    for fd, value in message.ListFields():
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            if len(value) >= 2:
                return True
            if any(not k or (not isinstance(v, Message) and not v) for k, v in value.items()):
                return True
            values = [v for v in value.values() if isinstance(v, Message)]
        elif fd.message_type is not None:
            values = list(value) if fd.is_repeated else [value]
        else:
            continue
        if any(_has_unordered_maps(v) for v in values):
            return True
    return False


def test_every_manifest_reencodes_to_identical_bytes(shape: Shape) -> None:
    """Byte-identical, except where pylance's own bytes are not canonical (maps, see above): there the
    re-encoded file must decode to the same sections and have the same canonical (sorted-map) bytes."""
    paths = manifests_of(shape)
    assert paths
    for path in paths:
        original = path.read_bytes()
        again = reencode(original)
        if again == original:
            continue
        before, after = decode_manifest_file(original), decode_manifest_file(again)
        assert _has_unordered_maps(before.manifest), f"{path}: re-encoded bytes differ"
        assert after.manifest == before.manifest, path
        assert after.transaction_bytes == before.transaction_bytes, path
        assert after.index_section == before.index_section, path
        canonical = table_pb2.Manifest()
        canonical.ParseFromString(original[int.from_bytes(original[-16:-8], "little") + 4 : -16])
        assert canonical.SerializeToString(deterministic=True) == after.manifest.SerializeToString(
            deterministic=True
        ), path


def _sorted_table(ds: lance.LanceDataset) -> pa.Table:
    return ds.to_table().sort_by("id")


def test_pylance_reads_a_manifest_lancespec_encoded(shape: Shape, copy_tree: Callable[[str], Path]) -> None:
    """Decode the snapshot's manifest, move its timestamp by one second, encode it, write it over the
    manifest in a copy of the dataset; pylance opens the copy at that version and reads the same rows."""
    snapshot = Dataset.open(shape.uri).snapshot(**shape.open_kwargs)
    copy = copy_tree(shape.uri)
    target = copy / os.path.relpath(snapshot.manifest_uri, shape.uri)
    original = target.read_bytes()

    manifest = table_pb2.Manifest()
    manifest.CopyFrom(decode_manifest_file(original).manifest)
    manifest.timestamp.seconds += 1
    rewritten = reencode(original, manifest)
    assert rewritten != original  # (a tag's manifestSize may now be stale; pylance 14.0.2 ignores it)
    target.write_bytes(rewritten)

    copied_uri = str(copy / os.path.relpath(shape.lance_uri, shape.uri)) if shape.branch else str(copy)
    before = shape.open_lance()
    after = lance.dataset(copied_uri, version=shape.lance_version)
    assert after.version == before.version
    assert _sorted_table(after).equals(_sorted_table(before))

    def stamp(ds: lance.LanceDataset) -> float:
        (entry,) = [v for v in ds.versions() if v["version"] == ds.version]
        return float(entry["timestamp"].timestamp())

    assert stamp(after) - stamp(before) == 1.0  # pylance read the rewritten manifest
