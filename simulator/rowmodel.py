"""The row model: the rows each retained version must hold, from the attributed commits.

``replay`` applies the commits of each dataset (``Attribution.commits``: acknowledged operations at the
version they were told, other owners where they own) in version order over sets of unique row ids, from
the setup's rows (a clone: from its source version's model), and pairs each retained readable version with
the model's rows there (``Observation``). Every row id names the operation that wrote it (``op_of_row``),
so a difference names its cause.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from conformance.operations import Append, CommitStaged, Delete, Overwrite, ShallowClone

from .attribution import Attribution, Commit, FinalState, Where
from .history import OpKey
from .workload import IDS_PER_OP, initial_ids, written

__all__ = ["Observation", "op_of_row", "replay"]


def op_of_row(row: int) -> OpKey:
    """The operation that wrote row id ``row`` (``workload.row_id`` inverted; setup is writer -1)."""
    group = row // IDS_PER_OP
    return OpKey(group // 1_000_000 - 1, group % 1_000_000)


@dataclass(frozen=True)
class Observation:
    """A retained, readable version beside the rows the model holds there."""

    where: Where
    expected: frozenset[int]
    rows: tuple[int, ...]

    def lost(self) -> dict[OpKey, list[int]]:
        """Rows the model holds and the version lacks, by the operation that wrote them."""
        return _by_op(self.expected - set(self.rows))

    def extra(self) -> dict[OpKey, list[int]]:
        """Rows the version holds and the model does not."""
        return _by_op(set(self.rows) - self.expected)

    def doubled(self) -> dict[OpKey, list[int]]:
        """Rows the version holds more than once."""
        return _by_op(row for row, n in Counter(self.rows).items() if n > 1)


def _by_op(rows: Iterable[int]) -> dict[OpKey, list[int]]:
    out: dict[OpKey, list[int]] = defaultdict(list)
    for row in rows:
        out[op_of_row(row)].append(row)
    return dict(sorted(out.items()))


def replay(att: Attribution, final: FinalState) -> list[Observation]:
    """Every retained readable version beside the model's rows there (see the module docstring)."""
    steps: dict[str, list[Commit]] = defaultdict(list)
    for commit in att.commits:
        steps[commit.where.dataset].append(commit)
    sources = _clone_sources(att)
    datasets = sorted(set(final.versions) | set(steps) | set(final.initial))
    models: dict[Where, frozenset[int]] = {}
    out: list[Observation] = []
    for dataset in [d for d in datasets if d not in sources] + [d for d in datasets if d in sources]:
        retained = final.versions.get(dataset, {})
        if dataset in sources:
            source = models.get(sources[dataset])
            if source is None:
                continue  # the source version was not modelled (not retained there): nothing to compare
            state = dict.fromkeys(source, sources[dataset].version)
        elif dataset in final.initial:
            state = dict.fromkeys(initial_ids(int(dataset[2:]) if dataset[2:].isdigit() else 0), 1)
        else:
            continue
        pending = sorted(steps.get(dataset, []), key=lambda c: (c.where.version, c.record.end))
        i = 0
        for version in sorted(set(retained) | {w.version for w in sources.values() if w.dataset == dataset}):
            while i < len(pending) and pending[i].where.version <= version:
                _apply(state, pending[i], att)
                i += 1
            models[Where(dataset, version)] = frozenset(state)
            observed = retained.get(version)
            if observed is not None and observed.rows is not None:
                out.append(Observation(Where(dataset, version), frozenset(state), observed.rows))
    return out


def _clone_sources(att: Attribution) -> dict[str, Where]:
    """Each committed clone's source version (for an unknown outcome: the first version the clone owns)."""
    out: dict[str, Where] = {}
    for record in att.records.values():
        clone = record.op.last
        if isinstance(clone, ShallowClone) and (record.outcome == "ok" or att.resolutions.get(record.key)):
            source_version = record.value.get("source_version")
            if source_version is None:
                owned = [w.version for w in att.owned.get(record.key, []) if w.dataset == clone.target]
                source_version = min(owned, default=None)
            if source_version is not None:
                out[clone.target] = Where(clone.root, int(source_version))
    return out


def _apply(state: dict[int, int], commit: Commit, att: Attribution) -> None:
    """One committed operation on the model: row id -> the version that added it (a ``CommitStaged``: the rows
    of the ``Stage`` it commits). A delete removes only rows its transaction could see (added at or before its
    read version; Lance deletes are not serializable against concurrent appends, they are rebased)."""
    planned, version = commit.record.op, commit.where.version
    op = planned.last
    if isinstance(op, Append | CommitStaged):
        added = planned if isinstance(op, Append) else att.records[OpKey(planned.writer, op.key)].op
        for row in written(added):
            state.setdefault(row, version)
    elif isinstance(op, Overwrite):
        state.clear()
        state.update(dict.fromkeys(written(planned), version))
    elif isinstance(op, Delete):
        limit = commit.read_version if commit.read_version is not None else version - 1
        for row in op.ids:
            if row in state and state[row] <= limit:
                del state[row]
