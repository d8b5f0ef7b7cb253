"""Every operation of the reference writer, read back by pylance 14.0.2.

Each test drives the reference writer (``reference.ops``, ``refs``, ``clone``) and keeps its
own expectation: a python list of the ids alive at every version of every dataset root it made (the
other columns follow from the id, see ``shapes.rows``). At the end, for EVERY version of every root,
three readings must agree: the model, pylance (``lance.dataset(uri, version=v).to_table()``, and for
branches also ``checkout_version((branch, v))``) and the reference's own ``read_snapshot``; and
pylance's ``validate()`` passes. Layout rules checked along the way: docs/lance-format.md §9 (deletion
files), §10 (bases, placement), §11 (tags, branches), §12 (clones), §6 (manifest names).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conformance_kit import file_digests

from conformance.payload import expected_rows, rows
from reference import clone as clone_ops
from reference import ops, refs
from reference.commit import load_transaction
from reference.ops import DatasetBasePath
from reference.read import read_snapshot
from reference.table import Dataset

pytestmark = pytest.mark.interop


# --- the model ---------------------------------------------------------------------------------------



class Model:
    """Expected live ids per (main root, branch or None) per version, kept independently of any reader."""

    def __init__(self) -> None:
        self.roots: dict[tuple[str, str | None], dict[int, list[int]]] = {}

    def record(self, main: str, version: int, ids: Iterable[int], branch: str | None = None) -> list[int]:
        ids = list(ids)
        self.roots.setdefault((str(main), branch), {})[version] = ids
        return ids

    def latest(self, main: str, branch: str | None = None) -> list[int]:
        versions = self.roots[(str(main), branch)]
        return list(versions[max(versions)])

    def check(self) -> None:
        """Every version of every root: model == pylance == reference; pylance validate() passes."""
        assert self.roots
        for (main, branch), versions in self.roots.items():
            uri = main if branch is None else f"{main}/tree/{branch}"
            reference = Dataset(uri)
            assert reference.versions() == sorted(versions), uri
            assert [v["version"] for v in lance.dataset(uri).versions()] == sorted(versions), uri
            for version, ids in versions.items():
                want = expected_rows(ids)
                got_ref = read_snapshot(reference.snapshot(version), reference.storage).to_pylist()
                assert got_ref == want, f"reference read of {uri} v{version}"
                ds = lance.dataset(uri, version=version)
                assert ds.to_table().to_pylist() == want, f"pylance read of {uri} v{version}"
                assert ds.count_rows() == len(ids)
                ds.validate()
                if branch is not None:
                    checked_out = lance.dataset(main).checkout_version((branch, version))
                    assert checked_out.to_table().to_pylist() == want, f"checkout ({branch}, {version})"


@pytest.fixture
def model() -> Iterable[Model]:
    m = Model()
    yield m
    m.check()


# --- helpers -------------------------------------------------------------------------------------------


def fragment_bases(uri: str, version: int | None = None) -> list[int | None]:
    """Per fragment (in order), the base_id of its first data file, as pylance reports it."""
    ds = lance.dataset(uri, version=version)
    return [f.metadata.files[0].base_id for f in ds.get_fragments()]


def fragment_ids(uri: str, version: int | None = None) -> list[int]:
    return [f.fragment_id for f in lance.dataset(uri, version=version).get_fragments()]


def data_file_locations(uri: str) -> list[str]:
    """The resolved location of every data file of the latest version (the reference's resolution)."""
    return [f.uri for frag in Dataset(uri).snapshot().fragments for f in frag.files if f.uri]


def three_bases(work: Path, root_base: bool = False) -> list[DatasetBasePath]:
    """b1, b2 (non-root) and b3 (a dataset-root base when ``root_base``)."""
    return [
        DatasetBasePath(str(work / "b1"), name="b1"),
        DatasetBasePath(str(work / "b2"), name="b2"),
        DatasetBasePath(str(work / "b3"), name="b3", is_dataset_root=root_base),
    ]


# --- create, placement ---------------------------------------------------------------------------------


@pytest.mark.parametrize("root_base", [False, True], ids=["nonroot-bases", "with-root-base"])
def test_create_with_bases_round_robin_restarts_per_call(tmp_path: Path, model: Model, root_base: bool) -> None:
    """§10.2: initial bases get ids 1, 2, 3; §10.3: files rotate over target_bases per file, the rotation
    restarting at the first target on every call; a dataset-root base puts files under ``data/``."""
    root = str(tmp_path / "ds")
    bases = three_bases(tmp_path, root_base)
    v = ops.create(root, rows(0, 10), initial_bases=bases, target_bases=["b1", "b2", "b3"],
                   max_rows_per_file=1).version
    ids = model.record(root, v, range(10))
    assert {k: (b.name, b.path, b.is_dataset_root) for k, b in lance.dataset(root).base_paths().items()} == {
        1: ("b1", str(tmp_path / "b1"), False),
        2: ("b2", str(tmp_path / "b2"), False),
        3: ("b3", str(tmp_path / "b3"), root_base),
    }
    assert fragment_bases(root) == [1, 2, 3, 1, 2, 3, 1, 2, 3, 1]
    for location, base_id in zip(data_file_locations(root), fragment_bases(root), strict=True):
        where = str(tmp_path / f"b{base_id}") + ("/data/" if base_id == 3 and root_base else "/")
        assert location.startswith(where) and location.count("/") == where.count("/"), location
        assert os.path.isfile(location)
    assert not os.path.exists(os.path.join(root, "data"))

    dataset = Dataset(root)
    # 4 files over [b2, b3]: b2, b3, b2, b3; then two one-file calls both start again at b2.
    v = ops.append(dataset, rows(10, 4), target_bases=["b2", "b3"], max_rows_per_file=1).version
    ids = model.record(root, v, [*ids, *range(10, 14)])
    v = ops.append(dataset, rows(14, 1), target_bases=["b2", "b3"]).version
    ids = model.record(root, v, [*ids, 14])
    v = ops.append(dataset, rows(15, 1), target_bases=["b2", "b3"]).version
    ids = model.record(root, v, [*ids, 15])
    # a target may be named by its exact path; 10 rows in files of 3 over [b3 (by path), b1]
    v = ops.append(dataset, rows(16, 10), target_bases=[str(tmp_path / "b3"), "b1"], max_rows_per_file=3).version
    ids = model.record(root, v, [*ids, *range(16, 26)])
    # no targets: the root
    v = ops.append(dataset, rows(26, 2)).version
    model.record(root, v, [*ids, 26, 27])
    assert fragment_bases(root) == [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 2, 3, 2, 2, 3, 1, 3, 1, None]
    assert [f.physical_rows for f in lance.dataset(root).get_fragments()][-5:] == [3, 3, 3, 1, 2]
    assert fragment_ids(root) == list(range(21))


@pytest.mark.parametrize(("target_all_bases", "rotation"), [
    (True, [None, 1, 2, 3, None, 1, 2, 3]),
    (False, [1, 2, 3, 1, 2, 3, 1, 2]),
    (None, [None] * 8),
])
def test_target_all_bases(tmp_path: Path, model: Model, target_all_bases: bool | None,
                          rotation: list[int | None]) -> None:
    """§10.3: True rotates over the root then every base by id; False over the bases only; neither
    given: the root alone, although bases are registered. The same rule holds for create and append."""
    root = str(tmp_path / "ds")
    v = ops.create(root, rows(0, 8), initial_bases=three_bases(tmp_path, root_base=True),
                   target_all_bases=target_all_bases, max_rows_per_file=1).version
    ids = model.record(root, v, range(8))
    assert fragment_bases(root) == rotation
    v = ops.append(Dataset(root), rows(8, 8), target_all_bases=target_all_bases, max_rows_per_file=1).version
    model.record(root, v, [*ids, *range(8, 16)])
    assert fragment_bases(root) == rotation + rotation
    for location in data_file_locations(root):
        assert os.path.isfile(location)


def test_target_all_bases_false_without_bases_writes_to_root(tmp_path: Path, model: Model) -> None:
    root = str(tmp_path / "ds")
    v = ops.create(root, rows(0, 3), target_all_bases=False, max_rows_per_file=2).version
    model.record(root, v, range(3))
    assert fragment_bases(root) == [None, None]


# --- overwrite -----------------------------------------------------------------------------------------


def test_overwrite_keeps_bases_and_max_fragment_id(tmp_path: Path, model: Model) -> None:
    """§10.2 "Overwrite keeps the previous version's base_paths"; fragment ids keep counting from the
    previous max_fragment_id; old versions stay readable."""
    root = str(tmp_path / "ds")
    bases = three_bases(tmp_path)
    v = ops.create(root, rows(0, 6), initial_bases=bases, target_bases=["b1", "b2"], max_rows_per_file=2).version
    ids = model.record(root, v, range(6))
    dataset = Dataset(root)
    v = ops.append(dataset, rows(6, 2)).version
    ids = model.record(root, v, [*ids, 6, 7])
    before = dataset.snapshot().manifest
    assert before.max_fragment_id == 3
    v = ops.overwrite(dataset, rows(100, 5), target_bases=["b3"], max_rows_per_file=2).version
    model.record(root, v, range(100, 105))
    after = dataset.snapshot().manifest
    assert list(after.base_paths) == list(before.base_paths)
    assert after.max_fragment_id == 6
    assert fragment_ids(root) == [4, 5, 6]
    assert fragment_bases(root) == [3, 3, 3]
    assert {k: b.name for k, b in lance.dataset(root).base_paths().items()} == {1: "b1", 2: "b2", 3: "b3"}
    # the next append continues the fragment ids
    v = ops.append(dataset, rows(105, 1)).version
    model.record(root, v, [*range(100, 105), 105])
    assert fragment_ids(root) == [4, 5, 6, 7]
    assert load_transaction(dataset, 3) is not None and load_transaction(dataset, 3).HasField("overwrite")


def test_overwrite_with_another_schema(tmp_path: Path) -> None:
    """Overwrite replaces the schema; the old version keeps the old one."""
    root = str(tmp_path / "ds")
    ops.create(root, rows(0, 3))
    ops.overwrite(Dataset(root), pa.table({"k": pa.array(["a", "b"])}))
    assert lance.dataset(root).to_table().to_pylist() == [{"k": "a"}, {"k": "b"}]
    assert lance.dataset(root, version=1).to_table().to_pylist() == expected_rows(range(3))
    assert lance.dataset(root).schema.names == ["k"]
    lance.dataset(root).validate()


# --- delete --------------------------------------------------------------------------------------------


def _deletion_files(root: str) -> list[str]:
    path = os.path.join(root, "_deletions")
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def test_delete_by_predicate_and_by_rows(tmp_path: Path, model: Model) -> None:
    """§9: deletion files are cumulative per fragment (a later delete replaces the file) and live in the
    committing root even when the data file lives in a base; a delete that matches nothing commits
    nothing."""
    root = str(tmp_path / "ds")
    v = ops.create(root, rows(0, 30), initial_bases=three_bases(tmp_path), target_bases=["b1", "b2"],
                   max_rows_per_file=10).version
    ids = model.record(root, v, range(30))
    dataset = Dataset(root)
    v = ops.delete(dataset, "id = 1 OR id = 3 OR id = 25").version
    ids = model.record(root, v, [i for i in ids if i not in (1, 3, 25)])
    first = _deletion_files(root)
    assert len(first) == 2 and all(name.endswith(".arrow") for name in first)
    assert {name.split("-")[0] for name in first} == {"0", "2"}
    # by rows: fragment 0 offsets 5, 1 (1 already deleted), fragment 1 offsets 0, 9
    v = ops.delete(dataset, rows={0: [5, 1], 1: [0, 9]}).version
    ids = model.record(root, v, [i for i in ids if i not in (5, 10, 19)])
    snapshot = dataset.snapshot()
    assert [(f.id, f.deletion.num_deleted_rows if f.deletion else 0) for f in snapshot.fragments] == [
        (0, 3), (1, 2), (2, 1),
    ]
    for fragment in snapshot.fragments:
        assert fragment.deletion is not None
        assert fragment.deletion.file.base_id is None
        assert fragment.deletion.file.uri.startswith(root + "/_deletions/")
    pylance_deletions = {f.fragment_id: f.metadata.deletion_file.num_deleted_rows
                         for f in lance.dataset(root).get_fragments()}
    assert pylance_deletions == {0: 3, 1: 2, 2: 1}
    # an Arrow expression works as well
    v = ops.delete(dataset, pc.field("value") > 13.5).version
    ids = model.record(root, v, [i for i in ids if i * 0.5 <= 13.5])
    assert ops.delete(dataset, "id = 12345") is None
    assert ops.delete(dataset, rows={0: []}) is None
    assert dataset.latest_version() == v
    txn = load_transaction(dataset, v)
    assert txn is not None and txn.HasField("delete")


def test_deletion_file_formats(tmp_path: Path, model: Model) -> None:
    """§9: ``.arrow`` below 5000 deleted rows, ``.bin`` (roaring) from 5000, counted cumulatively per
    fragment; pylance reads the right rows from both."""
    root = str(tmp_path / "ds")
    v = ops.create(root, rows(0, 6000)).version
    ids = model.record(root, v, range(6000))
    dataset = Dataset(root)
    v = ops.append(dataset, rows(6000, 20)).version
    ids = model.record(root, v, [*ids, *range(6000, 6020)])
    v = ops.delete(dataset, "id < 4999 OR id = 6001").version
    ids = model.record(root, v, [i for i in ids if not (i < 4999 or i == 6001)])
    names = _deletion_files(root)
    assert sorted(n.rsplit(".", 1)[1] for n in names) == ["arrow", "arrow"]
    by_fragment = {f.fragment_id: f.metadata.deletion_file for f in lance.dataset(root).get_fragments()}
    assert by_fragment[0].num_deleted_rows == 4999 and by_fragment[1].num_deleted_rows == 1
    # one more row in fragment 0: the cumulative set reaches 5000 -> .bin
    v = ops.delete(dataset, "id = 5500").version
    ids = model.record(root, v, [i for i in ids if i != 5500])
    snapshot = dataset.snapshot()
    frag0 = snapshot.fragments[0]
    assert frag0.deletion is not None and frag0.deletion.num_deleted_rows == 5000
    assert frag0.deletion.file.path.endswith(".bin") and frag0.deletion.file_type == 1
    assert os.path.isfile(frag0.deletion.file.uri)
    frag1 = snapshot.fragments[1]
    assert frag1.deletion is not None and frag1.deletion.file.path.endswith(".arrow")
    assert frag1.deletion.file_type == 0
    pylance_frag0 = lance.dataset(root).get_fragments()[0]
    assert pylance_frag0.metadata.deletion_file.num_deleted_rows == 5000
    assert pylance_frag0.count_rows() == 1000
    assert lance.dataset(root).to_table(filter="id >= 4990 AND id < 5010")["id"].to_pylist() == [
        i for i in range(4999, 5010) if i != 5500
    ]


def test_fully_deleted_fragment_disappears(tmp_path: Path, model: Model) -> None:
    """§9: a fragment whose rows are all deleted leaves the manifest (Delete.deleted_fragment_ids) and
    gets no deletion file; also when it had a deletion file before."""
    root = str(tmp_path / "ds")
    v = ops.create(root, rows(0, 9), max_rows_per_file=3).version
    ids = model.record(root, v, range(9))
    dataset = Dataset(root)
    v = ops.delete(dataset, "id = 3").version
    ids = model.record(root, v, [i for i in ids if i != 3])
    assert len(_deletion_files(root)) == 1
    v = ops.delete(dataset, "id >= 3 AND id < 6 OR id = 0").version
    ids = model.record(root, v, [i for i in ids if not (3 <= i < 6 or i == 0)])
    assert fragment_ids(root) == [0, 2]
    txn = load_transaction(dataset, v)
    assert list(txn.delete.deleted_fragment_ids) == [1]
    assert [u.id for u in txn.delete.updated_fragments] == [0]
    assert len(_deletion_files(root)) == 2  # fragment 1's old file (unreferenced) and fragment 0's new one
    v = ops.delete(dataset, rows={2: [0, 1, 2]}).version
    ids = model.record(root, v, [i for i in ids if i < 6])
    assert fragment_ids(root) == [0]
    v = ops.delete(dataset, "id < 100").version
    model.record(root, v, [])
    assert fragment_ids(root) == []
    assert lance.dataset(root).count_rows() == 0
    assert dataset.snapshot().manifest.max_fragment_id == 2
    # the next fragment id keeps counting
    v = ops.append(dataset, rows(50, 1)).version
    model.record(root, v, [50])
    assert fragment_ids(root) == [3]


# --- bases ---------------------------------------------------------------------------------------------


def test_add_bases_then_append_to_new_base(tmp_path: Path, model: Model) -> None:
    """§10.2: add_bases commits UpdateBases; ids 0/None are assigned max+1 in order, explicit ids kept;
    data can then be written to a new base."""
    root = str(tmp_path / "ds")
    v = ops.create(root, rows(0, 4), initial_bases=[DatasetBasePath(str(tmp_path / "b1"), name="b1")],
                   target_bases=["b1"]).version
    ids = model.record(root, v, range(4))
    dataset = Dataset(root)
    v = ops.add_bases(dataset, [
        DatasetBasePath(str(tmp_path / "new_plain"), name="plain"),
        DatasetBasePath(str(tmp_path / "new_root"), name="rootlike", is_dataset_root=True),
        DatasetBasePath(str(tmp_path / "explicit"), name="explicit", id=9),
        DatasetBasePath(str(tmp_path / "unnamed")),
    ]).version
    ids = model.record(root, v, ids)
    pylance_bases = lance.dataset(root).base_paths()
    assert {k: (b.name, b.path, b.is_dataset_root) for k, b in pylance_bases.items()} == {
        1: ("b1", str(tmp_path / "b1"), False),
        2: ("plain", str(tmp_path / "new_plain"), False),
        3: ("rootlike", str(tmp_path / "new_root"), True),
        9: ("explicit", str(tmp_path / "explicit"), False),
        10: (None, str(tmp_path / "unnamed"), False),
    }
    assert load_transaction(dataset, v).HasField("update_bases")
    v = ops.append(dataset, rows(4, 4), target_bases=["plain", "rootlike", str(tmp_path / "unnamed"), "explicit"],
                   max_rows_per_file=1).version
    ids = model.record(root, v, [*ids, *range(4, 8)])
    assert fragment_bases(root) == [1, 2, 3, 10, 9]
    locations = data_file_locations(root)
    assert locations[1].startswith(str(tmp_path / "new_plain") + "/")
    assert locations[2].startswith(str(tmp_path / "new_root" / "data") + "/")
    assert locations[3].startswith(str(tmp_path / "unnamed") + "/")
    assert locations[4].startswith(str(tmp_path / "explicit") + "/")
    v = ops.delete(dataset, "id = 5 OR id = 6").version
    model.record(root, v, [i for i in ids if i not in (5, 6)])
    # pylance continues with the new base as target
    lance.write_dataset(rows(8, 1), root, mode="append", target_bases=["rootlike"])
    model.record(root, v + 1, [*model.latest(root), 8])
    assert fragment_bases(root)[-1] == 3


# --- tags ----------------------------------------------------------------------------------------------


def _pylance_tags(root: str) -> dict[str, tuple[int, str | None, int]]:
    listed = lance.dataset(root).tags.list()
    return {name: (t["version"], t["branch"], t["manifest_size"]) for name, t in listed.items()}


def _reference_tags(root: str) -> dict[str, tuple[int, str | None, int | None]]:
    return {name: (t.version, t.branch, t.manifest_size) for name, t in Dataset(root).tags().items()}


def test_tags_create_update_delete(tmp_path: Path, model: Model) -> None:
    """§11.1: tag files at the main root; pylance's tags.list() and reads by tag agree with the reference."""
    root = str(tmp_path / "ds")
    v = ops.create(root, rows(0, 3)).version
    model.record(root, v, range(3))
    dataset = Dataset(root)
    model.record(root, ops.append(dataset, rows(3, 3)).version, range(6))
    model.record(root, ops.delete(dataset, "id = 0").version, range(1, 6))
    refs.create_tag(dataset, "latest")
    refs.create_tag(dataset, "first", 1)
    refs.create_tag(dataset, "via-tag", "first")
    refs.create_tag(dataset, "by-tuple", (None, 2))
    refs.create_tag(dataset, "main-alias", ("main", 2))
    branch = refs.create_branch(dataset, "feat", 2)
    model.record(root, 2, range(6), branch="feat")
    v = ops.append(branch, rows(100, 1)).version
    model.record(root, v, [*range(6), 100], branch="feat")
    refs.create_tag(branch, "on-branch")
    refs.create_tag(dataset, "on-branch-tuple", ("feat", 2))
    sizes = {v: os.path.getsize(Dataset(root).snapshot(v).manifest_uri) for v in (1, 2, 3)}
    feat_sizes = {v: os.path.getsize(Dataset(f"{root}/tree/feat").snapshot(v).manifest_uri) for v in (2, 3)}
    want = {
        "latest": (3, None, sizes[3]), "first": (1, None, sizes[1]), "via-tag": (1, None, sizes[1]),
        "by-tuple": (2, None, sizes[2]), "main-alias": (2, None, sizes[2]),
        "on-branch": (3, "feat", feat_sizes[3]), "on-branch-tuple": (2, "feat", feat_sizes[2]),
    }
    assert _pylance_tags(root) == want == _reference_tags(root)
    assert not os.path.exists(f"{root}/tree/feat/_refs")
    for name, (version, tag_branch, _size) in want.items():
        ids = model.roots[(root, tag_branch)][version]
        assert lance.dataset(root, version=name).to_table().to_pylist() == expected_rows(ids), name
        assert lance.dataset(root).checkout_version(name).to_table().to_pylist() == expected_rows(ids), name
        assert lance.dataset(root).tags.get_version(name) == version
    created = Dataset(root).tag("first").created_at
    refs.update_tag(dataset, "first", 3)
    refs.update_tag(dataset, "latest", ("feat", 3))
    want["first"] = (3, None, sizes[3])
    want["latest"] = (3, "feat", feat_sizes[3])
    assert _pylance_tags(root) == want == _reference_tags(root)
    assert Dataset(root).tag("first").created_at == created
    assert lance.dataset(root, version="latest").to_table().to_pylist() == expected_rows([*range(6), 100])
    refs.delete_tag(dataset, "via-tag")
    refs.delete_tag(dataset, "on-branch")
    del want["via-tag"], want["on-branch"]
    assert _pylance_tags(root) == want == _reference_tags(root)
    # pylance's own tag operations work on the reference's files
    pylance_ds = lance.dataset(root)
    pylance_ds.tags.create("by-pylance", 2)
    pylance_ds.tags.update("first", 1)
    pylance_ds.tags.delete("by-tuple")
    assert Dataset(root).tag("by-pylance").version == 2
    assert Dataset(root).tag("first").version == 1
    assert "by-tuple" not in Dataset(root).tags()


# --- branches ------------------------------------------------------------------------------------------


def test_branches_and_branch_of_branch(tmp_path: Path, model: Model) -> None:
    """§11.2: a branch keeps the fork version number, registers main's root as base 0 and writes into
    ``tree/{name}``; a branch of a branch registers both; pylance opens ``tree/{name}`` and
    ``checkout_version((name, v))`` alike and its branches.list() agrees with the reference's records."""
    root = str(tmp_path / "ds")
    v = ops.create(root, rows(0, 4), initial_bases=[DatasetBasePath(str(tmp_path / "b1"), name="b1")],
                   target_bases=["b1"], max_rows_per_file=2).version
    model.record(root, v, range(4))
    dataset = Dataset(root)
    model.record(root, ops.append(dataset, rows(4, 2)).version, range(6))
    model.record(root, ops.delete(dataset, "id = 1").version, [0, *range(2, 6)])

    feat = refs.create_branch(dataset, "feat", 2)
    ids = model.record(root, 2, range(6), branch="feat")
    assert feat.latest_version() == 2
    assert [(b.id, b.name, b.path, b.is_dataset_root) for b in feat.snapshot().bases] == [
        (1, "b1", str(tmp_path / "b1"), False), (0, None, root, True),
    ]
    assert feat.snapshot().manifest.branch == "feat"
    assert fragment_bases(f"{root}/tree/feat") == [1, 1, 0]
    ids = model.record(root, ops.append(feat, rows(100, 2)).version, [*ids, 100, 101], branch="feat")
    ids = model.record(root, ops.delete(feat, "id = 4 OR id = 100").version,
                       [i for i in ids if i not in (4, 100)], branch="feat")
    # the deletion file of an inherited fragment goes to the branch root
    snapshot = feat.snapshot()
    assert snapshot.fragments[2].deletion.file.uri.startswith(f"{root}/tree/feat/_deletions/")

    nested = refs.create_branch(feat, "feat/sub")  # from the branch's latest (v4)
    sub_ids = model.record(root, 4, ids, branch="feat/sub")
    assert [(b.id, b.name, b.path) for b in nested.snapshot().bases] == [
        (1, "b1", str(tmp_path / "b1")), (0, None, root), (2, "feat", f"{root}/tree/feat"),
    ]
    assert fragment_bases(f"{root}/tree/feat/sub") == [1, 1, 0, 2]
    model.record(root, ops.append(nested, rows(200, 1), target_bases=["b1"]).version, [*sub_ids, 200],
                 branch="feat/sub")
    other = refs.create_branch(dataset, "team.x-1_a", ("feat", 3))
    model.record(root, 3, model.roots[(root, "feat")][3], branch="team.x-1_a")
    model.record(root, ops.append(other, rows(300, 1)).version, [*model.latest(root, "team.x-1_a"), 300],
                 branch="team.x-1_a")
    old = refs.create_branch(dataset, "old", 1)
    model.record(root, 1, range(4), branch="old")
    assert old.latest_version() == 1
    # main moves on after the forks
    model.record(root, ops.append(dataset, rows(6, 1)).version, [*model.latest(root), 6])

    listed = lance.dataset(root).branches.list()
    assert set(listed) == {"feat", "feat/sub", "team.x-1_a", "old"}
    assert os.path.isfile(f"{root}/_refs/branches/feat%2Fsub.json")
    for name, record in Dataset(root).branches().items():
        assert listed[name]["parent_branch"] == record.parent_branch
        assert listed[name]["parent_version"] == record.parent_version
        assert listed[name]["branch_identifier"] == list(record.version_mapping)
        assert listed[name]["manifest_size"] == record.manifest_size
    assert listed["feat/sub"]["parent_branch"] == "feat" and listed["feat/sub"]["parent_version"] == 4
    assert [v for v, _ in listed["feat/sub"]["branch_identifier"]] == [2, 4]
    assert listed["feat/sub"]["branch_identifier"][0] == listed["feat"]["branch_identifier"][0]
    # the branch's transaction is the Clone pylance writes
    txn = load_transaction(Dataset(f"{root}/tree/feat/sub"), 4)
    assert txn.clone.is_shallow and txn.clone.ref_name == "feat" and txn.clone.branch_name == "feat/sub"
    assert txn.clone.ref_version == 4 and txn.clone.ref_path == f"{root}/tree/feat"
    # pylance writes onto a reference branch
    lance.write_dataset(rows(400, 1), f"{root}/tree/feat/sub", mode="append")
    model.record(root, 6, [*model.latest(root, "feat/sub"), 400], branch="feat/sub")
    # deleting a leaf branch (reference) removes its record and tree, pylance agrees
    refs.delete_branch(dataset, "old")
    del model.roots[(root, "old")]
    assert "old" not in lance.dataset(root).branches.list()
    assert file_digests(f"{root}/tree/old") == {}  # empty directories may remain, no file does


def test_pylance_deletes_reference_branch(tmp_path: Path, model: Model) -> None:
    """pylance refuses to delete a reference-made branch with a child and deletes a leaf like its own."""
    root = str(tmp_path / "ds")
    model.record(root, ops.create(root, rows(0, 2)).version, range(2))
    dataset = Dataset(root)
    feat = refs.create_branch(dataset, "feat")
    model.record(root, 1, range(2), branch="feat")
    refs.create_branch(feat, "feat/sub")
    pylance_ds = lance.dataset(root)
    with pytest.raises(OSError, match="referenced by"):
        pylance_ds.branches.delete("feat")
    pylance_ds.branches.delete("feat/sub")
    assert set(Dataset(root).branches()) == {"feat"}


# --- clones --------------------------------------------------------------------------------------------


def test_shallow_clones(tmp_path: Path, model: Model) -> None:
    """§12.1: a shallow clone from a version, a tag and a branch keeps the version number, registers the
    source root at the smallest unused id (named after the source branch), points inherited files at
    it; clone of a clone accumulates bases and flattens the chain; the sources are never modified."""
    src = str(tmp_path / "src")
    v = ops.create(src, rows(0, 6), initial_bases=[
        DatasetBasePath(str(tmp_path / "b1"), name="b1", id=1),
        DatasetBasePath(str(tmp_path / "b3"), name="b3", id=3),
    ], target_bases=["b1", "b3"], max_rows_per_file=2).version
    model.record(src, v, range(6))
    source = Dataset(src)
    model.record(src, ops.append(source, rows(6, 3)).version, range(9))  # root, fragment 3
    src_ids = model.record(src, ops.delete(source, "id = 0 OR id = 7").version, [1, 2, 3, 4, 5, 6, 8])
    refs.create_tag(source, "rel", 2)
    feat = refs.create_branch(source, "feat", 3)
    model.record(src, 3, src_ids, branch="feat")
    model.record(src, ops.append(feat, rows(100, 2)).version, [*src_ids, 100, 101], branch="feat")
    before = file_digests(src, tmp_path / "b1", tmp_path / "b3")

    # from a version
    c_version = clone_ops.shallow_clone(source, 3, str(tmp_path / "c_version"))
    assert c_version.versions() == [3]
    snap = c_version.snapshot()
    assert [(b.id, b.name, b.path, b.is_dataset_root) for b in snap.bases] == [
        (1, "b1", str(tmp_path / "b1"), False), (3, "b3", str(tmp_path / "b3"), False), (0, None, src, True),
    ]
    assert [f.files[0].base_id for f in snap.fragments] == [1, 3, 1, 0]
    assert [f.deletion.file.base_id for f in snap.fragments if f.deletion] == [0, 0]
    model.record(str(tmp_path / "c_version"), 3, src_ids)

    # from a tag (the tag's name is not recorded: §12.1 step 5)
    _, tag_version = refs.resolve_reference(source, "rel")
    c_tag = clone_ops.shallow_clone(source, tag_version, str(tmp_path / "c_tag"))
    assert c_tag.versions() == [2]
    assert [b.name for b in c_tag.snapshot().bases] == ["b1", "b3", None]
    model.record(str(tmp_path / "c_tag"), 2, range(9))

    # from a branch: main's root and the branch root, named "feat"
    branch_root, branch_version = refs.resolve_reference(source, ("feat", None))
    c_branch = clone_ops.shallow_clone(branch_root, branch_version, str(tmp_path / "c_branch"))
    assert c_branch.versions() == [4]
    assert [(b.id, b.name, b.path) for b in c_branch.snapshot().bases] == [
        (1, "b1", str(tmp_path / "b1")), (3, "b3", str(tmp_path / "b3")), (0, None, src),
        (2, "feat", f"{src}/tree/feat"),
    ]
    assert [f.files[0].base_id for f in c_branch.snapshot().fragments] == [1, 3, 1, 0, 2]
    assert c_branch.snapshot().manifest.HasField("branch") is False
    txn = load_transaction(c_branch, 4)
    assert txn.clone.ref_name == "feat" and txn.clone.ref_path == f"{src}/tree/feat" and txn.clone.is_shallow
    c_branch_ids = model.record(str(tmp_path / "c_branch"), 4, [*src_ids, 100, 101])

    # writes to a clone go to the clone root
    c1 = str(tmp_path / "c_version")
    ids = model.record(c1, ops.append(c_version, rows(50, 2)).version, [*src_ids, 50, 51])
    ids = model.record(c1, ops.delete(c_version, "id = 6 OR id = 50").version, [i for i in ids if i not in (6, 50)])
    snap = c_version.snapshot()
    assert [f.files[0].base_id for f in snap.fragments] == [1, 3, 1, 0, None]
    # fragment 3's new deletion file (clone root) replaced the inherited one (base 0); fragment 0 keeps its own
    assert [(f.id, f.deletion.file.base_id) for f in snap.fragments if f.deletion] == [(0, 0), (3, None), (4, None)]
    model.record(str(tmp_path / "c_branch"), ops.append(c_branch, rows(60, 1)).version, [*c_branch_ids, 60])

    # clone of a clone: {1, 3, 0: src, 2: c1}, c1's own files -> 2
    c2 = str(tmp_path / "c2")
    clone2 = clone_ops.shallow_clone(c_version, 5, c2)
    snap2 = clone2.snapshot()
    assert [(b.id, b.path) for b in snap2.bases] == [
        (1, str(tmp_path / "b1")), (3, str(tmp_path / "b3")), (0, src), (2, c1),
    ]
    assert [f.files[0].base_id for f in snap2.fragments] == [1, 3, 1, 0, 2]
    assert [f.deletion.file.base_id for f in snap2.fragments if f.deletion] == [0, 2, 2]
    model.record(c2, 5, ids)
    ids2 = model.record(c2, ops.append(clone2, rows(70, 1)).version, [*ids, 70])
    # a third level: {.., 2: c1, 4: c2}
    c3 = str(tmp_path / "c3")
    clone3 = clone_ops.shallow_clone(clone2, 6, c3)
    assert [(b.id, b.path) for b in clone3.snapshot().bases][-2:] == [(2, c1), (4, c2)]
    assert [f.files[0].base_id for f in clone3.snapshot().fragments] == [1, 3, 1, 0, 2, 4]
    model.record(c3, 6, ids2)

    assert file_digests(src, tmp_path / "b1", tmp_path / "b3") == before
    # pylance continues writing on a reference clone
    lance.write_dataset(rows(80, 1), c3, mode="append")
    model.record(c3, 7, [*ids2, 80])
    lance.dataset(c3).delete("id = 3")
    model.record(c3, 8, [i for i in ids2 if i != 3] + [80])
    assert file_digests(src, tmp_path / "b1", tmp_path / "b3") == before


def test_deep_clone_shares_no_file(tmp_path: Path, model: Model) -> None:
    """§12.2: a deep clone copies every file of the version under the same names into its own root and
    references them from there: no resolved file lies under the source's root or bases (non-root bases stay
    registered for external blobs), and the clone
    still reads after the sources are gone. A deep clone of a shallow clone flattens it."""
    src = str(tmp_path / "src")
    ops.create(src, rows(0, 8), initial_bases=[
        DatasetBasePath(str(tmp_path / "plain"), name="plain"),
        DatasetBasePath(str(tmp_path / "rootlike"), name="rootlike", is_dataset_root=True),
    ], target_all_bases=True, max_rows_per_file=2)
    source = Dataset(src)
    ops.delete(source, "id = 2 OR id = 7")
    ops.append(source, rows(8, 1))
    shallow = clone_ops.shallow_clone(source, 2, str(tmp_path / "shallow"))
    ops.append(shallow, rows(20, 1))
    ops.delete(shallow, "id = 4")

    deep = clone_ops.deep_clone(source, 2, str(tmp_path / "deep"))
    deep_of_shallow = clone_ops.deep_clone(shallow, 4, str(tmp_path / "deep2"))
    foreign = [src, str(tmp_path / "plain"), str(tmp_path / "rootlike"), str(tmp_path / "shallow")]
    for clone, version in ((deep, 2), (deep_of_shallow, 4)):
        snap = clone.snapshot()
        # only non-root bases stay registered (external blobs may live there; F-019): no file uses them
        assert snap.version == version and all(not b.is_dataset_root for b in snap.bases)
        for resolved in snap.files():
            assert resolved.base_id is None
            assert resolved.uri.startswith(clone.uri + "/")
            assert not any(resolved.uri.startswith(f + "/") for f in foreign)
            assert os.path.isfile(resolved.uri)
        txn = load_transaction(clone, version)
        assert not txn.clone.is_shallow and txn.read_version == version
    # same file names as in the source
    source_names = sorted(os.path.basename(f.uri) for f in source.snapshot(2).files())
    assert sorted(os.path.basename(f.uri) for f in deep.snapshot().files()) == source_names
    d1 = model.record(deep.uri, 2, [0, 1, 3, 4, 5, 6])
    d2 = model.record(deep_of_shallow.uri, 4, [0, 1, 3, 5, 6, 20])
    before = file_digests(tmp_path / "deep", tmp_path / "deep2")
    for gone in foreign:
        shutil.rmtree(gone)
    assert lance.dataset(deep.uri).to_table().to_pylist() == expected_rows(d1)
    assert lance.dataset(deep_of_shallow.uri).to_table().to_pylist() == expected_rows(d2)
    assert file_digests(tmp_path / "deep", tmp_path / "deep2") == before
    model.record(deep.uri, ops.append(deep, rows(30, 1)).version, [*d1, 30])
    model.record(deep.uri, ops.delete(deep, "id = 0").version, [*d1[1:], 30])


# --- manifest naming -----------------------------------------------------------------------------------


@pytest.mark.parametrize("v2", [True, False], ids=["V2", "V1"])
def test_manifest_naming(tmp_path: Path, model: Model, v2: bool) -> None:
    """§6: V1 ``{n}.manifest`` or V2 ``{u64::MAX - n:020}.manifest``; an existing dataset keeps its scheme
    for every later commit; pylance reads both and continues in the same scheme."""
    root = str(tmp_path / "ds")
    ops.create(root, rows(0, 3), enable_v2_manifest_paths=v2)
    dataset = Dataset(root)
    ops.append(dataset, rows(3, 3))
    ops.delete(dataset, "id = 1")
    ops.add_bases(dataset, [DatasetBasePath(str(tmp_path / "b"), name="b")])
    ops.append(dataset, rows(6, 1), target_bases=["b"])
    ops.overwrite(dataset, rows(10, 2))
    lance.write_dataset(rows(12, 1), root, mode="append")
    for version, ids in enumerate([range(3), range(6), [0, *range(2, 6)], [0, *range(2, 6)],
                                   [0, *range(2, 7)], [10, 11], [10, 11, 12]], start=1):
        model.record(root, version, ids)

    def name(n: int) -> str:
        return f"{2**64 - 1 - n:020d}.manifest" if v2 else f"{n}.manifest"

    assert sorted(os.listdir(f"{root}/_versions")) == sorted(
        [name(n) for n in range(1, 8)] + ["latest_version_hint.json"]
    )


def test_clone_and_branch_of_v1_dataset_naming(tmp_path: Path, model: Model) -> None:
    """A clone or branch is a new dataset: the reference keeps its source's scheme (V1 here), while
    pylance 14.0.2 always names a new clone's or branch's manifests V2 (docs/lance-format.md §6 and §12 say
    nothing on this). Both are readable by pylance and each root stays unmixed."""
    root = str(tmp_path / "ds")
    model.record(root, ops.create(root, rows(0, 2), enable_v2_manifest_paths=False).version, range(2))
    dataset = Dataset(root)
    clone = clone_ops.shallow_clone(dataset, 1, str(tmp_path / "clone"))
    branch = refs.create_branch(dataset, "b")
    model.record(clone.uri, ops.append(clone, rows(2, 1)).version, range(3))
    model.record(clone.uri, 1, range(2))
    model.record(root, 1, range(2), branch="b")
    assert sorted(os.listdir(f"{clone.uri}/_versions")) == ["1.manifest", "2.manifest", "latest_version_hint.json"]
    assert sorted(os.listdir(f"{branch.uri}/_versions")) == ["1.manifest", "latest_version_hint.json"]
    # pylance's behaviour on the same source: V2 names for the new dataset.
    lance.dataset(root).shallow_clone(str(tmp_path / "pylance_clone"), 1)
    lance.dataset(root).create_branch("pb")
    v2_first = f"{2**64 - 2:020d}.manifest"
    assert sorted(os.listdir(tmp_path / "pylance_clone" / "_versions")) == [v2_first, "latest_version_hint.json"]
    assert sorted(os.listdir(f"{root}/tree/pb/_versions")) == [v2_first, "latest_version_hint.json"]
    model.record(str(tmp_path / "pylance_clone"), 1, range(2))
    model.record(root, 1, range(2), branch="pb")


# --- the reference writes what pylance writes ----------------------------------------------------------

#: One placement scenario: (rows, max_rows_per_file, target_bases, target_all_bases) per write call, the
#: first call creating the dataset with bases b1, b2 and b3 (b3 a dataset root).
PLACEMENT_CALLS: list[tuple[int, int, list[str] | None, bool | None]] = [
    (10, 1, ["b1", "b2", "b3"], None),
    (10, 3, ["b2", "b3"], None),
    (1, 1, ["b1", "b2", "b3"], None),
    (1, 1, ["b1", "b2", "b3"], None),
    (1, 1, ["b1", "b2", "b3"], None),
    (8, 1, None, True),
    (6, 1, None, False),
    (2, 1, ["PATH:b2", "b1"], None),
    (2, 1, None, None),
]


def _place(writer: str, work: Path) -> list[int | None]:
    root = str(work / "ds")
    start = 0
    for index, (count, per_file, targets, all_bases) in enumerate(PLACEMENT_CALLS):
        data = rows(start, count)
        start += count
        resolved = [str(work / t[5:]) if t.startswith("PATH:") else t for t in targets] if targets else None
        if writer == "pylance":
            kwargs: dict[str, Any] = {"max_rows_per_file": per_file, "target_bases": resolved,
                                      "target_all_bases": all_bases}
            if index == 0:
                kwargs["initial_bases"] = [
                    lance.DatasetBasePath(str(work / n), name=n, is_dataset_root=n == "b3") for n in ("b1", "b2", "b3")
                ]
            lance.write_dataset(data, root, mode="create" if index == 0 else "append", **kwargs)
        elif index == 0:
            ops.create(root, data, initial_bases=three_bases(work, root_base=True), target_bases=resolved,
                       target_all_bases=all_bases, max_rows_per_file=per_file)
        else:
            ops.append(Dataset(root), data, target_bases=resolved, target_all_bases=all_bases,
                       max_rows_per_file=per_file)
    assert lance.dataset(root).to_table().to_pylist() == expected_rows(range(start))
    return fragment_bases(root)


def test_placement_matches_pylance(tmp_path: Path) -> None:
    """The same write calls place every file on the same base with both writers.

    Divergence from multi-base post ("as new data is appended, the system cycles through bucket-1, bucket-2, …,
    bucket-N to distribute files evenly"; "all bases are used in a round-robin fashion"): pylance 14.0.2
    restarts the rotation at the first target on every write call, so successive one-file appends over
    [b1, b2, b3] all land on b1 (docs/lance-format.md §10.3). The reference does the same, deliberately.
    """
    by_pylance = _place("pylance", tmp_path / "pylance")
    by_reference = _place("reference", tmp_path / "reference")
    assert by_pylance == [
        1, 2, 3, 1, 2, 3, 1, 2, 3, 1,  # 10 files over b1, b2, b3
        2, 3, 2, 3,  # files of 3, 3, 3, 1 rows over b2, b3
        1, 1, 1,  # three one-file appends: the rotation restarts, every file on b1
        None, 1, 2, 3, None, 1, 2, 3,  # target_all_bases=True: the root, then every base by id
        1, 2, 3, 1, 2, 3,  # target_all_bases=False: the bases only
        2, 1,  # targets by path and by name
        None, None,  # no target: the root
    ]
    assert by_reference == by_pylance


def _layout(dataset_uri: str) -> tuple[list[tuple[int, str | None, str, bool]], list[tuple[Any, ...]]]:
    """Bases (sorted by id) and, per fragment, (id, data file base ids, deletion file base id or '-')."""
    snapshot = Dataset(dataset_uri).snapshot()
    bases = sorted((b.id, b.name, b.path, b.is_dataset_root) for b in snapshot.bases)
    fragments = [(f.id, tuple(d.base_id for d in f.files), f.deletion.file.base_id if f.deletion else "-")
                 for f in snapshot.fragments]
    return bases, fragments


def _relative_files(top: Path) -> set[str]:
    return {os.path.relpath(p, top) for p in file_digests(top) if "/_versions/" not in p and "/_transactions/" not in p}


def test_clones_and_branches_match_pylance(tmp_path: Path) -> None:
    """A shallow clone (from a version, a branch, and of a clone), a branch, a branch of a branch and a
    deep clone made by the reference have the layout pylance gives the same operation on the same
    source: the same bases under the same ids, the same base_id on every file, the same files copied."""
    src = str(tmp_path / "src")
    ops.create(src, rows(0, 8), initial_bases=[
        DatasetBasePath(str(tmp_path / "plain"), name="plain"),
        DatasetBasePath(str(tmp_path / "rootlike"), name="rootlike", is_dataset_root=True, id=5),
    ], target_all_bases=True, max_rows_per_file=2)
    source = Dataset(src)
    ops.delete(source, "id = 2 OR id = 7")
    ops.append(source, rows(8, 2))
    feat = refs.create_branch(source, "feat", 2)
    ops.append(feat, rows(100, 1))
    ops.delete(feat, "id = 0")
    pylance_source = lance.dataset(src)
    pylance_source.create_branch("pfeat", 2)
    lance.write_dataset(rows(100, 1), f"{src}/tree/pfeat", mode="append")
    lance.dataset(f"{src}/tree/pfeat").delete("id = 0")

    def both(name: str, reference: Any, pylance: Any) -> tuple[str, str]:
        ours, theirs = str(tmp_path / f"ref_{name}"), str(tmp_path / f"lance_{name}")
        reference(ours)
        pylance(theirs)
        return ours, theirs

    pairs = [
        both("version", lambda t: clone_ops.shallow_clone(source, 2, t),
             lambda t: pylance_source.shallow_clone(t, 2)),
        both("latest", lambda t: clone_ops.shallow_clone(source, 3, t),
             lambda t: pylance_source.shallow_clone(t, 3)),
        both("branch", lambda t: clone_ops.shallow_clone(feat, 4, t),
             lambda t: pylance_source.shallow_clone(t, ("feat", 4))),
    ]
    for ours, theirs in pairs:
        assert _layout(ours) == _layout(theirs)
        assert lance.dataset(ours).to_table() == lance.dataset(theirs).to_table()
    # clone of a clone: each writer appends and deletes on its own first clone, then clones that
    ref_first, lance_first = pairs[1]
    for first in (ref_first, lance_first):
        lance.write_dataset(rows(50, 1), first, mode="append")
        lance.dataset(first).delete("id = 4 OR id = 50")
    clone_ops.shallow_clone(Dataset(ref_first), 5, str(tmp_path / "ref_second"))
    lance.dataset(lance_first).shallow_clone(str(tmp_path / "lance_second"), 5)
    ours_bases, ours_fragments = _layout(str(tmp_path / "ref_second"))
    theirs_bases, theirs_fragments = _layout(str(tmp_path / "lance_second"))
    assert ours_fragments == theirs_fragments
    assert [b[:2] + b[3:] for b in ours_bases] == [b[:2] + b[3:] for b in theirs_bases]
    assert [b[2] for b in ours_bases if b[2] not in (ref_first, lance_first)] == [
        b[2] for b in theirs_bases if b[2] not in (ref_first, lance_first)]
    # a branch of a branch: the reference's on feat, pylance's on pfeat (same history)
    refs.create_branch(feat, "feat/sub")
    lance.dataset(f"{src}/tree/pfeat").create_branch("pfeat/sub")
    ours_bases, ours_fragments = _layout(f"{src}/tree/feat/sub")
    theirs_bases, theirs_fragments = _layout(f"{src}/tree/pfeat/sub")
    assert ours_fragments == theirs_fragments
    assert [(b[0], b[1] and b[1].replace("pfeat", "feat"), b[2].replace("pfeat", "feat"), b[3])
            for b in theirs_bases] == ours_bases
    # deep clones copy the same files under the same names. (A source with files in a non-root base is
    # left out: pylance 14.0.2 cannot deep-clone one, see test_reference_continues_pylance.py.)
    deep_src = str(tmp_path / "deep_src")
    ops.create(deep_src, rows(0, 6), initial_bases=[DatasetBasePath(str(tmp_path / "deep_rootlike"), name="r",
                                                                    is_dataset_root=True)],
               target_all_bases=True, max_rows_per_file=2)
    ops.delete(Dataset(deep_src), "id = 1")
    deep_feat = refs.create_branch(Dataset(deep_src), "feat")
    ops.append(deep_feat, rows(10, 1))
    ops.delete(deep_feat, "id = 2 OR id = 10")
    clone_ops.deep_clone(deep_feat, 4, str(tmp_path / "ref_deep"))
    lance.dataset(deep_src).deep_clone(str(tmp_path / "lance_deep"), ("feat", 4))
    ours_files = _relative_files(tmp_path / "ref_deep")
    theirs_files = _relative_files(tmp_path / "lance_deep")
    assert ours_files == theirs_files
    assert {p.split("/")[0] for p in ours_files} == {"data", "_deletions"}
    assert _layout(str(tmp_path / "ref_deep")) == _layout(str(tmp_path / "lance_deep"))
    assert lance.dataset(str(tmp_path / "ref_deep")).to_table().to_pylist() == expected_rows([0, 3, 4, 5])


def test_nested_types_and_field_types_read_by_pylance(tmp_path: Path) -> None:
    """The reference writes Field.type as Table Format spec describes (LEAF 2, REPEATED 1, PARENT 0; pylance
    writes 0 everywhere, finding F-004) and pylance reads the schema and values back unchanged."""
    table = pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "s": pa.array([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]),
        "l": pa.array([[1, 2], [3]]),
        "ts": pa.array([1, 2], pa.timestamp("us")),
    })
    root = str(tmp_path / "ds")
    ops.create(root, table)
    fields = Dataset(root).snapshot().manifest.fields
    assert [(f.name, f.type) for f in fields] == [("id", 2), ("s", 0), ("a", 2), ("b", 2), ("l", 1), ("item", 2),
                                                  ("ts", 2)]
    ds = lance.dataset(root)
    assert ds.schema == table.schema
    assert ds.to_table() == table
    ds.validate()
    lance.write_dataset(table, root, mode="append")
    ops.append(Dataset(root), table)
    assert lance.dataset(root).to_table() == pa.concat_tables([table] * 3)
