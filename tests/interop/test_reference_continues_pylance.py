"""The reference writer continues datasets pylance 14.0.2 wrote, and pylance continues after it.

Every shape of ``conformance.shapes`` that holds ``shapes.rows`` data is built fresh (single
root, multi-base, deletions, V1/V2 names, tags, branches, shallow and deep clones, an index), then the
reference appends, deletes, tags, branches and shallow-clones on top of it, and pylance appends and
deletes again on top of what the reference wrote. A python model of the live ids, seeded from pylance's
reading of its own versions and then advanced by the test alone, must equal what pylance and the
reference read at EVERY version of every root touched; pylance's ``validate()`` must pass throughout.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import lance
import pytest

from conformance.payload import expected_rows, rows
from conformance.shapes import SHAPES, Shape
from reference import clone as clone_ops
from reference import ops, refs
from reference.ops import DatasetBasePath
from reference.read import read_snapshot
from reference.table import Dataset

pytestmark = pytest.mark.interop

#: Shapes whose data is ``shapes.rows`` (every shape but blob_v2).
CONTINUED = [
    "single_base", "manifest_v1", "manifest_v2", "deletions_arrow", "deletions_bitmap", "multi_base_nonroot",
    "multi_base_root", "tags", "branches", "shallow_clone", "branch_clone", "clone_of_clone",
    "multi_base_clone", "deep_clone", "index",
]



def ids_of(table: Any) -> list[int]:
    return table.column("id").to_pylist()


class Model:
    """Expected live ids per (main root, branch or None) per version."""

    def __init__(self) -> None:
        self.roots: dict[tuple[str, str | None], dict[int, list[int]]] = {}

    def record(self, main: str, version: int, ids: Iterable[int], branch: str | None = None) -> list[int]:
        ids = list(ids)
        self.roots.setdefault((main, branch), {})[version] = ids
        return ids

    def seed_from_pylance(self, main: str, branch: str | None = None) -> list[int]:
        """Record every existing version as pylance reads it (pylance's own data); return the latest's ids."""
        uri = main if branch is None else f"{main}/tree/{branch}"
        versions = [v["version"] for v in lance.dataset(uri).versions()]
        for version in versions:
            self.record(main, version, ids_of(lance.dataset(uri, version=version).to_table()), branch)
        return self.latest(main, branch)

    def latest(self, main: str, branch: str | None = None) -> list[int]:
        versions = self.roots[(main, branch)]
        return list(versions[max(versions)])

    def latest_version(self, main: str, branch: str | None = None) -> int:
        return max(self.roots[(main, branch)])

    def check(self) -> None:
        for (main, branch), versions in self.roots.items():
            uri = main if branch is None else f"{main}/tree/{branch}"
            reference = Dataset(uri)
            assert reference.versions() == sorted(versions), uri
            assert [v["version"] for v in lance.dataset(uri).versions()] == sorted(versions), uri
            for version, ids in versions.items():
                want = expected_rows(ids)
                assert read_snapshot(reference.snapshot(version), reference.storage).to_pylist() == want, (
                    f"reference read of {uri} v{version}")
                ds = lance.dataset(uri, version=version)
                assert ds.to_table().to_pylist() == want, f"pylance read of {uri} v{version}"
                ds.validate()
                if branch is not None:
                    checked_out = lance.dataset(main).checkout_version((branch, version))
                    assert checked_out.to_table().to_pylist() == want, f"checkout ({branch}, {version})"


def _named_plain_bases(dataset: Dataset) -> list[str]:
    return [b.name for b in dataset.snapshot().bases if b.name and not b.is_dataset_root]


def _filter_agrees(uri: str, ids: list[int]) -> None:
    """A filtered scan (through the BTREE index where one exists) finds exactly the model's rows."""
    probe = sorted(set(ids))[:: max(1, len(ids) // 5)][:6]
    for value in probe:
        assert ids_of(lance.dataset(uri).to_table(filter=f"id = {value}")) == [value], (uri, value)
    assert lance.dataset(uri).count_rows(filter="id >= 1000 AND id < 1010") == len(
        [i for i in ids if 1000 <= i < 1010])


@pytest.mark.parametrize("shape_name", CONTINUED)
def test_reference_continues_pylance_dataset(shape_name: str, tmp_path: Path) -> None:
    shape: Shape = SHAPES[shape_name](tmp_path / "shape")
    main, branch = shape.uri, shape.branch
    uri = shape.lance_uri
    target = Dataset(main).branch(branch) if branch else Dataset(main)
    model = Model()
    ids = model.seed_from_pylance(main, branch)
    assert ids, "every continued shape has live rows"
    model.check()  # the reference reads pylance's own versions the same way

    # reference append: over the plain named bases when there are any, else to the root
    plain = _named_plain_bases(target)
    result = ops.append(target, rows(1000, 4), target_bases=plain or None, max_rows_per_file=1)
    ids = model.record(main, result.version, [*ids, 1000, 1001, 1002, 1003], branch)
    placed = [f.files[0].base_id for f in target.snapshot().fragments][-4:]
    by_name = {b.name: b.id for b in target.snapshot().bases}
    assert placed == ([by_name[plain[i % len(plain)]] for i in range(4)] if plain else [None] * 4)

    # reference delete of an inherited row (its fragment may live in a base or a clone source) and a new one
    inherited = ids[0]
    result = ops.delete(target, f"id = {inherited} OR id = 1001")
    ids = model.record(main, result.version, [i for i in ids if i not in (inherited, 1001)], branch)
    for fragment in target.snapshot().fragments:
        if fragment.deletion is not None and fragment.deletion.read_version == result.version - 1:
            assert fragment.deletion.file.uri.startswith(target.uri + "/_deletions/")
    # reference delete by position: the first row of the last fragment (id 1003)
    last = target.snapshot().fragments[-1]
    result = ops.delete(target, rows={last.id: [0]})
    ids = model.record(main, result.version, [i for i in ids if i != 1003], branch)
    _filter_agrees(uri, ids)

    # reference tag (at the main root, naming the branch when on one); pylance lists and reads it
    refs.create_tag(target, "ref-tag")
    listed = lance.dataset(main).tags.list()["ref-tag"]
    assert (listed["version"], listed["branch"]) == (result.version, branch)
    assert lance.dataset(main, version="ref-tag").to_table().to_pylist() == expected_rows(ids)
    assert os.path.isfile(f"{main}/_refs/tags/ref-tag.json")

    # reference branch from the latest (nested under the branch when on one); both writers continue it
    new_branch = f"{branch}/ref" if branch else "ref"
    created = refs.create_branch(target, new_branch)
    fork = result.version
    model.record(main, fork, ids, new_branch)
    assert lance.dataset(main).branches.list()[new_branch]["parent_branch"] == branch
    lance.write_dataset(rows(2000, 2), f"{main}/tree/{new_branch}", mode="append")
    branch_ids = model.record(main, fork + 1, [*ids, 2000, 2001], new_branch)
    result = ops.append(created, rows(2100, 1))
    branch_ids = model.record(main, result.version, [*branch_ids, 2100], new_branch)
    lance.dataset(f"{main}/tree/{new_branch}").delete(f"id = {branch_ids[0]} OR id = 2000")
    model.record(main, result.version + 1, [i for i in branch_ids if i not in (branch_ids[0], 2000)], new_branch)

    # reference shallow clone of the latest; pylance continues the clone
    clone_uri = str(tmp_path / "refclone")
    clone = clone_ops.shallow_clone(target, fork, clone_uri)
    model.record(clone_uri, fork, ids)
    lance.write_dataset(rows(3000, 2), clone_uri, mode="append")
    clone_ids = model.record(clone_uri, fork + 1, [*ids, 3000, 3001])
    lance.dataset(clone_uri).delete(f"id = {clone_ids[0]}")
    clone_ids = model.record(clone_uri, fork + 2, clone_ids[1:])
    model.record(clone_uri, ops.append(clone, rows(3100, 1)).version, [*clone_ids, 3100])

    # pylance continues the dataset itself, then the reference again
    lance.write_dataset(rows(4000, 2), uri, mode="append", target_bases=plain or None)
    ids = model.record(main, fork + 1, [*ids, 4000, 4001], branch)
    lance.dataset(uri).delete("id = 1002 OR id = 4000")
    ids = model.record(main, fork + 2, [i for i in ids if i not in (1002, 4000)], branch)
    model.record(main, ops.append(target, rows(4100, 1)).version, [*ids, 4100], branch)
    _filter_agrees(uri, model.latest(main, branch))
    model.check()


def test_reference_bases_on_pylance_dataset(tmp_path: Path) -> None:
    """add_bases and overwrite by the reference on a pylance multi-base dataset: pylance writes into the
    new base, the overwrite keeps every base, and a reference deep clone reads without the sources."""
    shape = SHAPES["multi_base_nonroot"](tmp_path / "shape")
    main = shape.uri
    model = Model()
    ids = model.seed_from_pylance(main)
    target = Dataset(main)
    new_base = str(tmp_path / "added")
    version = ops.add_bases(target, [DatasetBasePath(new_base, name="added", is_dataset_root=True)]).version
    ids = model.record(main, version, ids)
    assert {b.id: b.name for b in lance.dataset(main).base_paths().values()} == {1: "one", 2: "two", 3: "added"}
    lance.write_dataset(rows(500, 2), main, mode="append", target_bases=["added"])
    ids = model.record(main, version + 1, [*ids, 500, 501])
    assert os.listdir(os.path.join(new_base, "data"))
    version = ops.append(target, rows(600, 2), target_bases=["added", "one"], max_rows_per_file=1).version
    ids = model.record(main, version, [*ids, 600, 601])
    deep = clone_ops.deep_clone(target, version, str(tmp_path / "deep"))
    model.record(deep.uri, version, ids)
    version = ops.overwrite(target, rows(700, 3), target_bases=["two"]).version
    model.record(main, version, range(700, 703))
    assert sorted(b.id for b in target.snapshot().bases) == [1, 2, 3]  # pylance keeps no order
    lance.write_dataset(rows(800, 1), main, mode="append", target_bases=["added"])
    model.record(main, version + 1, [*range(700, 703), 800])
    model.check()


def test_pylance_cannot_deep_clone_files_in_a_non_root_base(tmp_path: Path) -> None:
    """Divergence from clone-primitives post ("A deep clone is a full physical copy of a specific version of a dataset,
    including all its data, index, and deletion files"), Storage Layout spec (a non-root base's files are at
    ``{base}/{path}``, no ``data/``) and docs/lance-format.md §12.2: pylance 14.0.2's deep_clone looks for a
    non-root base's data files under ``{base}/data/`` and fails; it writes nothing. (Files in the root
    or in a dataset-root base clone fine.) The reference deep-clones the same pylance dataset."""
    src, base = str(tmp_path / "src"), str(tmp_path / "b")
    ds = lance.write_dataset(rows(0, 2), src, initial_bases=[lance.DatasetBasePath(base, name="b")],
                             target_bases=["b"])
    (data_file,) = os.listdir(base)
    with pytest.raises(OSError, match=re.escape(f"Not found: {base.lstrip('/')}/data/{data_file}")):
        ds.deep_clone(str(tmp_path / "lance_deep"), 1)
    assert not os.path.exists(tmp_path / "lance_deep")
    deep = clone_ops.deep_clone(Dataset(src), 1, str(tmp_path / "ref_deep"))
    assert os.path.isfile(tmp_path / "ref_deep" / "data" / data_file)
    assert [f.uri for f in deep.snapshot().files()] == [str(tmp_path / "ref_deep" / "data" / data_file)]
    assert lance.dataset(deep.uri).to_table().to_pylist() == expected_rows(range(2))
