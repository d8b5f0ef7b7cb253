"""The fuzzers' pristine world (``lancespec.fuzz``, ``lancespec.fuzz_answers``): a small dataset with every
kind of file a mutation should reach (data files, blob v2 packed and dedicated sidecars, ``.arrow`` and
``.bin`` deletion files, a registered base, a tag, a branch), written on a local folder or an object store."""

from __future__ import annotations

from pathlib import Path

from reference.store import Storage


def write_world(top: str, storage: Storage | None = None) -> str:
    """Write the world under ``top`` (a local folder or a store's URI, without a trailing ``/``): the dataset
    at ``top/ds``, its base at ``top/base``, so everything under ``top`` is the whole world; returns the
    dataset's URI."""
    import lance
    import pyarrow as pa

    from reference import ops, refs
    from reference.table import Dataset

    root = f"{top}/ds"
    blobs = [bytes((i * 7 + j) % 256 for j in range(n)) for i, n in enumerate((40, 600, 5000, 0))]
    table = pa.Table.from_arrays(
        [pa.array(range(4), pa.int64()), lance.blob_array(blobs)],
        schema=pa.schema([pa.field("id", pa.int64()), lance.blob_field(
            "blob", inline_size_threshold=100, dedicated_size_threshold=1000, pack_file_size_threshold=2500)]))
    ops.create(root, table, storage=storage, max_rows_per_file=2,
               initial_bases=[ops.DatasetBasePath(f"{top}/base", name="b")], target_bases=["b"])
    ds = Dataset.open(root, storage=storage) if storage is not None else Dataset.open(root)
    ops.delete(ds, rows={0: [1]})
    more = pa.Table.from_arrays([pa.array(range(10, 5012), pa.int64()), lance.blob_array([b"x"] * 5002)],
                                schema=table.schema)
    result = ops.append(ds, more, max_rows_per_file=10_000)
    fragment = ds.snapshot(result.version).fragments[-1]
    ops.delete(ds, rows={fragment.id: range(5000)})
    refs.create_tag(ds, "t", 2)
    refs.create_branch(ds, "feat", 2)
    return root


def build_pristine(top: Path) -> Path:
    """The world on the local folder ``top`` (dataset ``top/ds``, base ``top/base``); returns ``top``."""
    write_world(str(top))
    return top
