"""Blob v2 between the reference and pylance 14.0.2 (the Blob v2 post; docs/lance-format.md §14).

* A mixed column (inline, packed, dedicated, external whole file, external range, empty, null) written by
  either side reads back byte-identical through the other side's reader, with seek/tell/read_range, and
  both sides write the same descriptors and the same sidecar files.
* Threshold edges: at and one byte over each threshold (defaults once, configured thresholds otherwise),
  pack splitting, dedicated-before-inline.
* External URIs: refused outside every non-root base (unless opted in with an absolute URI), stored
  relative to their base and readable after the base is relocated.
* Sidecars resolved through their data file's base: multi-base datasets, shallow clones.
* Lifecycle: delete, compact (pylance's ``compact_files``; the reference has no rewrite operation),
  cleanup removes the orphaned sidecars and keeps the live ones, for pylance- and reference-written data.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import reference.api as ref
from conformance.certify import certify
from reference import clone, ops
from reference.blob.read import BlobReader, FetchCounter
from reference.blob.routing import INLINE_SIZE_THRESHOLD_KEY, route, thresholds_of
from reference.errors import BlobReadError, BlobThresholdMismatch, ExternalBlobOutsideBases, ValidationError
from reference.gc import CleanupPolicy, cleanup
from reference.relocate import relocate
from reference.table import Dataset

pytestmark = pytest.mark.interop

INLINE, PACKED, DEDICATED, EXTERNAL = 0, 1, 2, 3
WHOLE = bytes(range(256)) * 8  # 2048 bytes
RANGE_SOURCE = bytes((7 * i) % 251 for i in range(3000))
RANGE = (100, 700)
#: Configured thresholds that keep the tests small: inline <= 100 B, dedicated > 1000 B, packs <= 2500 B.
SMALL = {"inline_size_threshold": 100, "dedicated_size_threshold": 1000, "pack_file_size_threshold": 2500}


def payload(n: int, seed: int) -> bytes:
    return bytes((seed + 31 * i) % 256 for i in range(n))


@pytest.fixture
def ext(tmp_path: Path) -> Path:
    """A directory registered as the non-root base ``external`` (files ``whole.bin``, ``sub/ranged.bin``)."""
    directory = tmp_path / "external"
    (directory / "sub").mkdir(parents=True)
    (directory / "whole.bin").write_bytes(WHOLE)
    (directory / "sub" / "ranged.bin").write_bytes(RANGE_SOURCE)
    return directory


def mixed_values(ext: Path) -> tuple[list[Any], list[bytes | None], list[int | None]]:
    """Values, their expected bytes and expected kinds under ``SMALL`` thresholds."""
    small, medium, medium2, large = payload(40, 1), payload(600, 2), payload(900, 3), payload(5000, 4)
    values: list[Any] = [
        small, medium, large, str(ext / "whole.bin"),
        lance.Blob.from_uri(str(ext / "sub" / "ranged.bin"), position=RANGE[0], size=RANGE[1]),
        lance.Blob.empty(), None, medium2,
    ]
    expected = [small, medium, large, WHOLE, RANGE_SOURCE[RANGE[0]:sum(RANGE)], b"", None, medium2]
    kinds = [INLINE, PACKED, DEDICATED, EXTERNAL, EXTERNAL, INLINE, None, PACKED]
    return values, expected, kinds


def blob_table(values: Sequence[Any], **thresholds: int) -> pa.Table:
    field = lance.blob_field("blob", **thresholds)
    ids = pa.array(range(len(values)), pa.int64())
    return pa.Table.from_arrays([ids, lance.blob_array(list(values))],
                                schema=pa.schema([pa.field("id", pa.int64()), field]))


def write_pylance(table: pa.Table, uri: Path, bases: Sequence[tuple[str, Path]] = (), **kw: Any) -> lance.LanceDataset:
    initial = [lance.DatasetBasePath(str(p), name=n) for n, p in bases] or None
    return lance.write_dataset(table, str(uri), data_storage_version="2.2", initial_bases=initial, **kw)


def write_reference(table: pa.Table, uri: Path, bases: Sequence[tuple[str, Path]] = (), **kw: Any) -> ref.LanceDataset:
    initial = [ref.DatasetBasePath(str(p), name=n) for n, p in bases] or None
    return ref.write_dataset(table, str(uri), initial_bases=initial, **kw)


def descriptors(uri: Path | str) -> list[tuple[int, int, int, int, str] | None]:
    rows = lance.dataset(str(uri)).to_table(columns=["blob"]).column("blob").to_pylist()
    return [None if d is None else (d["kind"], d["position"], d["size"], d["blob_id"], d["blob_uri"]) for d in rows]


def sidecars(directory: Path | str) -> dict[str, bytes]:
    """``{path below the data directory with the stem replaced by '*': bytes}`` of every ``.blob``."""
    out = {}
    for path in sorted(Path(directory).rglob("*.blob")):
        out[f"*/{path.name}"] = path.read_bytes()
    return out


def blob_files(*directories: Path | str) -> set[str]:
    return {str(p) for d in directories for p in Path(d).rglob("*.blob")}


def read_all(files: Sequence[Any]) -> list[bytes | None]:
    return [None if f is None else f.readall() for f in files]


def reference_blobs(uri: Path | str, n: int, column: str = "blob") -> list[bytes | None]:
    return read_all(ref.dataset(str(uri)).take_blobs(column, list(range(n))))


def pylance_blobs(uri: Path | str, n: int, column: str = "blob") -> list[bytes | None]:
    return read_all(lance.dataset(str(uri)).take_blobs(column, indices=list(range(n))))


def exercise(f: Any, expected: bytes) -> list[Any]:
    """The same sequence of file-like calls on any BlobFile; returns what each call gave."""
    size = len(expected)
    out: list[Any] = [f.size(), f.tell(), f.read(3), f.tell()]
    out += [f.seek(size // 2), f.read(5), f.tell(), f.seek(-min(4, size), io.SEEK_END), f.read(), f.tell()]
    out += [f.seek(2, io.SEEK_SET), f.seek(3, io.SEEK_CUR), f.read(2), f.seek(size + 10), f.read(4)]
    if size:
        out += [f.read_range(0, min(size, 7)), f.read_range(size - 1, 1), f.tell()]
    out += [f.seek(0), f.readall()]
    return out


# --- one mixed column, both directions -------------------------------------------------------------


def test_mixed_column_reference_written_reads_back_through_pylance(tmp_path: Path, ext: Path) -> None:
    values, expected, kinds = mixed_values(ext)
    ds = write_reference(blob_table(values, **SMALL), tmp_path / "ref", [("external", ext)])
    found = descriptors(ds.uri)
    assert [d[0] if d else None for d in found] == kinds
    assert found[3] == (EXTERNAL, 0, 0, 1, "whole.bin")  # whole-file reference: relative, size 0
    assert found[4] == (EXTERNAL, RANGE[0], RANGE[1], 1, "sub/ranged.bin")
    pylance_files = lance.dataset(ds.uri).take_blobs("blob", indices=list(range(len(values))))
    assert read_all(pylance_files) == expected
    for f, want in zip(pylance_files, expected, strict=True):
        if want is not None:
            assert exercise(f, want)[-1] == want


def test_mixed_column_pylance_written_reads_back_through_the_reference(tmp_path: Path, ext: Path) -> None:
    values, expected, kinds = mixed_values(ext)
    pds = write_pylance(blob_table(values, **SMALL), tmp_path / "pyl", [("external", ext)])
    assert [d[0] if d else None for d in descriptors(pds.uri)] == kinds
    reference_files = ref.dataset(pds.uri).take_blobs("blob", list(range(len(values))))
    pylance_files = pds.take_blobs("blob", indices=list(range(len(values))))
    for mine, theirs, want in zip(reference_files, pylance_files, expected, strict=True):
        if want is None:
            assert mine is None and theirs is None
            continue
        assert mine is not None
        assert exercise(mine, want) == exercise(theirs, want)
        assert mine.read_range(0, 0) == b""
        with pytest.raises(ValueError, match=f"exceeds blob size {len(want)}"):
            mine.read_range(0, len(want) + 1)
        with pytest.raises(ValueError, match="Blob range end"):
            theirs.read_range(0, len(want) + 1)


def test_both_writers_store_the_same_descriptors_and_sidecars(tmp_path: Path, ext: Path) -> None:
    values, _, _ = mixed_values(ext)
    pds = write_pylance(blob_table(values, **SMALL), tmp_path / "pyl", [("external", ext)])
    rds = write_reference(blob_table(values, **SMALL), tmp_path / "ref", [("external", ext)])
    assert descriptors(rds.uri) == descriptors(pds.uri)
    assert sidecars(tmp_path / "ref" / "data") == sidecars(tmp_path / "pyl" / "data")
    pyl_files = sorted((tmp_path / "pyl" / "data").glob("*.lance"))
    ref_files = sorted((tmp_path / "ref" / "data").glob("*.lance"))
    assert [p.stat().st_size for p in ref_files] == [p.stat().st_size for p in pyl_files]
    # The manifest's blob field: parent struct with the extension, four children, one column.
    def shape(uri: str) -> list[tuple[str, int, str, str, dict[str, bytes]]]:
        return [(f.name, f.parent_id, f.logical_type, f.extension_name, dict(f.metadata))
                for f in Dataset(uri).snapshot().manifest.fields]
    assert shape(rds.uri) == shape(pds.uri)
    for uri in (rds.uri, pds.uri):
        data_file = Dataset(uri).snapshot().manifest.fragments[0].files[0]
        assert list(data_file.fields) == [0, 1] and list(data_file.column_indices) == [0, 1]


@pytest.mark.parametrize("writer", ["ref", "pyl"])
def test_reference_scan_returns_the_stored_descriptors(tmp_path: Path, ext: Path, writer: str) -> None:
    """``reference.read`` (scans, delete predicates) reads blob columns as pylance's scan does: descriptors."""
    values, _, _ = mixed_values(ext)
    write = write_reference if writer == "ref" else write_pylance
    ds = write(blob_table(values, **SMALL), tmp_path / "ds", [("external", ext)], max_rows_per_file=3)
    mine = ref.dataset(ds.uri).to_table()
    theirs = lance.dataset(ds.uri).to_table()
    assert mine.column("id").to_pylist() == theirs.column("id").to_pylist()
    assert mine.column("blob").to_pylist() == theirs.column("blob").to_pylist()


