"""Workloads: the operations each writer performs, fixed by the seed before anything runs.

A plan is a list of ``Planned`` per writer (each one or two operations of the language,
``conformance.operations``, applied as one unit of the history), drawn from
``random.Random(f"{seed}/plan/{writer}")``; nothing in it depends on how the run goes, so the same seed always
gives every writer the same operations. Where an operation refers to an earlier one (a delete names the rows
of the writer's own earlier appends; a two-phase commit names its staging operation), it names it by plan
position, whatever that earlier operation's outcome turns out to be.

The data model is exact and tiny: an operation writes consecutive ids (``rows`` of the operation language:
``id`` and two columns derived from it), and every id is unique in the whole run (``row_id``), so the rows
an operation wrote identify it.

What the plan draws (``KINDS``, the names ``weights`` gives frequencies to), as operations:

* ``append``: an ``Append`` of 1-3 rows, one commit.
* ``delete``: ``id IN (...)`` over rows of 1-2 of the writer's earlier appends (a no-op if none is there).
* ``overwrite``: 2-4 new rows replace the dataset's rows (same schema).
* ``tag``: a ``Tag`` of the latest version, or a ``DeleteTag`` of one of the writer's earlier tags.
* ``clone``: a ``Tag`` of the latest version, then a ``ShallowClone`` from it into a new dataset.
* ``cleanup``: a ``Cleanup`` of old versions (``older_than=0``, ``retain_versions`` 1-3, tagged versions kept).
* ``stage``: a ``Stage``, the first phase of a distributed write: 1-3 rows written as data files, not committed.
* ``commit-staged``: a ``CommitStaged``, the second phase: commit an earlier stage's fragments as an Append,
  with the read version the staging saw (distributed writers commit what they wrote earlier, however old).

Three more plan kinds (``SHARED_KINDS``, weight 0 unless ``weights`` names them) make writers contend for one
object, or pin one; each comes out as the operations of an existing kind, so nothing downstream tells them
apart:

* ``shared-delete``: a ``delete`` of one of the setup's rows (``INITIAL_ROWS`` of them, in two fragments
  every writer sees), so concurrent deletes touch one fragment and only the conflict check keeps both.
* ``shared-tag``: a ``Tag`` of one of ``SHARED_TAGS`` names every writer uses on the latest version, or (one
  time in four) a ``DeleteTag`` of it; a create of a name that exists must be refused.
* ``pinned-stage``: a ``Stage`` after a ``Tag`` of the latest version (``pin-w{writer}-{i}``), as a distributed
  writer pins the version it reads so that cleanup keeps it until the commit: cleanups then remove the
  versions after the pinned one and keep it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import Any

from conformance import operations as lang

__all__ = ["DEFAULT_WEIGHTS", "IDS_PER_OP", "INITIAL_ROWS", "KINDS", "PLAN_KINDS", "SHARED_KINDS", "SHARED_TAGS",
           "Planned", "initial_ids", "plan", "row_id", "writer_kind", "written"]

KINDS = ("append", "delete", "overwrite", "tag", "clone", "cleanup", "stage", "commit-staged")
"""What a plan draws (``Planned.kind`` names what comes out in the operation language)."""

SHARED_KINDS = ("shared-delete", "shared-tag", "pinned-stage")
"""Plan kinds that come out as a ``delete`` or a ``tag`` on an object every writer contends for, or a ``stage``
that pins its version with a tag."""

PLAN_KINDS = tuple(k for k in KINDS if k != "commit-staged") + SHARED_KINDS
"""What ``weights`` may name (``commit-staged`` follows its ``stage`` by itself)."""

SHARED_TAGS = 2
"""How many tag names (``shared-0``, ...) the ``shared-tag`` operations of all writers share."""

DEFAULT_WEIGHTS: dict[str, float] = {
    "append": 40, "delete": 9, "overwrite": 3, "tag": 6, "clone": 2, "cleanup": 6, "stage": 10,
}
"""Relative frequencies; every ``stage`` is followed (1-4 operations later) by its ``commit-staged``."""

IDS_PER_OP = 100
"""Ids ``row_id(w, i, 0..99)`` belong to writer ``w``'s operation ``i``."""

