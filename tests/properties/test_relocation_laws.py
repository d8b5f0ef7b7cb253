"""Relocation laws (the multi-base post "change 5 strings, not 10 million"; Storage Layout spec "Dataset Portability";
docs/lance-format.md §10.4), on the reference writer:

* moving any subset of bases and rewriting only their paths keeps every version's rows: old versions read
  through the original locations, the new version through the copies, also once the originals are gone
  (PORT-003), in the reference and in pylance;
* the relocated manifest differs from the previous one in base paths only, and the manifest bytes that
  change do not grow with the number of files (PORT-003).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conformance_kit import local_manifest_file, without_stamps_and_base_paths
from hypothesis import assume, given
from hypothesis import strategies as st
from property_kit import local, reference_run, run_all, scratch

from conformance.operations import AddBase, BaseSpec, Operation, Relocate
from conformance.payload import expected_rows, rows
from conformance.strategies import operation_sequences
from reference import ops
from reference.ops import DatasetBasePath
from reference.relocate import relocate
from reference.table import Dataset

pytestmark = pytest.mark.interop  # pylance reads the relocated versions

HISTORY = ("append", "delete", "add_base", "tag", "relocate")


@given(ops=operation_sequences(max_size=8, kinds=HISTORY), data=st.data())
def test_relocating_any_subset_of_bases_keeps_every_version(ops: list[Operation], data: st.DataObject) -> None:
    with scratch() as tmp:
        runner = reference_run(tmp)
        run_all(runner, ops)
        model = runner.model
        root = model.roots["ds"]
        if not any(b.dir.startswith("bases/") for b in root.head.bases):
            runner.run(AddBase("ds", BaseSpec(model.fresh("bases/b"), None, data.draw(st.booleans()))))
        world = runner.worlds["reference"]
        previous = Dataset(world.uri("ds")).snapshot()
        user = sorted(b.dir for b in root.head.bases if b.dir.startswith("bases/"))
        moved = data.draw(st.lists(st.sampled_from(user), min_size=1, max_size=len(user), unique=True), label="moved")
        move = Relocate("ds", tuple((old, model.fresh("bases/m")) for old in sorted(moved)))
        before = {v: list(root.versions[v].live_ids()) for v in root.versions}
        runner.run(move)  # copies the directories, relocates; rows and layout of the new version vs the model

        new = Dataset(world.uri("ds")).snapshot()
        assert new.version == previous.version + 1
        prev_file, new_file = local_manifest_file(previous.manifest_uri), local_manifest_file(new.manifest_uri)
        # only base paths change
        assert without_stamps_and_base_paths(new_file.manifest) == without_stamps_and_base_paths(prev_file.manifest)
        paths = {b.id: b.path for b in new.bases}
        for b in previous.bases:
            target = dict(move.moves).get(local(b.path)[len(str(world.dir)) + 1:])
            assert paths[b.id] == (world.uri(target) if target else b.path)
        # every version keeps its rows, old ones through the originals
        for version, ids in before.items():
            assert world.rows("ds", version, "reference") == expected_rows(ids)
        latest = expected_rows(root.head.live_ids())
        assert latest == expected_rows(before[previous.version])
        # the originals of the moved bases gone: the new version reads on, in both readers
        for old, _ in move.moves:
            if Path(world.uri(old)).exists():
                Path(world.uri(old)).rename(world.uri(old) + ".away")
        try:
            assert world.rows("ds", new.version, "reference") == latest
            assert world.rows("ds", new.version, "pylance") == latest
        finally:
            for old, _ in move.moves:
                if Path(world.uri(old) + ".away").exists():
                    Path(world.uri(old) + ".away").rename(world.uri(old))


def _size_delta(work: Path, files: int, bases: int, moved: list[int]) -> int:
    """Write ``files`` one-row files over the root and ``bases`` bases, commit a small change, relocate the
    bases ``moved`` (indices) to copies; return how many bytes the manifest grew by (the width of the
    commit timestamp's varint, which varies from commit to commit, taken out)."""
    root = str(work / "ds")
    registered = [DatasetBasePath(str(work / f"b{i}"), name=f"b{i}") for i in range(bases)]
    ops.create(root, rows(0, files), initial_bases=registered, target_all_bases=True, max_rows_per_file=1)
    dataset = Dataset(root)
    ops.add_bases(dataset, [DatasetBasePath(str(work / "xx"), name="xx")])
    previous = local_manifest_file(dataset.snapshot().manifest_uri)
    for i in moved:
        source = work / f"b{i}"
        if source.exists():
            shutil.copytree(source, work / f"m{i}")
    result = relocate(dataset, {f"b{i}": str(work / f"m{i}") for i in moved})
    new = local_manifest_file(result.manifest_uri)
    assert without_stamps_and_base_paths(new.manifest) == without_stamps_and_base_paths(previous.manifest)
    stamp = new.manifest.timestamp.ByteSize() - previous.manifest.timestamp.ByteSize()
    return new.size - previous.size - stamp


@given(small=st.integers(1, 8), large=st.integers(9, 40), bases=st.integers(1, 3), data=st.data())
def test_relocation_cost_does_not_grow_with_the_number_of_files(small: int, large: int, bases: int,
                                                                data: st.DataObject) -> None:
    moved = data.draw(st.lists(st.integers(0, bases - 1), min_size=1, max_size=bases, unique=True), label="moved")
    assume(moved)
    with scratch() as tmp:
        # equal-length directory names, so that the base paths themselves have equal lengths
        a = _size_delta(tmp / "s", small, bases, moved)
        b = _size_delta(tmp / "l", large, bases, moved)
    assert a == b
    assert abs(a) < 100 * len(moved) + 100
