"""The checker: from the history, the wire log and the final storage, prove that nothing was lost.

Three views of one run go in, none trusted alone:

* the **history** (``History``): what each writer asked for and was told (ok, failed, unknown, and the
  version a commit was told);
* the **wire log** (``proxy.WireWrite``): every manifest PUT the endpoint accepted or refused, and every
  deletion, with the writer and the arrival time. A writer sends requests only while an operation is in
  flight, so the arrival time attributes each request to exactly one operation;
* the **final storage** (``FinalState``): every retained version of every dataset as read back from the
  endpoint (the MD5 of its manifest, its rows, files it references that are gone).

From them: the *owner* of each version ``(dataset, v)`` is the operation that wrote the manifest now at
``v`` (the retained file, or for a version cleanup removed, the last accepted PUT of that name). The
model replays the committed operations (acknowledged ones at the version they were told, unknown ones at
the version they own) in version order over sets of unique row ids; each retained version's rows must
equal the model's. ``ANOMALY_CLASSES`` lists what is reported; each anomaly carries the smallest excerpt
of the history that shows it (the operations involved, invocation and completion).
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lancespec.reference.layout import parse_manifest_name

from .history import COMMITTING_KINDS, History, OpRecord
from .proxy import WireWrite
from .workload import IDS_PER_OP, initial_ids

__all__ = [
    "ANOMALY_CLASSES",
    "INVARIANTS",
    "Anomaly",
    "CheckResult",
    "FinalState",
    "VersionState",
    "check",
    "op_of_row",
]

INVARIANTS: dict[str, str] = {
    "acknowledged-commits-kept": "no acknowledged commit is lost",
    "versions-unique": "no version number is used twice",
    "versions-contiguous": "versions have no gaps",
    "versions-readable": "every retained version reads end to end",
    "rows-exact": "rows are neither lost nor duplicated against the model",
    "gc-safe": "garbage collection never deleted a file reachable from a retained version",
    "outcomes-consistent": "each unknown outcome resolves to committed or not, never both; failures commit nothing",
}

ANOMALY_CLASSES: dict[str, str] = {
    "lost-commit": "acknowledged-commits-kept",
    "vanished-version": "acknowledged-commits-kept",
    "duplicate-version": "versions-unique",
    "version-reused": "versions-unique",
    "version-gap": "versions-contiguous",
    "unreadable-version": "versions-readable",
    "lost-rows": "rows-exact",
    "duplicate-rows": "rows-exact",
    "phantom-rows": "rows-exact",
    "duplicate-commit": "rows-exact",
    "gc-deleted-reachable": "gc-safe",
    "unknown-both-ways": "outcomes-consistent",
    "failed-but-committed": "outcomes-consistent",
    "unattributed-version": "outcomes-consistent",
}
"""Each anomaly class and the invariant it breaks.

* ``lost-commit``: an operation was told it committed version v, and the manifest at v is not its own.
* ``vanished-version``: a version the endpoint accepted is gone and nothing deleted it.
* ``duplicate-version``: two different manifests were accepted for one version, or two operations were
  told the same version.
* ``version-reused``: a version's manifest was deleted (by cleanup) and a later commit took the freed name:
  the endpoint accepted it, but no later version descends from it.
* ``version-gap``: a dataset's versions skip a number.
* ``unreadable-version``: a retained version cannot be read in full (a file is missing, a decode fails).
* ``lost-rows`` / ``phantom-rows`` / ``duplicate-rows``: a retained version's rows differ from the model.
* ``duplicate-commit``: one operation's transaction became two versions.
* ``gc-deleted-reachable``: a file a retained version references was deleted (by the named operation).
* ``unknown-both-ways``: an unknown outcome is committed by one piece of evidence and not by another.
* ``failed-but-committed``: an operation was told it failed, yet it owns a version.
* ``unattributed-version``: a version no operation in flight wrote.
"""

SETUP = (-1, -1)
"""The owner key of version 1 of the initial datasets (written by the setup, not through the proxy)."""


def op_of_row(row: int) -> tuple[int, int]:
    """``(writer, op index)`` that wrote row id ``row`` (``workload.row_id`` inverted; setup is writer -1)."""
    group = row // IDS_PER_OP
    return group // 1_000_000 - 1, group % 1_000_000


@dataclass(frozen=True)
class VersionState:
    """One retained version as read back. ``rows``: the ids of its live rows (None when unreadable);
    ``missing``: bucket keys of files it references that do not exist; ``read_version``: its transaction's."""

    md5: str
    rows: tuple[int, ...] | None = None
    error: str | None = None
    missing: tuple[str, ...] = ()
    read_version: int | None = None


