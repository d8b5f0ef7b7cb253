"""The columnar fragment decoder (``reference.codec.fragment_columns``) against the protobuf decoder.

Second source of truth: the generated protobuf classes from protos/ (upb), on messages built and
serialized by them, on hand-made wire bytes for the legal-but-unusual encodings, and on manifests pylance
14.0.2 wrote. And the manifest checks that screen with the columns report exactly what they report when
the same snapshot is judged from the messages alone (its fragments given as a plain tuple)."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

from conformance.checks import VersionContext, all_checks
from reference.codec import manifest as manifest_codec
from reference.codec.fragment_columns import decode_fragment_columns, fragment_records
from reference.codec.manifest import FOOTER_SIZE, decode_manifest_file, encode_manifest_file, read_footer
from reference.errors import LimitExceeded
from reference.layout import ManifestNaming
from reference.limits import Limits
from reference.proto import table_pb2
from reference.table import Dataset, FragmentViews, build_snapshot


def _random_manifest(rng: random.Random, fragments: int) -> table_pb2.Manifest:
    m = table_pb2.Manifest(version=7, max_fragment_id=fragments + 3)
    m.fields.add(name="a", id=0, parent_id=-1, logical_type="int64", type=2)
    for k in range(fragments):
        frag = m.fragments.add(id=rng.choice([k, k, k, 3, rng.randrange(2**40)]), physical_rows=rng.randrange(0, 300))
        for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
            data_file = frag.files.add(path=f"{rng.randrange(10**9):x}-é.lance",
                                       file_major_version=rng.choice([0, 2, 2]),
                                       file_minor_version=rng.choice([0, 1, 2, 3]),
                                       file_size_bytes=rng.choice([0, rng.randrange(2**40)]))
            data_file.fields.extend(rng.choice([[0], [0, 1], [1, 0], [-2, 3], [-1], [5, 5], [-2**31, 2**31 - 1]]))
            data_file.column_indices.extend(rng.choice([[], [0], [0, 1], [1, 1], [-1, -1], [0, -1, 2]]))
            if rng.random() < 0.3:
                data_file.base_id = rng.randrange(0, 5)
        if rng.random() < 0.3:
            deletion = frag.deletion_file
            deletion.file_type = rng.choice([0, 1])
            deletion.read_version = rng.randrange(1, 50)
            deletion.id = rng.randrange(2**63)
            deletion.num_deleted_rows = rng.randrange(0, 400)
            if rng.random() < 0.3:
                deletion.base_id = rng.randrange(0, 3)
        if rng.random() < 0.1:
            frag.inline_row_ids = b"\x01\x02"
        elif rng.random() < 0.05:
            frag.external_row_ids.path = "ids.bin"
    return m


def _section(m: table_pb2.Manifest) -> bytes:
    return m.SerializeToString()


def _assert_columns_equal_messages(section: bytes) -> None:
    """Every column equals what the protobuf decoder reads, for every regular fragment."""
    manifest = table_pb2.Manifest.FromString(section)
    columns = decode_fragment_columns(section)
    assert columns.count == len(manifest.fragments)
    for k, frag in enumerate(manifest.fragments):
        if columns.irregular[k]:
            continue
        assert int(columns.id[k]) == frag.id
        assert int(columns.physical_rows[k]) == frag.physical_rows
        assert bool(columns.has_deletion[k]) == frag.HasField("deletion_file")
        if frag.HasField("deletion_file"):
            d = frag.deletion_file
            assert (int(columns.deletion_type[k]), int(columns.deletion_read_version[k]), int(columns.deletion_id[k]),
                    int(columns.deleted_rows[k])) == (d.file_type, d.read_version, d.id, d.num_deleted_rows)
            assert bool(columns.deletion_has_base[k]) == d.HasField("base_id")
        assert bool(columns.has_row_ids[k]) == (frag.WhichOneof("row_id_sequence") is not None)
        first, last = int(columns.file_offsets[k]), int(columns.file_offsets[k + 1])
        assert last - first == len(frag.files)
        for j, data_file in zip(range(first, last), frag.files, strict=True):
            assert int(columns.file_fragment[j]) == k
            assert columns.path(j) == data_file.path
            assert (int(columns.major[j]), int(columns.minor[j]), int(columns.file_size[j])) == (
                data_file.file_major_version, data_file.file_minor_version, data_file.file_size_bytes)
            assert bool(columns.has_base[j]) == data_file.HasField("base_id")
            if data_file.HasField("base_id"):
                assert int(columns.base_id[j]) == data_file.base_id
            assert columns.field_ids[columns.field_file == j].tolist() == list(data_file.fields)
            assert columns.column_indices[columns.column_file == j].tolist() == list(data_file.column_indices)


@pytest.mark.parametrize("seed", range(8))
def test_columns_equal_the_protobuf_decoder_on_generated_manifests(seed: int) -> None:
    section = _section(_random_manifest(random.Random(seed), 200))
    _assert_columns_equal_messages(section)
    assert not decode_fragment_columns(section).irregular.any()  # what protobuf writes is regular


def test_an_empty_manifest_has_no_fragments() -> None:
    columns = decode_fragment_columns(_section(table_pb2.Manifest(version=1)))
    assert columns.count == 0 and columns.file_count == 0 and columns.file_offsets.tolist() == [0]


def _key(number: int, wire: int) -> bytes:
    return bytes([number << 3 | wire])


def _len_field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return _key(number, 2) + bytes([len(payload)]) + payload


def test_a_singular_field_met_twice_keeps_its_last_value_as_protobuf_does() -> None:
    fragment = _key(1, 0) + b"\x05" + _key(4, 0) + b"\x07" + _key(1, 0) + b"\x09"
    section = _len_field(2, fragment)
    assert table_pb2.Manifest.FromString(section).fragments[0].id == 9
    columns = decode_fragment_columns(section)
    assert int(columns.id[0]) == 9 and not columns.irregular[0]
    _assert_columns_equal_messages(section)


@pytest.mark.parametrize("fragment", [
    pytest.param(_len_field(3, _key(4, 0) + b"\x01") + _len_field(3, _key(2, 0) + b"\x02"), id="deletion-twice"),
    pytest.param(_len_field(2, _key(2, 0) + b"\x01" + _key(2, 0) + b"\x02"), id="unpacked-field-ids"),
    pytest.param(_key(1, 5) + b"\x01\x00\x00\x00", id="id-as-fixed32"),
    pytest.param(_key(9, 3) + _key(9, 4), id="group"),
    pytest.param(_len_field(5, b"\x01") + _len_field(6, b""), id="two-oneof-members"),
])
def test_unusual_encodings_are_irregular_and_left_to_protobuf(fragment: bytes) -> None:
    section = _len_field(2, _key(1, 0) + b"\x03") + _len_field(2, fragment) + _len_field(2, _key(1, 0) + b"\x04")
    table_pb2.Manifest.FromString(section)  # legal to protobuf
    columns = decode_fragment_columns(section)
    assert columns.irregular.tolist() == [False, True, False]
    _assert_columns_equal_messages(section)  # the regular neighbours are read right


def test_records_stop_where_asked_and_count_the_entry_fields() -> None:
    m = _random_manifest(random.Random(1), 50)
    records = fragment_records(_section(m), stop=10, entry_fields={1})
    assert records.starts.size == 10 and records.entries == 1
    full = fragment_records(_section(m))
    assert full.starts.size == 50


def test_the_fragment_limit_is_still_enforced_before_decoding() -> None:
    m = _random_manifest(random.Random(2), 30)
    data = encode_manifest_file(m, None)
    with pytest.raises(LimitExceeded, match="max-fragments"):
        decode_manifest_file(data, "x", Limits(max_fragments=29))
    with pytest.raises(LimitExceeded, match="max-manifest-entries"):
        decode_manifest_file(data, "x", Limits(max_manifest_entries=len(m.fields) + 1))
    assert decode_manifest_file(data, "x", Limits(max_fragments=30)).fragment_columns is not None


@pytest.fixture(autouse=True)
def columns_for_every_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Columns for the small manifests of these tests too (certify decodes them from 1,000 fragments on)."""
    monkeypatch.setattr(manifest_codec, "COLUMNS_FROM_FRAGMENTS", 0)


