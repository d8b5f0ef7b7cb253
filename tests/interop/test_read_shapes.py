"""lancespec reads every shape pylance 14.0.2 writes, and agrees with pylance's own report of it.

The expected file sets are computed here from what pylance reports (fragments, data files, deletion
files, base paths) with the resolution rule written out below; lancespec's ``layout.resolve`` is never
used for an expectation. A second, manifest-free oracle walks the shape's directories.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lance
import pytest

from conformance.shapes import Shape
from reference.layout import FileKind
from reference.table import Dataset, Snapshot

# --- the expectation, from pylance's report ---------------------------------------------------------------

DELETION_EXTENSION = {"array": "arrow", "bitmap": "bin"}


def _dir(path: str, *parts: str) -> str:
    return "/".join([path.rstrip("/"), *parts])


def data_file_uri(root: str, bases: dict[int, Any], base_id: int | None, path: str) -> str:
    """Seed layout: no base_id -> {root}/data/{path}; a dataset-root base -> {base.path}/data/{path};
    a non-root base -> {base.path}/{path}."""
    if base_id is None:
        return _dir(root, "data", path)
    base = bases[base_id]
    return _dir(base.path, "data", path) if base.is_dataset_root else _dir(base.path, path)


def deletion_file_uri(root: str, bases: dict[int, Any], frag_id: int, deletion: Any) -> str:
    """``{frag_id}-{read_version}-{id}.{arrow|bin}`` under ``_deletions/`` of the root or of a
    dataset-root base (a deletion file never lives in a non-root base)."""
    name = f"{frag_id}-{deletion.read_version}-{deletion.id}.{DELETION_EXTENSION[deletion.file_type]}"
    if deletion.base_id is None:
        return _dir(root, "_deletions", name)
    base = bases[deletion.base_id]
    assert base.is_dataset_root, f"pylance put a deletion file in non-root base {base}"
    return _dir(base.path, "_deletions", name)


def pylance_files(shape: Shape) -> tuple[dict[str, int], set[str]]:
    """``({data file uri: file_size_bytes}, {deletion file uri})`` of the shape's snapshot, per pylance."""
    ds = shape.open_lance()
    bases = ds.base_paths()
    root = shape.lance_uri
    data: dict[str, int] = {}
    deletions: set[str] = set()
    for fragment in ds.get_fragments():
        metadata = fragment.metadata
        for data_file in metadata.files:  # data_files() is the deprecated spelling
            data[data_file_uri(root, bases, data_file.base_id, data_file.path)] = data_file.file_size_bytes
        if metadata.deletion_file is not None:
            deletions.add(deletion_file_uri(root, bases, fragment.fragment_id, metadata.deletion_file))
    return data, deletions


# --- what lancespec reads --------------------------------------------------------------------------------


def snapshot_of(shape: Shape) -> Snapshot:
    return Dataset.open(shape.uri).snapshot(**shape.open_kwargs)


def lancespec_files(snapshot: Snapshot, kind: FileKind) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for f in snapshot.files():
        if f.kind is kind:
            assert f.uri is not None, f.problem
            out[f.uri] = f.size
    return out


