"""The simulator's plans with the contended kinds: ``shared-delete`` comes out as a delete of one of the setup's
rows, ``shared-tag`` as a tag operation on one of the shared names, and neither is drawn unless the weights
name it (the default plans are what they were)."""

from __future__ import annotations

from collections import Counter

import pytest

from lancespec.simulator.workload import DEFAULT_WEIGHTS, SHARED_TAGS, initial_ids, plan


def test_shared_kinds_target_what_every_writer_shares() -> None:
    plans = plan(3, 6, 240, datasets=1, weights={"shared-delete": 1, "shared-tag": 1})
    ops = [op for ops in plans for op in ops]
    assert {op.kind for op in ops} == {"delete", "tag"}
    setup_rows = set(initial_ids(0))
    deletes = [op for op in ops if op.kind == "delete"]
    assert all(len(op.ids) == 1 and op.ids[0] in setup_rows for op in deletes)
    assert len({op.writer for op in deletes}) == 6 and len({op.ids for op in deletes}) > 1
    tags = [op for op in ops if op.kind == "tag"]
    assert {op.name for op in tags} == {f"shared-{k}" for k in range(SHARED_TAGS)}
    creates = Counter(op.arg for op in tags)
    assert creates[0] > creates[1] > 0  # mostly creates, some deletes, of names other writers create too


def test_a_pinned_stage_tags_the_version_it_reads_first() -> None:
    from lancespec.conformance.operations import Stage, Tag
    from lancespec.simulator.writers import operations

    ops = [op for ops in plan(4, 2, 40, datasets=1, weights={"pinned-stage": 1}) for op in ops]
    stages = [op for op in ops if op.kind == "stage"]
    assert stages and all(op.name == f"pin-w{op.writer}-{op.index}" for op in stages)
    assert {op.ref for op in ops if op.kind == "commit-staged"} == {op.index for op in stages if op.writer == 0} | {
        op.index for op in stages if op.writer == 1}
    steps = operations(stages[0])
    assert [type(s) for s in steps] == [Tag, Stage] and steps[0] == Tag("ds0", stages[0].name, None, None)


def test_shared_kinds_are_drawn_only_when_weighted() -> None:
    assert plan(5, 3, 60) == plan(5, 3, 60, weights=dict(DEFAULT_WEIGHTS, **{"shared-delete": 0, "shared-tag": 0}))
    assert not any(op.name.startswith(("shared-", "pin-")) for ops in plan(5, 3, 300) for op in ops)
    with pytest.raises(ValueError, match="shared-delete"):
        plan(5, 3, 60, weights={"commit-staged": 1})