def _pylance_dataset(tmp_path: Path) -> str:
    uri = str(tmp_path / "ds")
    table = pa.table({"a": list(range(40)), "b": [str(i) for i in range(40)]})
    lance.write_dataset(table, uri, max_rows_per_file=10)
    ds = lance.dataset(uri)
    ds.delete("a < 3")
    ds.delete("a >= 10 and a < 20")  # a fragment with every row deleted is dropped by pylance
    ds.add_columns({"c": "a * 2"})
    lance.write_dataset(table.slice(0, 5), uri, mode="append")
    return uri


def test_columns_equal_the_protobuf_decoder_on_pylance_manifests(tmp_path: Path) -> None:
    uri = _pylance_dataset(tmp_path)
    manifests = sorted((Path(uri) / "_versions").glob("*.manifest"))
    assert len(manifests) == 5
    deletions = most_files = 0
    for path in manifests:
        data = path.read_bytes()
        position = read_footer(data, str(path))
        section = data[position + 4:len(data) - FOOTER_SIZE]
        _assert_columns_equal_messages(section)
        columns = decode_fragment_columns(section)
        assert not columns.irregular.any()
        deletions += int(columns.has_deletion.sum())
        most_files = max(most_files, int(columns.files_per_fragment().max()))
    assert deletions >= 2 and most_files == 2  # the shapes met: deletion files, a column added as a 2nd file