def walk(directory: str, suffix: str) -> set[str]:
    """Every file under ``directory`` ending in ``suffix``, outside ``_indices/``."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = [d for d in dirnames if d != "_indices"]
        found.update(os.path.join(dirpath, n) for n in filenames if n.endswith(suffix))
    return found


# --- tests -----------------------------------------------------------------------------------------------


def test_snapshot_is_pylance_version(shape: Shape) -> None:
    snapshot = snapshot_of(shape)
    ds = shape.open_lance()
    assert snapshot.version == ds.version
    assert snapshot.root == shape.lance_uri
    assert snapshot.branch == shape.branch
    assert snapshot.problems() == []


def test_data_files_match_pylance(shape: Shape) -> None:
    expected, _ = pylance_files(shape)
    resolved = lancespec_files(snapshot_of(shape), FileKind.DATA)
    assert set(resolved) == set(expected)
    assert expected, "every shape has data files"


def test_deletion_files_match_pylance(shape: Shape) -> None:
    _, expected = pylance_files(shape)
    resolved = lancespec_files(snapshot_of(shape), FileKind.DELETION)
    assert set(resolved) == expected


def test_bases_match_pylance(shape: Shape) -> None:
    snapshot = snapshot_of(shape)
    expected = {
        i: (b.name, b.path, b.is_dataset_root) for i, b in shape.open_lance().base_paths().items()
    }
    assert {b.id: (b.name, b.path, b.is_dataset_root) for b in snapshot.bases} == expected


def test_resolved_files_exist_with_recorded_size(shape: Shape) -> None:
    expected_data, _ = pylance_files(shape)
    snapshot = snapshot_of(shape)
    assert list(snapshot.files())
    for f in snapshot.files():
        assert f.uri is not None and os.path.isfile(f.uri), f"{f.kind.name} file {f.uri} missing"
        if f.kind is FileKind.DATA:
            assert f.size == expected_data[f.uri] == os.path.getsize(f.uri)
        elif f.size is not None:
            assert f.size == os.path.getsize(f.uri)


def test_fragments_and_row_counts_match_pylance(shape: Shape) -> None:
    ds = shape.open_lance()
    snapshot = snapshot_of(shape)
    fragments = {f.fragment_id: f for f in ds.get_fragments()}
    assert [f.id for f in snapshot.fragments] == sorted(fragments)
    for view in snapshot.fragments:
        pylance_fragment = fragments[view.id]
        assert view.physical_rows == pylance_fragment.metadata.physical_rows
        assert view.num_rows == pylance_fragment.count_rows(), f"fragment {view.id}"
    assert snapshot.num_rows == ds.count_rows()


def test_data_files_match_filesystem(shape: Shape) -> None:
    """The manifest-free oracle: the shapes that own a closed set of directories hold exactly the
    snapshot's data files there."""
    if not shape.data_file_roots:
        pytest.skip("no closed set of directories: files of other versions or branches lie beside")
    on_disk = set().union(*(walk(d, ".lance") for d in shape.data_file_roots))
    resolved = set(lancespec_files(snapshot_of(shape), FileKind.DATA))
    assert resolved == on_disk


def test_index_files_match_filesystem(shape: Shape) -> None:
    snapshot = snapshot_of(shape)
    indices = shape.open_lance().describe_indices()
    resolved = set(lancespec_files(snapshot, FileKind.INDEX))
    if not indices:
        assert resolved == set()
        return
    # The snapshot's index directories are those pylance lists (by uuid), each resolved file exists, and
    # nothing else lies in them; in a shallow clone the index lives in the source's root. Other
    # directories of _indices/ belong to indices a later commit replaced (a compaction's remap, a rebuilt
    # delta index) and stay until cleanup.
    directories = {Path(u).parent for u in resolved}
    assert {d.name for d in directories} == {str(s.uuid) for i in indices for s in i.segments}
    on_disk = {str(p) for d in directories for p in d.rglob("*") if p.is_file()}
    assert resolved == on_disk


def test_versions_match_pylance(shape: Shape) -> None:
    dataset = Dataset.open(shape.uri)
    if shape.branch:
        dataset = dataset.branch(shape.branch)
    expected = [v["version"] for v in lance.dataset(shape.lance_uri).versions()]
    assert dataset.versions() == expected


def test_tags_match_pylance(shape: Shape) -> None:
    expected = {name: (t["version"], t["branch"]) for name, t in lance.dataset(shape.uri).tags.list().items()}
    found = {name: (t.version, t.branch) for name, t in Dataset.open(shape.uri).tags().items()}
    assert found == expected


def test_branches_match_pylance(shape: Shape) -> None:
    listed = lance.dataset(shape.uri).branches.list()
    expected = {name: (b["parent_branch"], b["parent_version"]) for name, b in listed.items()}
    records = Dataset.open(shape.uri).branches()
    found = {name: (b.parent_branch, b.parent_version) for name, b in records.items()}
    assert found == expected
    for name in listed:
        latest = lance.dataset(f"{shape.uri}/tree/{name}").version
        assert Dataset.open(shape.uri).branch(name).latest_version() == latest
