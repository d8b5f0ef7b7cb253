"""Structure-aware damage for the fuzzer (``lancespec.fuzz``): mutations that keep a file decodable and
change what it says, where byte damage mostly makes it undecodable.

- Manifests and transaction files (protobuf): one repeated field anywhere in the message tree gets an
  element duplicated, dropped, moved or all of them removed; or one scalar gets an extreme value (0, -1,
  -2, the largest of its type) or, for a string, a hostile one (``..``, an absolute path, an encoded
  separator, a format character, 10,000 characters). A manifest's inline transaction and index section
  are reachable too, and the file is framed again as the format says.
- Deletion files in both encodings: the offsets rewritten (duplicated, past the fragment's rows, the
  largest u32, reversed, emptied), as an Arrow IPC file of ``row_id: uint32`` or a roaring bitmap.
- Refs (tag and branch JSON): a value replaced by a huge or negative number, a string, a float, null, a
  nested object, or removed.

Each function takes the seeded ``random.Random`` of the case, so a seed damages the same way every run.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

HOSTILE_STRINGS = ("", "..", "../../outside", "/etc/passwd", "a/../../b", "x%2F..%2Fy", "\u202e\u061c\u00ad",
                   "nul\x00byte", "d" * 10_000, "s3://bucket/key", "file:///tmp")
#: What ``file:///tmp`` becomes when drawn: its scheme in capitals is the same location, and ``fiLe:outside`` a
#: relative one (an outside review found ``FILE:///x`` opened under the working directory). Drawn only then, so
#: that the seeds kept as regressions damage what they damaged.
FILE_SCHEME_SPELLINGS = ("file:///tmp", "FILE:///tmp", "fiLe:outside")
HOSTILE_NUMBERS = (0, 1, -1, -2, 2**31 - 1, 2**32 - 1, 2**63 - 1, 2**64 - 1)

_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1), FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1), FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1), FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1), FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1), FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


# --- protobuf messages ----------------------------------------------------------------------------------


def _sites(message: Message, depth: int = 0) -> list[tuple[Message, Any]]:
    """Every (message, field) of the tree under ``message`` a mutation may change: set or repeated fields,
    and the unset scalars of each message (a field a writer left out is a place to put a value)."""
    sites: list[tuple[Message, Any]] = []  # (message, its FieldDescriptor)
    fd: Any
    for fd in message.DESCRIPTOR.fields:
        sites.append((message, fd))
        if fd.type != FieldDescriptor.TYPE_MESSAGE or depth > 12:
            continue
        if fd.is_repeated:
            if fd.message_type.GetOptions().map_entry:
                continue
            for child in getattr(message, fd.name):
                sites.extend(_sites(child, depth + 1))
        elif message.HasField(fd.name):
            sites.extend(_sites(getattr(message, fd.name), depth + 1))
    return sites


def _many_ids() -> bytes:
    """A roaring bitmap of 2^28 ids in 58 KB of runs: a small value that counts many (an index's fragment bitmap
    expanded to 2^24 ids cost 1.2 GB; an outside review)."""
    from pyroaring import BitMap

    ids = BitMap()
    ids.add_range(0, 1 << 28)
    ids.run_optimize()
    return bytes(ids.serialize())


def _scalar(fd: Any, rng: random.Random) -> Any:
    if fd.type == FieldDescriptor.TYPE_STRING:
        value = rng.choice(HOSTILE_STRINGS)
        return rng.choice(FILE_SCHEME_SPELLINGS) if value == "file:///tmp" else value
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return rng.choice((b"", b"\x00" * 17, bytes(range(256)), _many_ids()))
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if fd.type == FieldDescriptor.TYPE_ENUM:
        return rng.choice([v.number for v in fd.enum_type.values] + [99])
    if fd.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return rng.choice((0.0, -1.0, float("inf"), float("nan"), 1e300))
    low, high = _INT_RANGES.get(fd.type, (-(2**63), 2**63 - 1))
    return min(max(rng.choice(HOSTILE_NUMBERS), low), high)


def mutate_message(message: Message, rng: random.Random) -> str:
    """Change one field somewhere in ``message`` in place; say what was done."""
    owner, fd = rng.choice(_sites(message))
    name = f"{owner.DESCRIPTOR.name}.{fd.name}"
    if fd.is_repeated:
        items = getattr(owner, fd.name)
        kind = rng.choice(("duplicate", "drop", "move", "clear", "add")) if len(items) else "add"
        if fd.type == FieldDescriptor.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry:
            kind = "clear"
        if kind == "clear":
            owner.ClearField(fd.name)
        elif fd.type == FieldDescriptor.TYPE_MESSAGE:
            if kind == "add":
                items.add()
            elif kind == "duplicate":
                items.add().CopyFrom(items[rng.randrange(len(items))])
            elif kind == "drop":
                del items[rng.randrange(len(items))]
            else:
                first = type(items[0])()
                first.CopyFrom(items[0])
                del items[0]
                items.add().CopyFrom(first)
        else:
            values = list(items)
            if kind == "add":
                values.append(_scalar(fd, rng))
            elif kind == "duplicate":
                values.append(values[rng.randrange(len(values))])
            elif kind == "drop":
                del values[rng.randrange(len(values))]
            else:
                values.reverse()
            owner.ClearField(fd.name)
            items.extend(values)
        return f"{kind} {name}"
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        if owner.HasField(fd.name) and rng.random() < 0.5:
            owner.ClearField(fd.name)
            return f"clear {name}"
        getattr(owner, fd.name).SetInParent()
        return f"set {name}"
    setattr(owner, fd.name, _scalar(fd, rng))
    return f"set {name}"


def damage_manifest(path: Path, rng: random.Random) -> str:
    """A structural change to the manifest at ``path``: its manifest (most often), inline transaction or
    index section; the file is framed again."""
    from reference.codec import decode_manifest_file, encode_manifest_file
    from reference.proto import table_pb2, transaction_pb2

    decoded = decode_manifest_file(path.read_bytes(), str(path))
    manifest = table_pb2.Manifest()
    manifest.CopyFrom(decoded.manifest)
    txn_bytes, indices = decoded.transaction_bytes, decoded.index_section
    roll = rng.random()
    if roll < 0.15 and txn_bytes is not None:
        txn = transaction_pb2.Transaction.FromString(txn_bytes)
        what = "inline transaction: " + mutate_message(txn, rng)
        txn_bytes = txn.SerializeToString()
    elif roll < 0.25 and indices is not None:
        edited = table_pb2.IndexSection()
        edited.CopyFrom(indices)
        what = "index section: " + mutate_message(edited, rng)
        indices = edited
    else:
        what = mutate_message(manifest, rng)
    path.write_bytes(encode_manifest_file(manifest, txn_bytes, indices))
    return what


def damage_transaction(path: Path, rng: random.Random) -> str:
    from reference.proto import transaction_pb2

    txn = transaction_pb2.Transaction.FromString(path.read_bytes())
    what = mutate_message(txn, rng)
    path.write_bytes(txn.SerializeToString())
    return what


# --- deletion files -------------------------------------------------------------------------------------


def _offsets(offsets: list[int], rng: random.Random) -> tuple[list[int], str]:
    kind = rng.choice(("duplicate", "past_rows", "u32_max", "reverse", "empty", "many"))
    if kind == "duplicate" and offsets:
        return [*offsets, offsets[0]], kind
    if kind == "past_rows":
        return [*offsets, max(offsets, default=0) + rng.choice((1, 1000, 2**20))], kind
    if kind == "u32_max":
        return [*offsets, 2**32 - 1], kind
    if kind == "reverse":
        return offsets[::-1], kind
    if kind == "many":
        return list(range(rng.choice((10_000, 100_000)))), kind
    return [], "empty"


def damage_deletion(path: Path, rng: random.Random) -> str:
    """New offsets in the file's own encoding (``.arrow``: ``row_id: uint32``; ``.bin``: a roaring
    bitmap), or, one time in five, the other encoding's bytes under this name."""
    import pyarrow as pa
    import pyarrow.ipc as ipc
    from pyroaring import BitMap

    if path.suffix == ".arrow":
        offsets = ipc.open_file(pa.BufferReader(path.read_bytes())).read_all().column(0).to_pylist()
    else:
        offsets = list(BitMap.deserialize(path.read_bytes()))
    changed, kind = _offsets([int(o) for o in offsets], rng)
    as_arrow = (path.suffix == ".arrow") != (rng.random() < 0.2)
    if as_arrow:  # an Arrow file keeps order and duplicates; a bitmap cannot
        sink = pa.BufferOutputStream()
        table = pa.table({"row_id": pa.array(changed, pa.uint32())})
        with ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        path.write_bytes(sink.getvalue().to_pybytes())
    else:
        path.write_bytes(BitMap(changed).serialize())
    return f"{kind} offsets as {'arrow' if as_arrow else 'bitmap'}"


# --- refs ---------------------------------------------------------------------------------------------


def _hostile_json(rng: random.Random) -> Any:
    return rng.choice((10**30, -1, 2**64, "2", 2.5, None, {"version": 1}, [1], True, "../../x", "x" * 10_000))


def damage_ref(path: Path, rng: random.Random) -> str:
    """One value of a tag or branch file replaced or removed (the JSON stays well formed)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict) or not document:
        path.write_text(json.dumps(_hostile_json(rng)), encoding="utf-8")
        return "ref replaced"
    key = rng.choice(sorted(document))
    if rng.random() < 0.2:
        del document[key]
        what = f"remove {key}"
    else:
        document[key] = _hostile_json(rng)
        what = f"set {key}"
    path.write_text(json.dumps(document), encoding="utf-8")
    return what


def structured(path: Path) -> Callable[[Path, random.Random], str] | None:
    """The structure-aware damage for the file at ``path``, or None when it has none."""
    if path.suffix == ".manifest":
        return damage_manifest
    if path.suffix == ".txn":
        return damage_transaction
    if path.suffix in (".arrow", ".bin") and path.parent.name == "_deletions":
        return damage_deletion
    if path.suffix == ".json" and "_refs" in path.parts:
        return damage_ref
    return None
