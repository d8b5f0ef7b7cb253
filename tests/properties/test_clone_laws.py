"""Clone laws (the clone-primitives post "shallow_clone", "deep_clone"; Storage Layout spec "Shallow Clone";
docs/lance-format.md §12), on the
reference writer, over random source histories (appends to target bases, deletes, bases, relocations):

* a shallow clone at version v reads the source's rows at v, starting at version v (CLONE-001, CLONE-002),
  through the reference and through pylance;
* writes to the clone change no byte under the source's root (CLONE-003);
* a clone of a clone resolves to the original files: the same URIs, never copies (CLONE-001);
* a deep clone shares no file with its source and reads on with the source and its bases gone (CLONE-004).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conformance_kit import file_digests
from hypothesis import given
from hypothesis import strategies as st
from property_kit import local, reference_run, referenced_uris, run_all, scratch

from conformance.operations import Operation, ShallowClone, Tag
from conformance.payload import expected_rows
from conformance.strategies import draw_operation, operation_sequences
from reference import api as ref
from reference.table import Dataset

pytestmark = pytest.mark.interop  # pylance reads the clones

SOURCE_KINDS = ("append", "delete", "add_base", "relocate")
CLONE_WRITES = ("append", "delete", "add_base")


@given(ops=operation_sequences(max_size=6, kinds=SOURCE_KINDS), data=st.data())
def test_shallow_clone_reads_the_source_at_v_and_never_writes_into_it(ops: list[Operation],
                                                                        data: st.DataObject) -> None:
    with scratch() as tmp:
        runner = reference_run(tmp)
        run_all(runner, ops)
        world = runner.worlds["reference"]
        source = runner.model.roots["ds"]
        version = data.draw(st.sampled_from(sorted(source.versions)), label="version")
        runner.run(Tag("ds", "keep", None, version))
        runner.run(ShallowClone("ds", "keep", "c1"))
        # CLONE-002: the clone starts at v; CLONE-001: it reads the source's rows at v, in both readers
        assert Dataset(world.uri("c1")).versions() == [version]
        want = world.rows("ds", version, "reference")
        assert want == expected_rows(source.versions[version].live_ids())
        assert world.rows("c1", version, "reference") == want
        assert world.rows("c1", version, "pylance") == want
        inherited = referenced_uris(Dataset(world.uri("c1")).snapshot())
        assert inherited == referenced_uris(Dataset(world.uri("ds")).snapshot(version))
        assert all(os.path.exists(local(u)) for u in inherited)

        # CLONE-003: the clone's own writes never touch the source's root
        before = file_digests(world.uri("ds"))
        for _ in range(data.draw(st.integers(1, 4), label="writes")):
            op = draw_operation(data.draw, runner.model, data.draw(st.sampled_from(CLONE_WRITES)), root="c1")
            if op is not None:
                runner.run(op)  # layout vs the model: new files in the clone's root or its own bases
        assert file_digests(world.uri("ds")) == before
        assert world.rows("ds", version, "reference") == want
        clone = runner.model.roots["c1"]
        assert world.rows("c1", clone.latest, "pylance") == expected_rows(clone.head.live_ids())


@given(ops=operation_sequences(max_size=5, kinds=SOURCE_KINDS), data=st.data())
def test_a_clone_of_a_clone_resolves_to_the_original_files(ops: list[Operation], data: st.DataObject) -> None:
    with scratch() as tmp:
        runner = reference_run(tmp)
        run_all(runner, ops)
        world = runner.worlds["reference"]
        version = data.draw(st.sampled_from(sorted(runner.model.roots["ds"].versions)), label="version")
        runner.run(Tag("ds", "t1", None, version))
        runner.run(ShallowClone("ds", "t1", "c1"))
        for _ in range(data.draw(st.integers(0, 3), label="writes")):
            op = draw_operation(data.draw, runner.model, data.draw(st.sampled_from(CLONE_WRITES)), root="c1")
            if op is not None:
                runner.run(op)
        middle = runner.model.roots["c1"].latest
        runner.run(Tag("c1", "t2", None, middle))
        runner.run(ShallowClone("c1", "t2", "c2"))
        first = Dataset(world.uri("c1")).snapshot(middle)
        second = Dataset(world.uri("c2")).snapshot()
        assert [f.id for f in second.fragments] == [f.id for f in first.fragments]
        for a, b in zip(first.fragments, second.fragments, strict=True):
            assert [f.uri for f in b.files] == [f.uri for f in a.files]  # the same objects, not copies
            assert (b.deletion.file.uri if b.deletion else None) == (a.deletion.file.uri if a.deletion else None)
        source_files = referenced_uris(Dataset(world.uri("ds")).snapshot(version))
        for uri in referenced_uris(second):
            assert not local(uri).startswith(world.uri("c2") + "/")
        assert source_files & referenced_uris(second) == source_files & referenced_uris(first)
        assert world.rows("c2", middle, "pylance") == world.rows("c1", middle, "reference")


@given(ops=operation_sequences(max_size=6, kinds=SOURCE_KINDS), data=st.data())
def test_a_deep_clone_shares_no_file_with_its_source(ops: list[Operation], data: st.DataObject) -> None:
    with scratch() as tmp:
        runner = reference_run(tmp)
        run_all(runner, ops)
        world = runner.worlds["reference"]
        source = runner.model.roots["ds"]
        version = data.draw(st.sampled_from(sorted(source.versions)), label="version")
        # the reference deep-clones files in non-root bases too (pylance cannot, F-011)
        ref.dataset(world.uri("ds")).deep_clone(world.uri("d1"), version)
        clone = Dataset(world.uri("d1")).snapshot()
        assert clone.version == version
        theirs = set()
        for v in Dataset(world.uri("ds")).versions():
            theirs |= referenced_uris(Dataset(world.uri("ds")).snapshot(v))
        ours = referenced_uris(clone)
        assert not ours & theirs
        assert all(local(u).startswith(world.uri("d1") + "/") for u in ours)
        want = expected_rows(source.versions[version].live_ids())
        # with the source and every base out of the way, the deep clone reads on
        away = [Path(world.uri("ds")), Path(world.uri("bases"))]
        for p in away:
            if p.exists():
                p.rename(p.with_name(p.name + ".away"))
        try:
            assert world.rows("d1", version, "reference") == want
            assert world.rows("d1", version, "pylance") == want
        finally:
            for p in away:
                moved = p.with_name(p.name + ".away")
                if moved.exists():
                    moved.rename(p)