def test_legacy_blob_column_is_refused_at_2_2(tmp_path: Path) -> None:
    """pylance stores ``lance-encoding:blob`` binary columns as blob v2 from 2.2 on; the reference writes
    blob v2 only from the ``lance.blob.v2`` type and refuses rather than write something else."""
    field = pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    table = pa.Table.from_arrays([pa.array([b"a"], pa.large_binary())], schema=pa.schema([field]))
    with pytest.raises(ValidationError, match="legacy blob column"):
        ref.write_dataset(table, str(tmp_path / "ref"))
    assert not (tmp_path / "ref").exists()


def test_reference_reader_fetches_only_the_bytes_asked_for(tmp_path: Path, ext: Path) -> None:
    values, expected, _ = mixed_values(ext)
    pds = write_pylance(blob_table(values, **SMALL), tmp_path / "pyl", [("external", ext)])
    counter = FetchCounter()
    reader = BlobReader(Dataset(pds.uri).snapshot(), counter=counter)
    files = reader.take_blobs("blob", list(range(len(values))))
    metadata_bytes = counter.metadata_bytes
    assert counter.bytes == 0 and metadata_bytes > 0  # descriptors only, no payload yet
    requested = 0
    for f, want in zip(files, expected, strict=True):
        if not want:
            continue
        assert f is not None
        assert f.read_range(len(want) // 3, 2) == want[len(want) // 3:len(want) // 3 + 2]
        f.seek(1)
        assert f.read(3) == want[1:4]
        requested += 2 + min(3, len(want) - 1)
    assert counter.bytes == requested
    assert counter.metadata_bytes == metadata_bytes  # descriptors are cached per fragment
    # The descriptor read touches the tail and the blob column's pages, not the inline payload.
    data_file = next((tmp_path / "pyl" / "data").glob("*.lance"))
    assert metadata_bytes < data_file.stat().st_size


# --- thresholds ---------------------------------------------------------------------------------------


def test_default_threshold_edges(tmp_path: Path) -> None:
    sizes = [65536, 65537, 4194304, 4194305]
    values = [payload(n, i) for i, n in enumerate(sizes)]
    for name, write in (("pyl", write_pylance), ("ref", write_reference)):
        ds = write(blob_table(values), tmp_path / name)
        assert [d[0] for d in descriptors(ds.uri) if d] == [INLINE, PACKED, PACKED, DEDICATED], name
        assert pylance_blobs(ds.uri, 4) == values
        assert reference_blobs(ds.uri, 4) == values
    assert sidecars(tmp_path / "ref" / "data") == sidecars(tmp_path / "pyl" / "data")


@pytest.mark.parametrize(("thresholds", "sizes", "kinds"), [
    ({"inline_size_threshold": 100, "dedicated_size_threshold": 1000}, [100, 101, 1000, 1001],
     [INLINE, PACKED, PACKED, DEDICATED]),
    ({"inline_size_threshold": 0}, [0, 1, 0], [INLINE, PACKED, INLINE]),
    ({"inline_size_threshold": 1000, "dedicated_size_threshold": 10}, [5, 10, 11, 2000],
     [INLINE, INLINE, DEDICATED, DEDICATED]),  # dedicated is checked first
], ids=["edges", "inline-0", "dedicated-below-inline"])
def test_configured_thresholds_move_the_edges(tmp_path: Path, thresholds: dict[str, int], sizes: list[int],
                                               kinds: list[int]) -> None:
    values = [payload(n, i) for i, n in enumerate(sizes)]
    found = {}
    for name, write in (("pyl", write_pylance), ("ref", write_reference)):
        ds = write(blob_table(values, **thresholds), tmp_path / name)
        found[name] = descriptors(ds.uri)
        assert [d[0] for d in found[name] if d] == kinds, name
        declared = thresholds_of(Dataset(ds.uri).snapshot().manifest.fields[1])
        assert [route(n, declared) for n in sizes] == kinds
        assert reference_blobs(ds.uri, len(values)) == pylance_blobs(ds.uri, len(values)) == values
    assert found["ref"] == found["pyl"]


def test_pack_splitting(tmp_path: Path) -> None:
    values = [payload(1000, i) for i in range(5)] + [payload(3000, 9), payload(100, 8)]
    thresholds = {"inline_size_threshold": 10, "dedicated_size_threshold": 5000, "pack_file_size_threshold": 2500}
    for name, write in (("pyl", write_pylance), ("ref", write_reference)):
        ds = write(blob_table(values, **thresholds), tmp_path / name)
        assert [(d[0], d[1], d[3]) for d in descriptors(ds.uri) if d] == [
            (PACKED, 0, 1), (PACKED, 1000, 1), (PACKED, 0, 2), (PACKED, 1000, 2), (PACKED, 0, 3),
            (PACKED, 0, 4), (PACKED, 0, 5)], name  # a 3000-B blob fills a pack of its own
        assert reference_blobs(ds.uri, len(values)) == values
    packs = sidecars(tmp_path / "ref" / "data")
    assert packs == sidecars(tmp_path / "pyl" / "data")
    assert sorted(len(b) for b in packs.values()) == [100, 1000, 2000, 2000, 3000]
    assert "*/" + "1" + "0" * 31 + ".blob" in packs and "*/" + "101" + "0" * 29 + ".blob" in packs


def test_append_keeps_the_dataset_thresholds(tmp_path: Path) -> None:
    root = tmp_path / "ref"
    write_reference(blob_table([b"a"], inline_size_threshold=10, dedicated_size_threshold=100), root)
    ref.write_dataset(pa.table({"id": pa.array([1], pa.int64()), "blob": lance.blob_array([b"x" * 50])}),
                      str(root), mode="append")
    assert [d[0] for d in descriptors(root) if d] == [INLINE, PACKED]
    with pytest.raises(BlobThresholdMismatch, match="lance-encoding:blob-inline-size-threshold=20"):
        ref.write_dataset(blob_table([b"a"], inline_size_threshold=20), str(root), mode="append")
    with pytest.raises(OSError, match="Blob thresholds for existing columns are stored in the dataset schema"):
        lance.write_dataset(blob_table([b"a"], inline_size_threshold=20), str(root), mode="append")


def test_blob_v2_needs_storage_version_2_2(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"Blob v2 requires data storage version >= 2.2 \(got 2.1\)"):
        write_reference(blob_table([b"a"]), tmp_path / "ref", data_storage_version="2.1")
    assert not (tmp_path / "ref").exists()
    with pytest.raises(OSError, match=r"Blob v2 requires file version >= 2\.2"):
        lance.write_dataset(blob_table([b"a"]), str(tmp_path / "pyl"), data_storage_version="2.1")


# --- external URIs ------------------------------------------------------------------------------------


def test_external_outside_every_base_is_refused(tmp_path: Path, ext: Path) -> None:
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"o" * 300)
    root_like = [ref.DatasetBasePath(str(ext), name="rootlike", is_dataset_root=True)]
    for bases, uri in (([("external", ext)], str(outside)), ([], str(ext / "whole.bin")),
                       ([("external", ext)], "whole.bin"), ([("external", ext)], str(ext))):
        with pytest.raises(ExternalBlobOutsideBases, match=f"External blob URI '{uri}' is outside registered"):
            write_reference(blob_table([uri]), tmp_path / "ref", bases)
        assert not (tmp_path / "ref").exists()  # refused before anything was written
        with pytest.raises(OSError, match=f"External blob URI '{uri}' is outside registered external bases"):
            write_pylance(blob_table([uri]), tmp_path / "pyl", bases)
    with pytest.raises(ExternalBlobOutsideBases, match="outside registered"):  # a dataset-root base does not count
        ref.write_dataset(blob_table([str(ext / "whole.bin")]), str(tmp_path / "ref"), initial_bases=root_like)