@dataclass
class FinalState:
    """The final storage: per dataset, per retained version, what was read. ``initial``: the datasets the
    setup created with version 1 (their names are ``ds{i}``); ``read_versions``: a transaction's
    read_version by manifest MD5, for manifests cleanup removed (decoded from the wire log's bodies)."""

    versions: dict[str, dict[int, VersionState]] = field(default_factory=dict)
    initial: tuple[str, ...] = ()
    read_versions: dict[str, int] = field(default_factory=dict)


@dataclass
class Anomaly:
    """One violated invariant, with the history events that show it."""

    kind: str
    message: str
    dataset: str | None = None
    version: int | None = None
    events: list[int] = field(default_factory=list)
    cause: str = field(default="", compare=False, repr=False)
    """For row anomalies: the operation whose rows differ (one anomaly per class, dataset and cause)."""

    @property
    def invariant(self) -> str:
        return ANOMALY_CLASSES[self.kind]

    def excerpt(self, history: History) -> list[str]:
        wanted = set(self.events)
        return [e.line(history.t0) for e in history.events if e.index in wanted]

    def to_json(self, history: History | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "invariant": self.invariant, "message": self.message,
                               "dataset": self.dataset, "version": self.version, "events": sorted(self.events)}
        if history is not None:
            out["excerpt"] = self.excerpt(history)
        return out


@dataclass
class CheckResult:
    anomalies: list[Anomaly]
    resolutions: dict[tuple[int, int], bool]
    """Every unknown committing operation: True when it committed."""
    owners: dict[tuple[str, int], tuple[int, int] | None]
    commits: int
    """Versions committed by the writers (owned versions, the setup's excluded)."""

    @property
    def ok(self) -> bool:
        return not self.anomalies

    def by_invariant(self) -> dict[str, int]:
        counts = Counter(a.invariant for a in self.anomalies)
        return {name: counts.get(name, 0) for name in INVARIANTS}


def _split_key(key: str) -> tuple[str, int] | None:
    """``(dataset, version)`` of a manifest key ``{dataset}/_versions/{name}``."""
    dataset, sep, name = key.partition("/_versions/")
    if not sep or "/" in name:
        return None
    parsed = parse_manifest_name(name)
    if parsed is None or parsed.detached:
        return None
    return dataset, parsed.version


class _Attributor:
    """Maps a request (client, arrival time) to the operation of that writer in flight at that time."""

    def __init__(self, records: Sequence[OpRecord]) -> None:
        self._by_writer: dict[int, list[OpRecord]] = defaultdict(list)
        for record in records:
            self._by_writer[record.op.writer].append(record)
        self._starts: dict[int, list[float]] = {}
        for writer, ops in self._by_writer.items():
            ops.sort(key=lambda r: r.start)
            self._starts[writer] = [r.start for r in ops]

    def __call__(self, client: int, t: float) -> OpRecord | None:
        # A writer runs one operation at a time: the last one started at or before t is the only candidate.
        i = bisect.bisect_right(self._starts.get(client, []), t) - 1
        if i < 0:
            return None
        record = self._by_writer[client][i]
        return record if record.start <= t <= record.end else None


def _target(record: OpRecord) -> str:
    """The dataset an operation commits to (a clone commits into its new dataset)."""
    return record.op.name if record.op.kind == "clone" else record.op.dataset


