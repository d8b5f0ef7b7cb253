"""The plain fragments read from the columns (reference/plain_fragments.py) against the resolution of every
fragment one by one (``Snapshot.fragments``, the second source of truth), on generated manifests that mix
standard and other data file names, base ids, deletion files and irregular encodings."""

from __future__ import annotations

import gc
import random
import re

import numpy as np
import pytest

from reference import plain_fragments as plain_fragments_module
from reference.codec import manifest as manifest_codec
from reference.codec.manifest import decode_manifest_file, encode_manifest_file
from reference.layout import ManifestNaming
from reference.plain_fragments import every_standard_name, file_uris, plain_fragments, standard_names
from reference.proto import table_pb2
from reference.table import FragmentViews, Snapshot, build_snapshot

STANDARD = re.compile(r"[01]{24}[0-9a-f]{26}\.lance")


def _name(rng: random.Random) -> str:
    stem = "".join(rng.choice("01") for _ in range(24)) + "".join(rng.choice("0123456789abcdef") for _ in range(26))
    return rng.choice([
        f"{stem}.lance", f"{stem}.lance", f"{stem}.lance",
        f"{stem[:-1]}g.lance",  # one letter past hex
        f"{stem[:-1]}A.lance",  # upper case
        f"2{stem[1:]}.lance",  # not binary
        f"{stem}.lancf",
        f"{stem}\n.lance"[:56],
        f"{stem[:49]}\n.lance",
        f"sub/{stem}.lance",
        f"/abs/{stem}.lance",
        f"{stem}é.lance"[:56],
        f"{stem}x.lance",
        "",
    ])


def _manifest(rng: random.Random, fragments: int) -> table_pb2.Manifest:
    m = table_pb2.Manifest(version=9)
    m.fields.add(name="a", id=0, parent_id=-1, logical_type="int64", type=2)
    m.base_paths.add(id=1, path="/elsewhere/one", is_dataset_root=True)
    for k in range(fragments):
        frag = m.fragments.add(id=k, physical_rows=rng.randrange(1, 9))
        for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
            data_file = frag.files.add(path=_name(rng), file_major_version=2, file_minor_version=0,
                                       file_size_bytes=rng.choice([0, rng.randrange(1, 2**20)]))
            if rng.random() < 0.1:
                data_file.base_id = rng.choice([1, 7])
        if rng.random() < 0.2:
            frag.deletion_file.file_type = rng.choice([0, 1, 5])
            frag.deletion_file.read_version = 3
            frag.deletion_file.num_deleted_rows = 1
    return m


def _snapshot(m: table_pb2.Manifest, monkeypatch: pytest.MonkeyPatch, root: str = "/ds") -> Snapshot:
    monkeypatch.setattr(manifest_codec, "COLUMNS_FROM_FRAGMENTS", 0)
    manifest_file = decode_manifest_file(encode_manifest_file(m, None), f"{root}/_versions/9.manifest")
    return build_snapshot(root, 9, ManifestNaming.V1, f"{root}/_versions/9.manifest", manifest_file)


@pytest.mark.parametrize(("seed", "root", "chunk"), [
    *((seed, "/ds", 1 << 16) for seed in range(6)),
    (6, "/ds", 7),  # URIs made a few files at a time
    (7, "/données/ds", 5),  # a directory whose bytes are not its characters
    (8, "/d\udcff/ds", 1 << 16),  # a local name that is not UTF-8 (os.fsdecode's escape)
])
def test_plain_fragments_resolve_as_the_snapshot_resolves_them(seed: int, root: str, chunk: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plain_fragments_module, "_CHUNK", chunk)
    snapshot = _snapshot(_manifest(random.Random(seed), 400), monkeypatch, root)
    plain = plain_fragments(snapshot)
    assert plain is not None
    expected_plain, uris, owners = [], [], []
    for k, fragment in enumerate(snapshot.fragments):
        if all(f.base_id is None and STANDARD.fullmatch(f.path) for f in fragment.files):
            expected_plain.append(k)
            for f in fragment.files:
                assert f.problem is None and f.uri is not None
                uris.append(f.uri)
                owners.append(k)
    assert plain.fragments.tolist() == expected_plain
    assert plain.others.tolist() == sorted(set(range(len(snapshot.fragments))) - set(expected_plain))
    assert plain.uris == uris and plain.owners.tolist() == owners
    assert [snapshot.fragments[k].files[i].size for k, i in _file_places(plain)] == [
        int(plain.columns.file_size[f]) or None for f in plain.files.tolist()]
    assert list(file_uris(snapshot)) == [f.uri for f in snapshot.files() if f.uri is not None]


def _file_places(plain: object) -> list[tuple[int, int]]:
    """(fragment position, index of the file in its fragment) of each plain file."""
    owners = plain.owners.tolist()  # type: ignore[attr-defined]
    places, seen = [], {}
    for owner in owners:
        seen[owner] = seen.get(owner, -1) + 1
        places.append((owner, seen[owner]))
    return places


def test_standard_names_equal_the_pattern_on_every_name(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = _snapshot(_manifest(random.Random(11), 600), monkeypatch)
    fragments = snapshot.fragments
    assert isinstance(fragments, FragmentViews) and fragments.columns is not None
    columns = fragments.columns
    paths = [d.path for f in snapshot.manifest.fragments for d in f.files]
    found = standard_names(columns, np.arange(columns.file_count, dtype=np.int64)).tolist()
    assert found == [bool(STANDARD.fullmatch(p)) for p in paths]
    assert any(found) and not all(found)


def test_a_subset_of_the_fragments_gives_its_own_plain_fragments(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = _snapshot(_manifest(random.Random(5), 300), monkeypatch)
    fragments = snapshot.fragments
    assert isinstance(fragments, FragmentViews)
    chosen = list(range(0, 300, 7))
    subset = Snapshot(snapshot.root, snapshot.version, snapshot.naming, snapshot.manifest_uri, snapshot.manifest_file,
                      snapshot.bases, fragments.subset(chosen), snapshot.index_files)
    whole, part = plain_fragments(snapshot), plain_fragments(subset)
    assert whole is not None and part is not None
    assert [chosen[k] for k in part.fragments.tolist()] == [k for k in whole.fragments.tolist() if k in set(chosen)]
    assert list(file_uris(subset)) == [f.uri for f in subset.files() if f.uri is not None]


def test_without_columns_there_are_no_plain_fragments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifest_codec, "COLUMNS_FROM_FRAGMENTS", 1000)
    m = _manifest(random.Random(2), 20)
    manifest_file = decode_manifest_file(encode_manifest_file(m, None), "u")
    snapshot = build_snapshot("/ds", 9, ManifestNaming.V1, "u", manifest_file)
    assert plain_fragments(snapshot) is None
    assert list(file_uris(snapshot)) == [f.uri for f in snapshot.files() if f.uri is not None]


def test_every_standard_name_is_worked_out_once_per_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = _snapshot(_manifest(random.Random(12), 300), monkeypatch)
    fragments = snapshot.fragments
    assert isinstance(fragments, FragmentViews) and fragments.columns is not None
    columns = fragments.columns
    every = every_standard_name(columns)
    paths = [d.path for f in snapshot.manifest.fragments for d in f.files]
    assert every.tolist() == [bool(STANDARD.fullmatch(p)) for p in paths]
    assert every_standard_name(columns) is every
    key = id(columns)
    del snapshot, fragments, columns
    gc.collect()
    assert key not in plain_fragments_module._EVERY  # kept no longer than its columns