def test_external_outside_bases_opted_in(tmp_path: Path, ext: Path) -> None:
    outside = tmp_path / "elsewhere" / "o.bin"
    outside.parent.mkdir()
    outside.write_bytes(payload(300, 5))
    uri = f"file://{outside}"
    values = [uri, lance.Blob.from_uri(uri, position=10, size=20), str(ext / "whole.bin")]
    for name, write in (("pyl", write_pylance), ("ref", write_reference)):
        ds = write(blob_table(values), tmp_path / name, [("external", ext)], allow_external_blob_outside_bases=True)
        assert descriptors(ds.uri) == [(EXTERNAL, 0, 0, 0, uri), (EXTERNAL, 10, 20, 0, uri),
                                       (EXTERNAL, 0, 0, 1, "whole.bin")], name
        want = [outside.read_bytes(), outside.read_bytes()[10:30], WHOLE]
        assert reference_blobs(ds.uri, 3) == pylance_blobs(ds.uri, 3) == want
    # pylance 14.0.2 wants a URI with a scheme there: a bare absolute path is refused even when opted in.
    with pytest.raises(ExternalBlobOutsideBases, match="not a valid absolute URI"):
        write_reference(blob_table([str(outside)]), tmp_path / "bare", allow_external_blob_outside_bases=True)
    with pytest.raises(OSError, match="not a valid absolute URI"):
        write_pylance(blob_table([str(outside)]), tmp_path / "bare-pyl", allow_external_blob_outside_bases=True)