def check(history: History, wire: Iterable[WireWrite], final: FinalState) -> CheckResult:
    """Every anomaly of the run (see ``ANOMALY_CLASSES``)."""
    records = history.records()
    by_key = {r.key: r for r in records}
    attribute = _Attributor(records)
    anomalies: list[Anomaly] = []

    def events_of(*keys: tuple[int, int] | None) -> list[int]:
        out: list[int] = []
        for key in keys:
            if key is not None and key in by_key:
                out.extend(e.index for e in by_key[key].events())
        return out

    # 1. The wire: accepted manifests per version, who wrote them, and deletions.
    accepted: dict[tuple[str, int], list[tuple[WireWrite, tuple[int, int] | None]]] = defaultdict(list)
    deleted_by: dict[str, tuple[int, int] | None] = {}
    deleted_at: dict[str, list[tuple[float, tuple[int, int] | None]]] = defaultdict(list)
    for write in sorted(wire, key=lambda w: w.at):  # the endpoint's order; the arrival time names the sender
        sender = attribute(write.client, write.t)
        sender_key = sender.key if sender is not None else None
        if write.kind == "manifest-put" and write.applied:
            where = _split_key(write.key)
            if where is not None:
                accepted[where].append((write, sender_key))
        elif write.kind == "delete" and write.applied:
            deleted_by[write.key] = sender_key
            deleted_at[write.key].append((write.at, sender_key))

    # 2. Owners: the operation that wrote the manifest that is final at each version.
    reused: set[tuple[tuple[str, int], tuple[int, int] | None]] = set()
    retained = {(d, v): state for d, versions in final.versions.items() for v, state in versions.items()}
    all_versions = set(accepted) | set(retained)
    owners: dict[tuple[str, int], tuple[int, int] | None] = {}
    for where in sorted(all_versions):
        writes = accepted.get(where, [])
        state = retained.get(where)
        if state is not None:
            matching = [k for w, k in writes if w.md5 == state.md5]
            if matching:
                owners[where] = matching[-1]
            elif where[0] in final.initial and where[1] == 1:
                owners[where] = SETUP
            else:
                owners[where] = None
        else:
            owners[where] = writes[-1][1] if writes else None
        distinct = {w.md5 for w, _ in writes}
        if len(distinct) > 1:
            first_write, first_key = writes[0]
            for later, later_key in writes[1:]:
                if later.md5 == first_write.md5:
                    continue
                between = [(t, k) for t, k in deleted_at.get(later.key, ()) if first_write.at < t < later.at]
                if between:
                    reused.add((where, later_key))
                    anomalies.append(Anomaly(
                        "version-reused",
                        f"version {where[1]} of {where[0]} was committed by {_name(first_key)}, its manifest deleted "
                        f"by {_name(between[0][1])}, then the freed name was taken by {_name(later_key)}: a commit "
                        "that later versions do not descend from", where[0], where[1],
                        events_of(first_key, between[0][1], later_key)))
            if not any(w for w, k in writes[1:] if (where, k) in reused):
                writers = [k for _, k in writes]
                anomalies.append(Anomaly(
                    "duplicate-version",
                    f"{len(distinct)} different manifests were accepted for version {where[1]} of {where[0]} "
                    f"(written by operations {', '.join(_name(k) for k in writers)}); the last one wins",
                    where[0], where[1], events_of(*writers)))
    owned: dict[tuple[int, int], list[tuple[str, int]]] = defaultdict(list)
    for where, key in owners.items():
        if key is not None and key != SETUP:
            owned[key].append(where)

    # 3. Unattributed versions.
    for where, key in sorted(owners.items()):
        if key is None:
            anomalies.append(Anomaly(
                "unattributed-version",
                f"version {where[1]} of {where[0]} was written by no operation in flight", where[0], where[1]))

    # 4. Acknowledged commits, failures, duplicates, unknowns.
    told: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    resolutions: dict[tuple[int, int], bool] = {}
    for record in records:
        if record.op.kind not in COMMITTING_KINDS:
            continue
        mine = owned.get(record.key, [])
        if len(mine) > 1:
            anomalies.append(Anomaly(
                "duplicate-commit",
                f"{_name(record.key)} ({record.op.kind}) became {len(mine)} versions: "
                f"{', '.join(f'{d} v{v}' for d, v in sorted(mine))}",
                mine[0][0], mine[0][1], events_of(record.key)))
        if record.outcome == "ok" and "version" in record.value:
            where = (_target(record), int(record.value["version"]))
            told[where].append(record.key)
            owner = owners.get(where)
            first = accepted.get(where, [(None, None)])[0][1]
            if (where, record.key) in reused:
                anomalies.append(Anomaly(
                    "lost-commit", f"{_name(record.key)} ({record.op.kind}) was told it committed version {where[1]} "
                    f"of {where[0]}, but its manifest took a version number cleanup had freed; no later version "
                    "descends from it", where[0], where[1], events_of(record.key)))
            elif owner != record.key and first == record.key and any(
                    k for w, _ in accepted[where] for k in [w.key] if k in deleted_by):
                pass  # its manifest was the version's first, removed later by a cleanup: kept, then collected
            elif owner != record.key:
                if owner is None and where not in all_versions:
                    why = "no manifest was ever accepted for that version"
                else:
                    why = f"the manifest there was written by {_name(owner)}"
                anomalies.append(Anomaly(
                    "lost-commit", f"{_name(record.key)} ({record.op.kind}) was told it committed version "
                    f"{where[1]} of {where[0]}, but {why}", where[0], where[1], events_of(record.key, owner)))
        elif record.outcome == "failed" and mine:
            anomalies.append(Anomaly(
                "failed-but-committed", f"{_name(record.key)} ({record.op.kind}) was told it failed, yet it wrote "
                f"{', '.join(f'{d} v{v}' for d, v in sorted(mine))}", mine[0][0], mine[0][1],
                events_of(record.key)))
        elif record.outcome == "unknown":
            resolutions[record.key] = bool(mine)
    for where, keys in sorted(told.items()):
        if len(keys) > 1 and not any((where, k) in reused for k in keys):
            anomalies.append(Anomaly(
                "duplicate-version", f"{len(keys)} operations were told they committed version {where[1]} of "
                f"{where[0]}: {', '.join(_name(k) for k in keys)}", where[0], where[1], events_of(*keys)))

    # 5. Gaps and vanished versions.
    by_dataset: dict[str, set[int]] = defaultdict(set)
    for d, v in all_versions | set(told):
        by_dataset[d].add(v)
    for dataset, numbers in sorted(by_dataset.items()):
        gaps = sorted(set(range(min(numbers), max(numbers) + 1)) - numbers)
        if gaps:
            shown = ", ".join(map(str, gaps[:10])) + (", ..." if len(gaps) > 10 else "")
            around = [owners.get((dataset, gaps[0] - 1)), owners.get((dataset, gaps[-1] + 1))]
            anomalies.append(Anomaly("version-gap", f"{dataset} has no version {shown}", dataset, gaps[0],
                                     events_of(*around)))
    for where in sorted(set(accepted) - set(retained)):
        manifest_keys = [w.key for w, _ in accepted[where]]
        if not any(k in deleted_by for k in manifest_keys):
            owner = owners.get(where)
            anomalies.append(Anomaly(
                "vanished-version", f"version {where[1]} of {where[0]} was accepted and is gone, deleted by nobody",
                where[0], where[1], events_of(owner)))

    # 6. Readability and GC.
    for (dataset, version), state in sorted(retained.items()):
        owner = owners.get((dataset, version))
        for missing_key in state.missing:
            if missing_key in deleted_by:
                deleter = deleted_by[missing_key]
                kind = by_key[deleter].op.kind if deleter in by_key else "an unknown client"
                anomalies.append(Anomaly(
                    "gc-deleted-reachable", f"{missing_key}, referenced by {dataset} v{version}, was deleted by "
                    f"{_name(deleter)} ({kind})", dataset, version, events_of(deleter, owner)))
        if state.rows is None or state.missing:
            what = state.error or f"{len(state.missing)} referenced file(s) missing: {', '.join(state.missing[:3])}"
            anomalies.append(Anomaly("unreadable-version", f"{dataset} v{version} cannot be read: {what}", dataset,
                                     version, events_of(owner)))

    # 7. Rows against the model.
    # The read version of each operation's own manifest (a delete only removes rows it could see).
    md5_read = dict(final.read_versions)
    for state in retained.values():
        if state.read_version is not None:
            md5_read[state.md5] = state.read_version
    version_read: dict[tuple[tuple[int, int] | None, str, int], int] = {}
    for where, writes in accepted.items():
        for write, key in writes:
            if write.md5 is not None and write.md5 in md5_read:
                version_read[(key, where[0], where[1])] = md5_read[write.md5]
    for where, state in retained.items():
        if state.read_version is not None and (owners.get(where), where[0], where[1]) not in version_read:
            version_read[(owners.get(where), where[0], where[1])] = state.read_version
    anomalies.extend(_check_rows(records, by_key, owners, told, final, resolutions, version_read, events_of))
    rank = {kind: i for i, kind in enumerate(ANOMALY_CLASSES)}
    anomalies.sort(key=lambda a: (rank[a.kind], a.dataset or "", a.version or 0))
    return CheckResult(anomalies, resolutions, owners, sum(1 for k in owners.values() if k not in (None, SETUP)))