INITIAL_ROWS = 16
"""Rows of version 1 of every dataset, written by the setup (writer -1) as two fragments: the rows
``shared-delete`` operations contend for."""

def row_id(writer: int, op: int, k: int) -> int:
    """The unique id of row ``k`` of ``writer``'s ``op``-th operation (the setup is writer -1)."""
    return ((writer + 1) * 1_000_000 + op) * IDS_PER_OP + k


def initial_ids(dataset: int) -> list[int]:
    """Ids of version 1 of dataset ``dataset`` (written by the setup, before the writers start)."""
    return [row_id(-1, dataset, k) for k in range(INITIAL_ROWS)]


def writer_kind(mode: str, writer: int) -> str:
    """The implementation ``writer`` runs under ``mode``: ``mixed`` alternates ``reference`` (even writers) and
    ``pylance``; any other mode names one implementation for every writer."""
    if mode == "mixed":
        return "reference" if writer % 2 == 0 else "pylance"
    return mode


@dataclass(frozen=True)
class Planned:
    """One planned unit of one writer's history: ``steps``, the operations it applies in order (a clone: a
    ``Tag``, then a ``ShallowClone`` from it; a pinned stage: a ``Tag``, then the ``Stage``); ``index``: its
    position in the writer's plan (a ``Stage`` is kept under it, ``CommitStaged.key`` names it)."""

    writer: int
    index: int
    steps: tuple[lang.Operation, ...]

    @property
    def last(self) -> lang.Operation:
        """The operation that decides what the unit does (the ``ShallowClone`` of a clone)."""
        return self.steps[-1]

    @property
    def kind(self) -> str:
        """The wire name of ``last``: a label for tables and timelines."""
        return self.last.wire

    @property
    def dataset(self) -> str:
        """The dataset it acts on (a clone: its source)."""
        return self.last.root

    @property
    def commits_to(self) -> str | None:
        """The dataset it commits a version of (a clone: its new dataset), or None when it commits none."""
        if isinstance(self.last, lang.ShallowClone):
            return self.last.target
        committing = isinstance(self.last, lang.Append | lang.Delete | lang.Overwrite | lang.CommitStaged)
        return self.last.root if committing else None

    def to_json(self) -> dict[str, Any]:
        return {"writer": self.writer, "index": self.index, "steps": [lang.operation_to_dict(op) for op in self.steps]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Planned:
        return cls(int(data["writer"]), int(data["index"]), tuple(lang.operation_from_dict(s) for s in data["steps"]))

    def describe(self) -> str:
        """A short human description for history excerpts: each step's wire name, dataset and the arguments
        that differ from their defaults."""
        return "; ".join(_describe(op) for op in self.steps)


def _describe(op: lang.Operation) -> str:
    shown = {f.name: getattr(op, f.name) for f in fields(op) if f.name not in ("root", "family")
             and getattr(op, f.name) not in (f.default, None, ())}
    return " ".join([op.wire, op.root, *(f"{k}={v[:4] if isinstance(v, tuple) else v}" for k, v in shown.items())])


def plan(seed: int, writers: int, ops: int, datasets: int = 2,
         weights: dict[str, float] | None = None) -> list[list[Planned]]:
    """``ops`` operations spread over ``writers`` (the first ``ops % writers`` writers get one more), each
    writer's list drawn from its own seeded generator. Datasets are named ``ds0``..``ds{datasets-1}``."""
    if writers < 1 or ops < 0 or datasets < 1:
        raise ValueError("need at least one writer and one dataset, and a non-negative operation count")
    table = dict(DEFAULT_WEIGHTS if weights is None else weights)
    kinds = [k for k in table if table[k] > 0]
    if any(k not in PLAN_KINDS for k in kinds):
        raise ValueError(f"weights may name only {', '.join(PLAN_KINDS)}")
    weights_of = [table[k] for k in kinds]
    return [_plan_writer(seed, w, ops // writers + (1 if w < ops % writers else 0), datasets, kinds, weights_of)
            for w in range(writers)]


def _plan_writer(seed: int, writer: int, count: int, datasets: int, kinds: list[str],
                 weights: list[float]) -> list[Planned]:
    rng = random.Random(f"{seed}/plan/{writer}")
    ops: list[Planned] = []
    appended: dict[str, list[int]] = {}  # dataset -> plan positions of this writer's appends there
    tags: list[tuple[str, str]] = []  # (dataset, tag) created by this writer and not deleted
    pending: list[tuple[int, int]] = []  # (due position, stage position)

    def add(*steps: lang.Operation) -> None:
        ops.append(Planned(writer, len(ops), steps))

    while len(ops) < count:
        i = len(ops)
        due = [p for p in pending if p[0] <= i]
        if due or (pending and count - i <= len(pending)):
            chosen = due[0] if due else pending[0]
            pending.remove(chosen)
            stage = ops[chosen[1]]
            add(lang.CommitStaged(stage.dataset, stage.index))
            appended.setdefault(stage.dataset, []).append(stage.index)
            continue
        kind = rng.choices(kinds, weights)[0]
        dataset = f"ds{rng.randrange(datasets)}"
        if kind in ("stage", "pinned-stage") and count - i < 2:
            kind = "append"
        if kind == "delete" and not appended.get(dataset):
            kind = "append"
        if kind in ("append", "stage", "pinned-stage"):
            start, n = row_id(writer, i, 0), rng.randint(1, 3)  # consecutive ids from the first
            if kind == "append":
                add(lang.Append(dataset, start, n, max_rows_per_file=None))
                appended.setdefault(dataset, []).append(i)
            else:  # a pinned stage first tags the version it reads
                pin = (lang.Tag(dataset, f"pin-w{writer}-{i}", None, None),) if kind == "pinned-stage" else ()
                add(*pin, lang.Stage(dataset, start, n, i))
                pending.append((i + rng.randint(1, 4), i))
        elif kind == "delete":
            victims = rng.sample(appended[dataset], min(len(appended[dataset]), rng.randint(1, 2)))
            add(lang.Delete(dataset, tuple(sorted(x for v in victims for x in written(ops[v])))))
        elif kind == "overwrite":
            add(lang.Overwrite(dataset, row_id(writer, i, 0), rng.randint(2, 4), max_rows_per_file=None))
        elif kind == "tag":
            mine = [t for t in tags if t[0] == dataset]
            if mine and rng.random() < 0.4:
                victim = rng.choice(mine)
                tags.remove(victim)
                add(lang.DeleteTag(dataset, victim[1]))
            else:
                tags.append((dataset, f"w{writer}-t{i}"))
                add(lang.Tag(dataset, f"w{writer}-t{i}", None, None))
        elif kind == "clone":
            add(lang.Tag(dataset, f"clone-w{writer}-{i}", None, None),
                lang.ShallowClone(dataset, f"clone-w{writer}-{i}", f"clone-w{writer}-{i}"))
        elif kind == "cleanup":
            add(lang.Cleanup(dataset, retain_versions=rng.randint(1, 3)))
        elif kind == "shared-delete":
            add(lang.Delete(dataset, (rng.choice(initial_ids(int(dataset[2:]))),)))
        elif kind == "shared-tag":
            name = f"shared-{rng.randrange(SHARED_TAGS)}"
            add(lang.DeleteTag(dataset, name) if rng.random() < 0.25 else lang.Tag(dataset, name, None, None))
    return ops


def written(planned: Planned) -> tuple[int, ...]:
    """The row ids an append, an overwrite or a stage of the plan writes (none for anything else)."""
    op = planned.last
    if isinstance(op, lang.Append | lang.Overwrite | lang.Stage):
        return tuple(range(op.start, op.start + op.count))
    return ()