@pytest.mark.parametrize("writer", ["ref", "pyl"])
def test_external_inside_a_base_is_relative_and_survives_relocation(tmp_path: Path, ext: Path, writer: str) -> None:
    values = [f"file://{ext}/whole.bin", lance.Blob.from_uri(str(ext / "sub" / "ranged.bin"), 5, 50)]
    write = write_reference if writer == "ref" else write_pylance
    ds = write(blob_table(values), tmp_path / "ds", [("external", ext)])
    assert descriptors(ds.uri) == [(EXTERNAL, 0, 0, 1, "whole.bin"), (EXTERNAL, 5, 50, 1, "sub/ranged.bin")]
    want = [WHOLE, RANGE_SOURCE[5:55]]
    moved = tmp_path / "moved-external"
    shutil.move(str(ext), str(moved))
    dataset = Dataset(ds.uri)
    relocate(dataset, {"external": str(moved)})
    assert reference_blobs(ds.uri, 2) == pylance_blobs(ds.uri, 2) == want


# --- multi-base datasets and clones --------------------------------------------------------------------


@pytest.mark.parametrize("writer", ["ref", "pyl"])
def test_sidecars_follow_their_data_file_into_bases(tmp_path: Path, writer: str) -> None:
    plain, rootlike = tmp_path / "plain", tmp_path / "rootlike"
    values = [payload(n, i) for i, n in enumerate([50, 500, 1500, 700, 40, 2000])]
    table = blob_table(values, **SMALL)
    if writer == "ref":
        ref.write_dataset(table, str(tmp_path / "ds"), max_rows_per_file=2, target_all_bases=True,
                          initial_bases=[ref.DatasetBasePath(str(plain), name="plain"),
                                         ref.DatasetBasePath(str(rootlike), name="rootlike", is_dataset_root=True)])
    else:
        lance.write_dataset(table, str(tmp_path / "ds"), data_storage_version="2.2", max_rows_per_file=2,
                            target_all_bases=True,
                            initial_bases=[lance.DatasetBasePath(str(plain), name="plain"),
                                           lance.DatasetBasePath(str(rootlike), name="rootlike",
                                                                 is_dataset_root=True)])
    for directory in (tmp_path / "ds" / "data", plain, rootlike / "data"):
        stems = {p.stem for p in directory.glob("*.lance")}
        assert len(stems) == 1
        assert {p.parent.name for p in directory.rglob("*.blob")} == stems  # next to its own data file
    assert reference_blobs(tmp_path / "ds", 6) == pylance_blobs(tmp_path / "ds", 6) == values