def _findings_both_ways(snapshot_fragments_manifest: table_pb2.Manifest) -> tuple[list[object], list[object]]:
    """Every manifest check's findings on one snapshot judged with its columns and from the messages alone."""
    data = encode_manifest_file(snapshot_fragments_manifest, None)
    manifest_file = decode_manifest_file(data, "mem://ds/_versions/1.manifest")
    snapshot = build_snapshot("/nowhere/ds", 7, ManifestNaming.V1, "mem://ds/_versions/7.manifest", manifest_file)
    assert isinstance(snapshot.fragments, FragmentViews) and snapshot.fragments.columns is not None
    plain = replace(snapshot, fragments=tuple(snapshot.fragments))
    dataset = Dataset("/nowhere/ds")
    checks = [c for c in all_checks().values() if c.name.startswith("manifest.")]
    out: list[list[object]] = []
    for snap in (snapshot, plain):
        found: list[object] = []
        for check in checks:
            ctx = VersionContext(dataset, version=7, snapshot=snap)
            ctx.declared = check.requirements
            check.func(ctx)
            found += ctx.findings
        out.append(sorted(found, key=repr))
    return out[0], out[1]


@pytest.mark.parametrize("seed", range(6))
def test_manifest_checks_report_the_same_with_and_without_columns(seed: int) -> None:
    m = _random_manifest(random.Random(100 + seed), 120)
    with_columns, from_messages = _findings_both_ways(m)
    assert with_columns == from_messages
    requirements = {f.requirement for f in with_columns}  # type: ignore[attr-defined]
    assert {"MAN-001", "MAN-006", "MAN-008", "MAN-019"} <= requirements  # the generator breaks these


def test_a_subset_judges_only_its_fragments() -> None:
    m = _random_manifest(random.Random(7), 60)
    manifest_file = decode_manifest_file(encode_manifest_file(m, None), "u")
    snapshot = build_snapshot("/nowhere/ds", 1, ManifestNaming.V1, "u", manifest_file)
    assert isinstance(snapshot.fragments, FragmentViews)
    part = snapshot.fragments.subset([3, 10, 11])
    assert [f.id for f in part] == [m.fragments[i].id for i in (3, 10, 11)]
    assert list(np.asarray(part.positions)) == [3, 10, 11]
    assert [f.id for f in part.subset([2, 0])] == [m.fragments[11].id, m.fragments[3].id]


def test_problems_from_the_columns_equal_those_of_every_file() -> None:
    """A snapshot's resolution problems, answered from the columns where they show none can arise, equal
    those found by resolving every file (bases 1 and 2 registered: base ids 0, 3 and 4 resolve to nothing)."""
    for seed in range(6):
        rng = random.Random(200 + seed)
        m = _random_manifest(rng, 40)
        if seed % 2:  # half with nothing recorded against a base: the columns answer alone
            for frag in m.fragments:
                for data_file in frag.files:
                    data_file.ClearField("base_id")
                frag.deletion_file.ClearField("base_id")
        for base in (1, 2):
            m.base_paths.add(id=base, path=f"/elsewhere/{base}", is_dataset_root=base == 1)
        manifest_file = decode_manifest_file(encode_manifest_file(m, None), "u")
        snapshot = build_snapshot("/nowhere/ds", 1, ManifestNaming.V1, "u", manifest_file)
        every = [f.problem for f in snapshot.files() if f.problem is not None]
        assert [str(p) for p in snapshot.problems()] == [str(p) for p in every]


def test_small_manifests_are_judged_from_the_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifest_codec, "COLUMNS_FROM_FRAGMENTS", 1000)
    small = decode_manifest_file(encode_manifest_file(_random_manifest(random.Random(3), 999), None), "u")
    large = decode_manifest_file(encode_manifest_file(_random_manifest(random.Random(3), 1000), None), "u")
    assert small.fragment_columns is None and large.fragment_columns is not None


@pytest.mark.parametrize("seed", range(4))
def test_records_are_each_fragment_as_encoded(seed: int) -> None:
    """The walk of the top level (a fragment record under 128 bytes taken at once, any other field walked) finds
    each fragment's bytes as protobuf encodes them, and stops where asked."""
    m = _random_manifest(random.Random(seed), 60)
    for k in range(0, 60, 7):  # records of 128 bytes and more, whose length takes two bytes
        m.fragments[k].files.add(path="p" * (100 + 10 * k))
    section = _section(m)
    records = fragment_records(section)
    found = [section[s:s + n] for s, n in zip(records.starts.tolist(), records.lengths.tolist(), strict=True)]
    assert found == [f.SerializeToString() for f in m.fragments]
    assert min(records.lengths.tolist()) < 128 <= max(records.lengths.tolist())
    for stop in (0, 1, 7, 59):
        assert fragment_records(section, stop).starts.tolist() == records.starts.tolist()[:stop]
