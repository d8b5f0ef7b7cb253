"""Garbage-collection laws (docs/lance-format.md §13; clone-primitives post "Stability with Tags"), on the reference
writer,
after any sequence of operations with cleanups interleaved (appends to target bases, deletes, bases,
tags, branches, shallow clones from tags, deep clones, relocations, cleanups of any root):

* every retained version (the latest, tagged versions, fork points a branch still reads) reads back
  exactly what the model says, and the versions a cleanup keeps are those the model keeps (GC-001);
* no file that a retained version of any root references was deleted (GC-001, BLOB-008);
* a cleanup changes nothing outside its own root's ``_versions/``, ``_transactions/``, ``data/``,
  ``_deletions/`` and ``_indices/``: not the bases (F-007), not branches under ``tree/``, not other roots
  (GC-002);
* an unreferenced file younger than the unverified window survives (it may belong to a commit in progress),
  (GC-003), and past the retention window no unreachable file under the root remains (GC-001, GC-002).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conformance_kit import file_digests
from hypothesis import given
from hypothesis import strategies as st
from property_kit import every_snapshot, local, reference_run, scratch

from conformance.operations import Append, Branch, Cleanup, Delete, Operation, Tag, root_dir
from conformance.properties.side_by_side import SideBySide
from conformance.strategies import ALL_KINDS, operation_sequences
from reference.gc import SCANNED_DIRS
from reference.layout import VERSION_HINT_NAME, VERSIONS_DIR
from reference.table import Dataset

# cleanups three times as likely as any other operation
GC_KINDS = (*ALL_KINDS, "cleanup", "cleanup", "cleanup")


def own_files(world: Path, root: str) -> set[str]:
    """The files a cleanup of ``root`` may touch: below its scanned directories."""
    return set(file_digests(*(world / root / d for d in SCANNED_DIRS)))


def reachable(runner: SideBySide) -> set[str]:
    """Every file some existing version of some root references (data, deletion, index files), each
    root's manifests and the transaction files they name: what no cleanup may have deleted."""
    world = runner.worlds["reference"]
    out: set[str] = set()
    for _root, snap in every_snapshot(world.dir, runner.model.roots):
        out |= {local(f.uri) for f in snap.files() if f.uri}
        out.add(local(snap.manifest_uri))
    return out


def transactions_of(world: Path, root: str) -> set[str]:
    dataset = Dataset(str(world / root))
    return {str(world / root / "_transactions" / dataset.snapshot(v).manifest.transaction_file)
            for v in dataset.versions()}


def check_cleanup_laws(runner: SideBySide, op: Cleanup, before: dict[str, str]) -> None:
    world = runner.worlds["reference"].dir
    after = file_digests(world)
    changed = {p for p in before if after.get(p) != before[p]} | (set(after) - set(before))
    allowed = tuple(str(world / op.root / d) + "/" for d in SCANNED_DIRS)
    outside = sorted(p for p in changed if not p.startswith(allowed))
    assert not outside, f"GC-002: cleanup of {op.root} changed {outside}"
    missing = sorted(reachable(runner) - set(after))
    assert not missing, f"GC-001: cleanup of {op.root} deleted referenced files {missing}"


def plant_strays(world: Path, root: str, tag: str, age: timedelta) -> list[Path]:
    """Files a crashed writer could leave, ``age`` old: a data file, a deletion file, a transaction file."""
    strays = [world / root / "data" / f"{'1' * 24}{tag:0>26}.lance",
              world / root / "_deletions" / f"999-{tag}-1.arrow",
              world / root / "_transactions" / f"{tag}-00000000-0000-0000-0000-000000000000.txn"]
    moment = (datetime.now(UTC) - age).timestamp()
    for path in strays:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"left behind")
        os.utime(path, (moment, moment))
    return strays