@pytest.mark.parametrize("cloner", ["ref", "pyl"])
def test_shallow_clone_reads_sidecars_through_the_source(tmp_path: Path, ext: Path, cloner: str) -> None:
    values, expected, _ = mixed_values(ext)
    source = write_reference(blob_table(values, **SMALL), tmp_path / "src", [("external", ext)])
    target = tmp_path / "clone"
    if cloner == "ref":
        clone.shallow_clone(Dataset(source.uri), 1, str(target))
    else:
        lance.dataset(source.uri).shallow_clone(str(target), 1)
    assert not list(target.rglob("*.blob"))
    assert reference_blobs(target, len(values)) == pylance_blobs(target, len(values)) == expected
    ops.append(Dataset(str(target)), blob_table([payload(700, 3)], **SMALL))  # a sidecar in the clone's root
    assert len(list(target.rglob("*.blob"))) == 1
    assert reference_blobs(target, len(values) + 1)[-1] == payload(700, 3)
    assert pylance_blobs(target, len(values) + 1)[-1] == payload(700, 3)


def test_deep_clone_copies_sidecars(tmp_path: Path) -> None:
    values = [payload(40, 1), payload(600, 2), payload(5000, 3), b"", None]
    source = write_reference(blob_table(values, **SMALL), tmp_path / "src")
    clone.deep_clone(Dataset(source.uri), 1, str(tmp_path / "copy"))
    lance.dataset(source.uri).deep_clone(str(tmp_path / "pyl-copy"), 1)
    shutil.rmtree(tmp_path / "src")
    for copy in ("copy", "pyl-copy"):
        assert reference_blobs(tmp_path / copy, 5) == pylance_blobs(tmp_path / copy, 5) == values, copy