def _name(key: tuple[int, int] | None) -> str:
    if key is None:
        return "no operation"
    if key == SETUP:
        return "the setup"
    return f"w{key[0]}#{key[1]}"


def _check_rows(records: Sequence[OpRecord], by_key: dict[tuple[int, int], OpRecord],
                owners: dict[tuple[str, int], tuple[int, int] | None],
                told: dict[tuple[str, int], list[tuple[int, int]]], final: FinalState,
                resolutions: dict[tuple[int, int], bool],
                version_read: dict[tuple[tuple[int, int] | None, str, int], int],
                events_of: Any) -> list[Anomaly]:
    anomalies: list[Anomaly] = []
    # The committed operations per dataset, at their versions: acknowledged ones where they were told,
    # every other owner where it owns.
    applied: dict[str, list[tuple[int, float, OpRecord]]] = defaultdict(list)
    seen: set[tuple[str, int, tuple[int, int]]] = set()
    for (dataset, version), keys in told.items():
        for key in keys:
            seen.add((dataset, version, key))
            applied[dataset].append((version, by_key[key].end, by_key[key]))
    for (dataset, version), owner in owners.items():
        if owner is None or owner == SETUP or owner not in by_key or (dataset, version, owner) in seen:
            continue
        record = by_key[owner]
        if record.outcome == "ok" and "version" in record.value:
            continue  # acknowledged elsewhere: counted where it was told (a second copy is a duplicate-commit)
        applied[dataset].append((version, record.end, record))
    models: dict[tuple[str, int], frozenset[int]] = {}
    sources: dict[str, tuple[str, int]] = {}
    for record in records:
        if record.op.kind == "clone" and (record.outcome == "ok" or resolutions.get(record.key)):
            source_version = record.value.get("source_version")
            if source_version is None:  # unknown outcome: the clone's first version is the source version
                owned = [v for (d, v), k in owners.items() if k == record.key and d == record.op.name]
                source_version = min(owned) if owned else None
            if source_version is not None:
                sources[record.op.name] = (record.op.dataset, int(source_version))

    datasets = sorted(set(final.versions) | set(applied) | set(final.initial))
    order = [d for d in datasets if d not in sources] + [d for d in datasets if d in sources]
    for dataset in order:
        retained = final.versions.get(dataset, {})
        state: dict[int, int] = {}  # row id -> version that added it
        if dataset in sources:
            source = models.get(sources[dataset])
            if source is None:
                continue  # the source version was not modelled (not retained there): nothing to compare
            start = sources[dataset][1]
            state = dict.fromkeys(source, start)
        elif dataset in final.initial:
            start = 1
            index = int(dataset[2:]) if dataset[2:].isdigit() else 0
            state = dict.fromkeys(initial_ids(index), 1)
        else:
            continue
        steps = sorted(applied.get(dataset, []), key=lambda s: (s[0], s[1]))
        wanted = sorted(set(retained) | {v for d, v in sources.values() if d == dataset})
        i = 0
        for version in wanted:
            while i < len(steps) and steps[i][0] <= version:
                step_version, _, record = steps[i]
                _apply(state, record, step_version, version_read.get((record.key, dataset, step_version)))
                i += 1
            models[(dataset, version)] = frozenset(state)
            observed = retained.get(version)
            if observed is None or observed.rows is None:
                continue
            anomalies.extend(_compare(dataset, version, frozenset(state), observed.rows, owners, events_of,
                                      resolutions))
    return _first_per_cause(anomalies)


