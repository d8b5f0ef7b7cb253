"""Workloads: the operations each writer performs, fixed by the seed before anything runs.

A plan is a list of ``Op`` per writer, drawn from ``random.Random(f"{seed}/plan/{writer}")``; nothing in
it depends on how the run goes, so the same seed always gives every writer the same operations. Where an
operation refers to an earlier one (a delete names the rows of the writer's own earlier appends; a
two-phase commit names its staging operation), it names it by plan position, whatever that earlier
operation's outcome turns out to be.

The data model is exact and tiny: an operation writes consecutive ids (``rows`` of the operation language:
``id`` and two columns derived from it), and every id is unique in the whole run (``row_id``), so the rows
an operation wrote identify it.

Operations (``KINDS``):

* ``append``: 1-3 rows, one commit.
* ``delete``: ``id IN (...)`` over rows of 1-2 of the writer's earlier appends (a no-op if none is there).
* ``overwrite``: 2-4 new rows replace the dataset's rows (same schema).
* ``tag``: create a tag on the latest version, or delete one of the writer's earlier tags.
* ``clone``: tag the latest version, then shallow-clone it (from the tag) into a new dataset.
* ``cleanup``: remove old versions (``older_than=0``, ``retain_versions`` 1-3, tagged versions kept).
* ``stage``: the first phase of a distributed write: 1-3 rows written as data files, not committed.
* ``commit-staged``: the second phase: commit an earlier ``stage``'s fragments as an Append, with the read
  version the staging saw (distributed writers commit what they wrote earlier, however old).

Three more plan kinds (``SHARED_KINDS``, weight 0 unless ``weights`` names them) make writers contend for one
object, or pin one; each comes out as an ``Op`` of an existing kind, so nothing downstream tells them apart:

* ``shared-delete``: a ``delete`` of one of the setup's rows (``INITIAL_ROWS`` of them, in two fragments
  every writer sees), so concurrent deletes touch one fragment and only the conflict check keeps both.
* ``shared-tag``: a ``tag`` of one of ``SHARED_TAGS`` names every writer uses: create it on the latest
  version, or (one time in four) delete it; a create of a name that exists must be refused.
* ``pinned-stage``: a ``stage`` that first tags the latest version (``pin-w{writer}-{i}``), as a distributed
  writer pins the version it reads so that cleanup keeps it until the commit: cleanups then remove the
  versions after the pinned one and keep it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_WEIGHTS",
    "IDS_PER_OP",
    "INITIAL_ROWS",
    "KINDS",
    "PLAN_KINDS",
    "SHARED_KINDS",
    "SHARED_TAGS",
    "Op",
    "initial_ids",
    "plan",
    "row_id",
    "writer_kind",
]

KINDS = ("append", "delete", "overwrite", "tag", "clone", "cleanup", "stage", "commit-staged")
"""The kinds of ``Op``: what a writer executes."""

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
class Op:
    """One planned operation of one writer. ``ids``: rows written (append, overwrite, stage) or targeted
    (delete); ``ref``: the plan position of the ``stage`` a ``commit-staged`` commits; ``name``: a tag
    (``tag``, ``clone``) or the clone's dataset; ``arg``: ``retain_versions`` (cleanup), 1 to delete the
    tag (``tag``)."""

    writer: int
    index: int
    kind: str
    dataset: str
    ids: tuple[int, ...] = ()
    ref: int | None = None
    name: str = ""
    arg: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"writer": self.writer, "index": self.index, "kind": self.kind, "dataset": self.dataset}
        if self.ids:
            out["ids"] = list(self.ids)
        if self.ref is not None:
            out["ref"] = self.ref
        if self.name:
            out["name"] = self.name
        if self.arg:
            out["arg"] = self.arg
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Op:
        return cls(int(data["writer"]), int(data["index"]), str(data["kind"]), str(data["dataset"]),
                   tuple(int(i) for i in data.get("ids", ())), data.get("ref"), str(data.get("name", "")),
                   int(data.get("arg", 0)))

    def describe(self) -> str:
        """A short human description for history excerpts."""
        bits = [self.kind, self.dataset]
        if self.ids:
            shown = ",".join(str(i) for i in self.ids[:4]) + (",..." if len(self.ids) > 4 else "")
            bits.append(f"ids=[{shown}]")
        if self.ref is not None:
            bits.append(f"stage=#{self.ref}")
        if self.name:
            bits.append(self.name)
        if self.kind == "cleanup":
            bits.append(f"retain={self.arg}")
        if self.kind == "tag" and self.arg:
            bits.append("delete")
        return " ".join(bits)


def plan(seed: int, writers: int, ops: int, datasets: int = 2,
         weights: dict[str, float] | None = None) -> list[list[Op]]:
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
                 weights: list[float]) -> list[Op]:
    rng = random.Random(f"{seed}/plan/{writer}")
    ops: list[Op] = []
    appended: dict[str, list[int]] = {}  # dataset -> plan positions of this writer's appends there
    tags: list[tuple[str, str]] = []  # (dataset, tag) created by this writer and not deleted
    pending: list[tuple[int, int]] = []  # (due position, stage position)
    while len(ops) < count:
        i = len(ops)
        due = [p for p in pending if p[0] <= i]
        if due or (pending and count - i <= len(pending)):
            chosen = due[0] if due else pending[0]
            pending.remove(chosen)
            stage = ops[chosen[1]]
            ops.append(Op(writer, i, "commit-staged", stage.dataset, stage.ids, ref=stage.index))
            appended.setdefault(stage.dataset, []).append(stage.index)
            continue
        kind = rng.choices(kinds, weights)[0]
        dataset = f"ds{rng.randrange(datasets)}"
        if kind in ("stage", "pinned-stage") and count - i < 2:
            kind = "append"
        if kind == "delete" and not appended.get(dataset):
            kind = "append"
        if kind in ("append", "stage", "pinned-stage"):
            ids = tuple(row_id(writer, i, k) for k in range(rng.randint(1, 3)))
            pin = f"pin-w{writer}-{i}" if kind == "pinned-stage" else ""
            ops.append(Op(writer, i, "stage" if pin else kind, dataset, ids, name=pin))
            if kind == "append":
                appended.setdefault(dataset, []).append(i)
            else:
                pending.append((i + rng.randint(1, 4), i))
        elif kind == "delete":
            victims = rng.sample(appended[dataset], min(len(appended[dataset]), rng.randint(1, 2)))
            ids = tuple(sorted(x for v in victims for x in ops[v].ids))
            ops.append(Op(writer, i, "delete", dataset, ids))
        elif kind == "overwrite":
            ids = tuple(row_id(writer, i, k) for k in range(rng.randint(2, 4)))
            ops.append(Op(writer, i, "overwrite", dataset, ids))
        elif kind == "tag":
            mine = [t for t in tags if t[0] == dataset]
            if mine and rng.random() < 0.4:
                victim = rng.choice(mine)
                tags.remove(victim)
                ops.append(Op(writer, i, "tag", dataset, name=victim[1], arg=1))
            else:
                name = f"w{writer}-t{i}"
                tags.append((dataset, name))
                ops.append(Op(writer, i, "tag", dataset, name=name))
        elif kind == "clone":
            ops.append(Op(writer, i, "clone", dataset, name=f"clone-w{writer}-{i}"))
        elif kind == "cleanup":
            ops.append(Op(writer, i, "cleanup", dataset, arg=rng.randint(1, 3)))
        elif kind == "shared-delete":
            ops.append(Op(writer, i, "delete", dataset, (rng.choice(initial_ids(int(dataset[2:]))),)))
        elif kind == "shared-tag":
            name = f"shared-{rng.randrange(SHARED_TAGS)}"
            ops.append(Op(writer, i, "tag", dataset, name=name, arg=1 if rng.random() < 0.25 else 0))
    return ops
