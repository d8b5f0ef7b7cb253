"""The simulator's plans with the contended kinds: ``shared-delete`` comes out as a ``Delete`` of one of the
setup's rows, ``shared-tag`` as a ``Tag`` or ``DeleteTag`` of one of the shared names, ``pinned-stage`` as a
``Tag`` then a ``Stage``; none is drawn unless the weights name it (the default plans are what they were). A
planned unit reads back from its JSON as it was."""

from __future__ import annotations

from collections import Counter

import pytest

from conformance.operations import CommitStaged, Delete, DeleteTag, ShallowClone, Stage, Tag
from simulator.workload import DEFAULT_WEIGHTS, SHARED_TAGS, Planned, initial_ids, plan, row_id


def test_shared_kinds_target_what_every_writer_shares() -> None:
    plans = plan(3, 6, 240, datasets=1, weights={"shared-delete": 1, "shared-tag": 1})
    units = [unit for units in plans for unit in units]
    assert {type(unit.last) for unit in units} == {Delete, Tag, DeleteTag}
    setup_rows = set(initial_ids(0))
    deletes = [unit for unit in units if isinstance(unit.last, Delete)]
    assert all(len(d.last.ids) == 1 and d.last.ids[0] in setup_rows for d in deletes if isinstance(d.last, Delete))
    assert len({d.writer for d in deletes}) == 6 and len({d.steps for d in deletes}) > 1
    tags = [unit.last for unit in units if isinstance(unit.last, Tag | DeleteTag)]
    assert {t.name for t in tags} == {f"shared-{k}" for k in range(SHARED_TAGS)}
    made = Counter(type(t) for t in tags)
    assert made[Tag] > made[DeleteTag] > 0  # mostly creates, some deletes, of names other writers create too


def test_a_pinned_stage_tags_the_version_it_reads_first() -> None:
    units = [unit for units in plan(4, 2, 40, datasets=1, weights={"pinned-stage": 1}) for unit in units]
    stages = [unit for unit in units if isinstance(unit.last, Stage)]
    assert stages and all(unit.steps[0] == Tag("ds0", f"pin-w{unit.writer}-{unit.index}", None, None)
                          and len(unit.steps) == 2 for unit in stages)
    assert all(unit.last == Stage("ds0", row_id(unit.writer, unit.index, 0), unit.last.count, unit.index)
               for unit in stages if isinstance(unit.last, Stage))
    commits = [(unit.writer, unit.last.key) for unit in units if isinstance(unit.last, CommitStaged)]
    assert sorted(commits) == sorted((unit.writer, unit.index) for unit in stages)
    assert all(unit.commits_to == "ds0" for unit in units if isinstance(unit.last, CommitStaged))
    assert all(unit.commits_to is None for unit in stages)


def test_a_clone_commits_to_its_new_dataset_and_units_read_back_from_json() -> None:
    units = [unit for units in plan(2, 2, 80, weights={"clone": 1, "append": 1}) for unit in units]
    clones = [unit for unit in units if isinstance(unit.last, ShallowClone)]
    assert clones and all(unit.commits_to == unit.last.target != unit.dataset for unit in clones
                          if isinstance(unit.last, ShallowClone))
    assert all(Planned.from_json(unit.to_json()) == unit for unit in units)


def test_shared_kinds_are_drawn_only_when_weighted() -> None:
    assert plan(5, 3, 60) == plan(5, 3, 60, weights=dict(DEFAULT_WEIGHTS, **{"shared-delete": 0, "shared-tag": 0}))
    names = {getattr(op, "name", "") for units in plan(5, 3, 300) for unit in units for op in unit.steps}
    assert not any(name.startswith(("shared-", "pin-")) for name in names)
    with pytest.raises(ValueError, match="shared-delete"):
        plan(5, 3, 60, weights={"commit-staged": 1})