# --- lifecycle ----------------------------------------------------------------------------------------


def _lifecycle(tmp_path: Path, write: Callable[..., Any], delete: Callable[[str], None]) -> None:
    """Two fragments with one sidecar of each kind; delete rows so that both fragments are rewritten by
    compaction; cleanup then removes exactly the old data files' sidecars."""
    values = [payload(40, 0), payload(500, 1), payload(2000, 2), payload(600, 3),
              payload(50, 4), payload(300, 5), payload(3000, 6), payload(800, 7)]
    root = tmp_path / "ds"
    write(blob_table(values, **SMALL), root, max_rows_per_file=4)
    before = blob_files(root / "data")
    assert len(before) == 4  # per fragment: one pack, one dedicated
    delete(str(root))
    lance.dataset(str(root)).optimize.compact_files()
    after_compaction = blob_files(root / "data")
    live = after_compaction - before
    assert before < after_compaction and live
    survivors = [v for i, v in enumerate(values) if i not in (1, 6)]
    assert reference_blobs(root, 6) == pylance_blobs(root, 6) == survivors
    stats = cleanup(Dataset(str(root)), CleanupPolicy(older_than=timedelta(0)))
    assert blob_files(root / "data") == live  # every orphaned sidecar gone, every live one kept
    assert stats.data_files_removed == 2 + len(before)
    assert reference_blobs(root, 6) == pylance_blobs(root, 6) == survivors
    # pylance's own cleanup agrees there is nothing left to remove.
    assert lance.dataset(str(root)).cleanup_old_versions(older_than=timedelta(0)).data_files_removed == 0


def test_lifecycle_pylance_written(tmp_path: Path) -> None:
    _lifecycle(tmp_path, lambda t, r, **kw: write_pylance(t, r, **kw),
               lambda uri: lance.dataset(uri).delete("id = 1 or id = 6"))


def test_lifecycle_reference_written(tmp_path: Path) -> None:
    _lifecycle(tmp_path, lambda t, r, **kw: write_reference(t, r, **kw),
               lambda uri: ref.dataset(uri).delete("id = 1 OR id = 6"))


def test_cleanup_never_removes_a_referenced_sidecar(tmp_path: Path) -> None:
    """A sidecar of a data file that a retained (tagged) version references stays, however old."""
    root = tmp_path / "ds"
    write_reference(blob_table([payload(500, 1), payload(2000, 2)], **SMALL), root)
    ds = ref.dataset(str(root))
    ds.tags.create("keep", 1)
    ref.write_dataset(blob_table([payload(600, 3)], **SMALL), str(root), mode="overwrite")
    first = blob_files(root / "data")
    cleanup(Dataset(str(root)), CleanupPolicy(older_than=timedelta(0), error_if_tagged_old_versions=False))
    assert blob_files(root / "data") == first
    assert read_all(ds.checkout_version("keep").take_blobs("blob", [0, 1])) == [payload(500, 1), payload(2000, 2)]