def _apply(state: dict[int, int], record: OpRecord, version: int, read_version: int | None) -> None:
    """One committed operation on the model: row id -> the version that added it. A delete removes only
    rows its transaction could see (added at or before its read version; Lance deletes are not
    serializable against concurrent appends, they are rebased)."""
    kind = record.op.kind
    if kind in ("append", "commit-staged"):
        for row in record.op.ids:
            state.setdefault(row, version)
    elif kind == "overwrite":
        state.clear()
        state.update(dict.fromkeys(record.op.ids, version))
    elif kind == "delete":
        limit = read_version if read_version is not None else version - 1
        for row in record.op.ids:
            if row in state and state[row] <= limit:
                del state[row]


def _compare(dataset: str, version: int, expected: frozenset[int], rows: Sequence[int],
             owners: dict[tuple[str, int], tuple[int, int] | None], events_of: Any,
             resolutions: dict[tuple[int, int], bool]) -> list[Anomaly]:
    out: list[Anomaly] = []
    counts = Counter(rows)
    owner = owners.get((dataset, version))
    lost: dict[tuple[int, int], list[int]] = defaultdict(list)
    phantom: dict[tuple[int, int], list[int]] = defaultdict(list)
    for row in expected - counts.keys():
        lost[op_of_row(row)].append(row)
    for row in counts.keys() - expected:
        phantom[op_of_row(row)].append(row)
    for writer_op, ids in sorted(lost.items()):
        kind = "unknown-both-ways" if resolutions.get(writer_op) is True else "lost-rows"
        out.append(Anomaly(kind, f"{dataset} v{version} lacks rows {sorted(ids)[:6]} of {_name(writer_op)} that "
                           "the model holds" + (" (an unknown outcome resolved as committed)"
                                                if kind == "unknown-both-ways" else ""),
                           dataset, version, events_of(writer_op, owner), _name(writer_op)))
    for writer_op, ids in sorted(phantom.items()):
        kind = "unknown-both-ways" if resolutions.get(writer_op) is False else "phantom-rows"
        out.append(Anomaly(kind, f"{dataset} v{version} holds rows {sorted(ids)[:6]} of {_name(writer_op)} that "
                           "the model does not" + (" (an unknown outcome resolved as not committed)"
                                                   if kind == "unknown-both-ways" else ""),
                           dataset, version, events_of(writer_op, owner), _name(writer_op)))
    doubled: dict[tuple[int, int], list[int]] = defaultdict(list)
    for row, n in counts.items():
        if n > 1:
            doubled[op_of_row(row)].append(row)
    for writer_op, ids in sorted(doubled.items()):
        out.append(Anomaly("duplicate-rows", f"{dataset} v{version} holds rows {sorted(ids)[:6]} of "
                           f"{_name(writer_op)} more than once", dataset, version, events_of(writer_op, owner),
                           _name(writer_op)))
    return out


def _first_per_cause(anomalies: list[Anomaly]) -> list[Anomaly]:
    """Row anomalies repeat in every later version: keep the first version per (kind, dataset, cause)."""
    out: list[Anomaly] = []
    seen: set[tuple[str, str | None, str]] = set()
    for anomaly in anomalies:
        key = (anomaly.kind, anomaly.dataset, anomaly.cause)
        if key in seen:
            continue
        seen.add(key)
        out.append(anomaly)
    return out