@given(ops=operation_sequences(max_size=14, kinds=GC_KINDS), data=st.data())
def test_gc_keeps_what_is_retained_and_removes_what_is_not(ops: list[Operation], data: st.DataObject) -> None:
    with scratch() as tmp:
        runner = reference_run(tmp)
        world = runner.worlds["reference"].dir
        for op in ops:
            before = file_digests(world) if isinstance(op, Cleanup) else {}
            runner.run(op)  # rows of every version of a cleaned root, latest of every other root, vs the model
            if isinstance(op, Cleanup):
                check_cleanup_laws(runner, op, before)
        runner.check_all()  # every version of every root the model retains reads back

        # Always one cleanup that has something to keep: a branch forked from an old version of the cleaned
        # root, which then moves on, and a tagged old version other than the fork point.
        model = runner.model
        root = model.roots[data.draw(st.sampled_from(sorted(model.roots)), label="cleaned root")]
        fork = Branch(root.family, model.fresh("f"), root.branch,
                      data.draw(st.sampled_from(sorted(root.versions)), label="fork"))
        runner.run(fork)
        if data.draw(st.booleans(), label="branch writes"):
            runner.run(Append(root_dir(root.family, fork.name), model.next_row, 2, max_rows_per_file=1))
        runner.run(Append(root.dir, model.next_row, 2, max_rows_per_file=1))
        others = sorted(v for v in root.versions if v != fork.version)
        runner.run(Tag(root.family, model.fresh("t"), root.branch, data.draw(st.sampled_from(others), label="tag")))
        # ... and drops a whole fragment, preferably one the fork point holds: its data file is then referenced
        # by the branch (and the kept fork-point manifest), and by no working version of this root (GC-001).
        at_fork = {f.id for f in root.versions[fork.version].fragments}
        live = [f for f in root.head.fragments if f.live()]
        dropped = data.draw(st.sampled_from([f for f in live if f.id in at_fork] or live), label="dropped fragment")
        runner.run(Delete(root.dir, tuple(dropped.live())))
        acted = Cleanup(root.dir, older_than_zero=True, error_if_tagged=False)
        before = file_digests(world)
        runner.run(acted)
        check_cleanup_laws(runner, acted, before)
        runner.check_all()

        # The retention window: leftovers younger than the unverified threshold (7 days) may belong to a
        # commit in progress and stay; past it, nothing unreachable stays under the cleaned root.
        root = data.draw(st.sampled_from(sorted(runner.model.roots)), label="root")
        young = plant_strays(world, root, "1", timedelta(minutes=1))
        old = plant_strays(world, root, "2", timedelta(days=10))
        final = Cleanup(root, older_than_zero=True)
        before = file_digests(world)
        runner.run(final)
        check_cleanup_laws(runner, final, before)
        assert all(p.exists() for p in young), "GC-003: a young unreferenced file (maybe in progress) was deleted"
        keep = (reachable(runner) | transactions_of(world, root) | {str(p) for p in young}
                | {str(world / root / VERSIONS_DIR / VERSION_HINT_NAME)})
        left = sorted(own_files(world, root) - keep)
        assert not left, f"past the retention window, unreachable files remain under {root}: {left}"
        assert not any(p.exists() for p in old)
        runner.check_all()


@pytest.mark.parametrize("error_if_tagged", [True, False])
def test_a_tagged_old_version_refuses_or_survives(tmp_path: Path, error_if_tagged: bool) -> None:
    """GC-001 on the smallest history: v1 tagged, v2 latest; cleanup either refuses (nothing deleted) or keeps
    v1 with every file it references."""
    from conformance.operations import Create

    runner = reference_run(tmp_path)
    for op in (Create("ds", 0, 4, max_rows_per_file=2), Tag("ds", "t1", None, 1), Append("ds", 4, 2)):
        runner.run(op)
    outcome = runner.run(Cleanup("ds", error_if_tagged=error_if_tagged))
    assert outcome.kind == ("refused" if error_if_tagged else "ok")
    assert runner.model.roots["ds"].versions.keys() == {1, 2}
    runner.check_all()