def test_sidecars_in_a_non_root_base_are_never_cleaned(tmp_path: Path) -> None:
    """Cleanup lists only the cleaned root (docs/lance-format.md §13): orphaned sidecars of data files in a
    registered base stay, with pylance's cleanup as with the reference's."""
    base = tmp_path / "plain"
    for name, cleaner in (("ref", "ref"), ("pyl", "pyl")):
        root, where = tmp_path / name, base / name
        write_reference(blob_table([payload(500, 1), payload(2000, 2)], **SMALL), root, [("plain", where)],
                        target_bases=["plain"])
        ref.write_dataset(blob_table([payload(600, 3)], **SMALL), str(root), mode="overwrite")
        orphaned = blob_files(where)
        assert len(orphaned) == 2
        if cleaner == "ref":
            cleanup(Dataset(str(root)), CleanupPolicy(older_than=timedelta(0)))
        else:
            lance.dataset(str(root)).cleanup_old_versions(older_than=timedelta(0))
        assert blob_files(where) == orphaned
        assert len(Dataset(str(root)).versions()) == 1


# --- certification ------------------------------------------------------------------------------------


@pytest.mark.parametrize("writer", ["ref", "pyl"])
def test_blob_datasets_certify_without_blob_findings(tmp_path: Path, ext: Path, writer: str) -> None:
    values, _, _ = mixed_values(ext)
    write = write_reference if writer == "ref" else write_pylance
    ds = write(blob_table(values, **SMALL), tmp_path / "ds", [("external", ext)], max_rows_per_file=3)
    report = certify(ds.uri, all_versions=True)
    assert [f for f in report.findings if f.requirement.startswith("BLOB")] == []
    assert report.conformant


def test_pylance_blob_shape_certifies_without_blob_findings(build_shape: Callable[[str], Any]) -> None:
    shape = build_shape("blob_v2")
    report = certify(shape.uri, all_versions=True, areas=["blobs"])
    assert report.findings == []
    assert set(report.checks_run) == {"blobs.descriptors", "blobs.routing", "blobs.orphans", "blobs.format_version"}



# --- pylance 14.0.2 against the Blob v2 post: each test expects pylance's behaviour ----------------------------


def test_divergence_whole_object_external_stores_size_zero(tmp_path: Path, ext: Path) -> None:
    """Seed: ``size`` is the blob size in bytes. pylance stores 0 (and position 0) for a reference to a
    whole external object and learns the size when reading."""
    ds = write_pylance(blob_table([str(ext / "whole.bin")]), tmp_path / "ds", [("external", ext)])
    assert descriptors(ds.uri) == [(EXTERNAL, 0, 0, 1, "whole.bin")]
    assert lance.dataset(ds.uri).take_blobs("blob", indices=[0])[0].size() == len(WHOLE)


def test_divergence_the_posts_external_example_is_refused(tmp_path: Path, ext: Path) -> None:
    """Seed example: ``external_uri = "/path/to/existing/video.mp4"`` written without bases or opt-in.
    pylance refuses it, and with the opt-in still refuses a bare path: only a URI with a scheme is stored."""
    path = str(ext / "whole.bin")
    with pytest.raises(OSError, match="outside registered external bases"):
        write_pylance(blob_table([path]), tmp_path / "a")
    with pytest.raises(OSError, match="is not a valid absolute URI"):
        write_pylance(blob_table([path]), tmp_path / "b", allow_external_blob_outside_bases=True)
    ds = write_pylance(blob_table([f"file://{path}"]), tmp_path / "c", allow_external_blob_outside_bases=True)
    assert pylance_blobs(ds.uri, 1) == [WHOLE]


def test_divergence_a_dataset_root_base_is_no_external_base(tmp_path: Path, ext: Path) -> None:
    """Seed: a URI under a registered base is stored relative to it. pylance maps only bases with
    ``is_dataset_root=false``."""
    bases = [lance.DatasetBasePath(str(ext), name="rootlike", is_dataset_root=True)]
    with pytest.raises(OSError, match="outside registered external bases"):
        lance.write_dataset(blob_table([str(ext / "whole.bin")]), str(tmp_path / "ds"),
                            data_storage_version="2.2", initial_bases=bases)


