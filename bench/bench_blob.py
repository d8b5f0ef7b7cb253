"""Reading blob v2 values: the reference's ``BlobReader`` against pylance's ``take_blobs``.

* ``blob-take-1000``: open the dataset and read 1,000 random blobs of mixed kinds in full (200 with
  ``--quick``).
* ``blob-range-1000``: the same blobs, but one 4 KiB ``read_range`` at a random offset of each.

The input is written by pylance: 3,000 rows (600 with ``--quick``) of one blob column with thresholds
configured small enough to keep it about 60 MB (inline <= 8 KiB, dedicated > 256 KiB, packs <= 4 MiB):
half inline, 30% packed, 2.5% dedicated, the rest external (whole objects and ranges of 40 files in a
registered base). The notes give what each side read: the reference's payload bytes fetched against the
bytes the calls asked for (its ``FetchCounter``; descriptor metadata counted apart), and pylance's
``read`` syscall bytes (``rchar`` of ``/proc/self/io``, which includes its metadata reads).
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
from harness import CheckFailed, Context, benchmark

from reference.blob.read import BlobReader, FetchCounter
from reference.table import Dataset

INLINE_MAX, DEDICATED_ABOVE, PACK_MAX = 8 * 1024, 256 * 1024, 4 * 1024 * 1024
RANGE = 4096
KINDS = ("inline", "packed", "dedicated", "external")


@dataclass(frozen=True)
class BlobInputs:
    uri: str
    indices: list[int]
    ranges: list[tuple[int, int]]  # (offset, length) per index, for blob-range
    kinds: Counter[str]


@dataclass
class ReadResult:
    digest: str
    requested: int
    counter: FetchCounter | None = None
    rchar: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _rchar() -> int | None:
    try:
        with open("/proc/self/io") as fh:
            for line in fh:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _value(i: int, rng: random.Random, ext: Path) -> Any:
    slot = i % 40
    if slot < 20:
        return rng.randbytes(rng.randint(100, 8 * 1024))
    if slot < 32:
        return rng.randbytes(rng.randint(8 * 1024 + 1, 64 * 1024))
    if slot == 32:
        return rng.randbytes(rng.randint(256 * 1024 + 1, 300 * 1024))
    target = ext / f"obj-{i % 40 + rng.randrange(5) * 40:04d}.bin"
    if slot < 36:
        return str(target)
    size = target.stat().st_size
    position = rng.randrange(size // 2)
    return lance.Blob.from_uri(str(target), position=position, size=rng.randint(1, size - position))


def build(directory: Path, rows: int) -> None:
    rng = random.Random(4)
    ext = directory / "external"
    ext.mkdir()
    for k in range(200):
        (ext / f"obj-{k:04d}.bin").write_bytes(rng.randbytes(rng.randint(16 * 1024, 64 * 1024)))
    values = [_value(i, rng, ext) for i in range(rows)]
    schema = pa.schema([pa.field("id", pa.int64()), lance.blob_field("blob", inline_size_threshold=INLINE_MAX,
                                                                dedicated_size_threshold=DEDICATED_ABOVE,
                                                                pack_file_size_threshold=PACK_MAX)])
    table = pa.Table.from_arrays([pa.array(range(rows), pa.int64()), lance.blob_array(values)], schema=schema)
    lance.write_dataset(table, str(directory / "ds"), data_storage_version="2.2", max_rows_per_file=1000,
                        initial_bases=[lance.DatasetBasePath(str(ext), name="external")])


def _setup(ctx: Context) -> BlobInputs:
    rows = ctx.size(3000, 600)
    count = ctx.size(1000, 200)
    directory = ctx.cached(f"blob-mixed-{rows}", lambda d: build(d, rows))
    uri = str(directory / "ds")
    rng = random.Random(7)
    indices = rng.sample(range(rows), count)
    kinds = lance.dataset(uri).to_table(columns=["blob"]).column("blob").to_pylist()
    ranges = []
    for i in indices:
        descriptor = kinds[i]
        size = descriptor["size"] or (directory / "external" / descriptor["blob_uri"]).stat().st_size
        length = min(RANGE, size)
        ranges.append((rng.randrange(size - length + 1), length))
    return BlobInputs(uri, indices, ranges, Counter(KINDS[kinds[i]["kind"]] for i in indices))


def _finish(parts: list[bytes]) -> tuple[str, int]:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest(), sum(len(p) for p in parts)


def take_lancespec(inputs: BlobInputs) -> ReadResult:
    counter = FetchCounter()
    reader = BlobReader(Dataset.open(inputs.uri).snapshot(), counter=counter)
    parts = [b"" if f is None else f.readall() for f in reader.take_blobs("blob", inputs.indices)]
    digest, requested = _finish(parts)
    return ReadResult(digest, requested, counter)


def take_pylance(inputs: BlobInputs) -> ReadResult:
    before = _rchar()
    files = lance.dataset(inputs.uri).take_blobs("blob", indices=inputs.indices)
    parts = [b"" if f is None else f.readall() for f in files]
    after = _rchar()
    digest, requested = _finish(parts)
    return ReadResult(digest, requested, rchar=None if before is None or after is None else after - before)


def range_lancespec(inputs: BlobInputs) -> ReadResult:
    counter = FetchCounter()
    reader = BlobReader(Dataset.open(inputs.uri).snapshot(), counter=counter)
    files = reader.take_blobs("blob", inputs.indices)
    parts = [b"" if f is None else f.read_range(o, n) for f, (o, n) in zip(files, inputs.ranges, strict=True)]
    digest, requested = _finish(parts)
    return ReadResult(digest, requested, counter)


def range_pylance(inputs: BlobInputs) -> ReadResult:
    before = _rchar()
    files = lance.dataset(inputs.uri).take_blobs("blob", indices=inputs.indices)
    parts = [b"" if f is None else f.read_range(o, n) for f, (o, n) in zip(files, inputs.ranges, strict=True)]
    after = _rchar()
    digest, requested = _finish(parts)
    return ReadResult(digest, requested, rchar=None if before is None or after is None else after - before)


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def same_bytes(inputs: BlobInputs, ls: ReadResult, pl: ReadResult) -> str:
    if ls.digest != pl.digest or ls.requested != pl.requested:
        raise CheckFailed(f"the blobs differ: lancespec {ls.requested} B ({ls.digest[:12]}), pylance "
                          f"{pl.requested} B ({pl.digest[:12]})")
    assert ls.counter is not None
    if ls.counter.bytes != ls.requested:
        raise CheckFailed(f"lancespec fetched {ls.counter.bytes} payload bytes for {ls.requested} requested")
    mix = ", ".join(f"{inputs.kinds[k]} {k}" for k in KINDS)
    fetched = ls.counter.bytes + ls.counter.metadata_bytes
    note = (f"{len(inputs.indices):,} blobs ({mix}), identical bytes both sides; requested {_mb(ls.requested)}; "
            f"lancespec fetched payload {_mb(ls.counter.bytes)} in {ls.counter.requests:,} ranged gets "
            f"({ls.counter.bytes / max(ls.requested, 1):.2f}x requested) + descriptors "
            f"{_mb(ls.counter.metadata_bytes)} in {ls.counter.metadata_requests} gets "
            f"(total {fetched / max(ls.requested, 1):.2f}x)")
    if pl.rchar is not None:
        note += f"; pylance read() {_mb(pl.rchar)} ({pl.rchar / max(pl.requested, 1):.2f}x requested)"
    return note


@benchmark("blob-take-1000", measures="open and read 1,000 random blobs of mixed kinds in full (200 with --quick)",
           lancespec=take_lancespec, pylance=take_pylance, check=same_bytes)
def setup_take(ctx: Context) -> BlobInputs:
    return _setup(ctx)


@benchmark("blob-range-1000",
           measures="open and read one 4 KiB range at a random offset of 1,000 random blobs (200 with --quick)",
           lancespec=range_lancespec, pylance=range_pylance, check=same_bytes)
def setup_range(ctx: Context) -> BlobInputs:
    return _setup(ctx)