def test_divergence_external_objects_are_never_garbage_collected(tmp_path: Path, ext: Path) -> None:
    """Seed: external blobs in registered bases "get automatic garbage collection". pylance's cleanup
    never lists registered bases: an external object no version references any more stays (as with the
    reference's cleanup)."""
    ds = write_pylance(blob_table([str(ext / "whole.bin")]), tmp_path / "ds", [("external", ext)])
    lance.write_dataset(blob_table([b"a"]), ds.uri, mode="overwrite")
    lance.dataset(ds.uri).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert len(Dataset(ds.uri).versions()) == 1 and (ext / "whole.bin").exists()


def test_divergence_compaction_rewrites_dedicated_blobs(tmp_path: Path) -> None:
    """Seed: dedicated blobs are "isolated from the table-level rewrite/compaction path". pylance's
    ``compact_files`` copies them (and packed ones) into new sidecars of the new data file; cleanup then
    deletes the originals."""
    big = payload(5000, 1)
    ds = write_pylance(blob_table([big, payload(10, 2), payload(10, 3)], **SMALL), tmp_path / "ds",
                       max_rows_per_file=1)
    before = {p: p.read_bytes() for p in map(Path, blob_files(tmp_path / "ds" / "data"))}
    lance.dataset(ds.uri).delete("id = 2")
    lance.dataset(ds.uri).optimize.compact_files()
    after = {p: p.read_bytes() for p in map(Path, blob_files(tmp_path / "ds" / "data"))}
    copies = [p for p, data in after.items() if data == big and p not in before]
    assert len(before) == 1 and len(copies) == 1
    lance.dataset(ds.uri).cleanup_old_versions(older_than=timedelta(0))
    assert blob_files(tmp_path / "ds" / "data") == {str(copies[0])}


def test_divergence_thresholds_are_field_metadata_not_schema_metadata(tmp_path: Path) -> None:
    """Seed: thresholds "are configurable via schema metadata". pylance reads them from the blob field's
    metadata only; the same key on the schema is ignored (the reference does the same)."""
    key = INLINE_SIZE_THRESHOLD_KEY
    schema = pa.schema([pa.field("blob", lance.blob_field("blob").type)], metadata={key: "10"})
    table = pa.Table.from_arrays([lance.blob_array([payload(50, 1)])], schema=schema)
    for name, write in (("pyl", write_pylance), ("ref", write_reference)):
        ds = write(table, tmp_path / name)
        assert [d[0] for d in descriptors(ds.uri) if d] == [INLINE], name


def test_divergence_deep_clone_drops_the_bases_of_external_blobs(tmp_path: Path, ext: Path) -> None:
    """The clone-primitives post: a deep clone is fully independent, and external blobs stay readable per the Blob v2
    post.
    pylance
    14.0.2's deep clone registers no base at all, so an external blob stored relative to base 1 cannot be
    read from the clone ("Dataset base path with ID 1 not found"). (F-019)"""
    source = write_pylance(blob_table([str(ext / "whole.bin"), b"x"]), tmp_path / "src", [("external", ext)])
    lance.dataset(source.uri).deep_clone(str(tmp_path / "pyl-copy"), 1)
    copy = tmp_path / "pyl-copy"
    assert list(Dataset(str(copy)).snapshot().manifest.base_paths) == []
    assert descriptors(copy)[0] == (EXTERNAL, 0, 0, 1, "whole.bin")
    with pytest.raises(Exception, match="base path with ID 1 not found"):
        lance.dataset(str(copy)).take_blobs("blob", indices=[0])[0].readall()
    with pytest.raises(BlobReadError, match="names base 1, which is not registered"):
        ref.dataset(str(copy)).take_blobs("blob", [0])


def test_reference_deep_clone_keeps_external_blobs_readable(tmp_path: Path, ext: Path) -> None:
    """The reference's deep clone keeps non-root bases registered, so external blobs stay readable by both
    readers, while no data file resolves outside the clone."""
    source = write_pylance(blob_table([str(ext / "whole.bin"), b"x"]), tmp_path / "src", [("external", ext)])
    clone.deep_clone(Dataset(source.uri), 1, str(tmp_path / "ref-copy"))
    copy = str(tmp_path / "ref-copy")
    snapshot = Dataset(copy).snapshot()
    assert [(b.id, b.is_dataset_root) for b in snapshot.bases] == [(1, False)]
    assert all(f.uri is not None and f.uri.startswith(copy + "/") for f in snapshot.files())
    expected = (ext / "whole.bin").read_bytes()
    assert lance.dataset(copy).take_blobs("blob", indices=[0])[0].readall() == expected
    assert ref.dataset(copy).take_blobs("blob", [0])[0].readall() == expected
