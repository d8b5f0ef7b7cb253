"""The checker: from the history, the wire log and the final storage, prove that nothing was lost.

Two steps make the facts (``attribution``: who sent each write, who owns each version, which commits
landed where; ``rowmodel``: the rows each retained version must hold). Then one function per anomaly
class (``ANOMALY_CLASSES``) reads them and returns its anomalies, each with the smallest excerpt of the
history that shows it (the operations involved, invocation and completion), as data; ``check`` composes
them into the ``CheckResult`` the simulator reports.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from conformance.operations import DeleteTag, Tag

from .attribution import SETUP, Attribution, FinalState, Where, attribute
from .history import History, OpKey, OpRecord
from .proxy import WireWrite
from .rowmodel import Observation, replay

__all__ = [
    "ANOMALY_CLASSES", "INVARIANTS", "Anomaly", "CheckResult", "FinalState", "check",
    "duplicate_commits", "duplicate_rows", "duplicate_versions", "failed_but_committed", "format_breaches",
    "gc_deleted_reachable",
    "lost_commits", "lost_rows", "phantom_rows", "reused_versions", "tags_overwritten", "unattributed_versions",
    "unknown_both_ways", "unreadable_versions", "vanished_versions", "version_gaps",
]  # FinalState (defined in attribution): the type of check's last argument

INVARIANTS: dict[str, str] = {
    "acknowledged-commits-kept": "no acknowledged commit is lost",
    "versions-unique": "no version number is used twice",
    "versions-contiguous": "versions have no gaps",
    "versions-readable": "every retained version reads end to end",
    "rows-exact": "rows are neither lost nor duplicated against the model",
    "gc-safe": "garbage collection never deleted a file reachable from a retained version",
    "outcomes-consistent": "each unknown outcome resolves to committed or not, never both; failures commit nothing",
    "tags-exclusive": "a tag is created only where none exists: no two creates of a name without a delete between",
    "format-conformant": "every retained version certifies: no MUST finding that no known divergence explains",
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
    "tag-overwritten": "tags-exclusive",
    "format-breach": "format-conformant",
}
"""Each anomaly class and the invariant it breaks, in the order reports list them. One function below
reports each class and says when (``lost_commits`` for ``lost-commit``, and so on)."""


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
    resolutions: dict[OpKey, bool]
    """Every unknown committing operation: True when it committed."""
    owners: dict[Where, OpKey | None]
    commits: int
    """Versions committed by the writers (owned versions, the setup's excluded)."""

    @property
    def ok(self) -> bool:
        return not self.anomalies

    def by_invariant(self) -> dict[str, int]:
        counts = Counter(a.invariant for a in self.anomalies)
        return {name: counts.get(name, 0) for name in INVARIANTS}


# --- one function per anomaly class ---------------------------------------------------------------------


def lost_commits(att: Attribution) -> list[Anomaly]:
    """``lost-commit``: an operation was told it committed version v, and the manifest at v is not its own
    (or took a name cleanup had freed). A manifest that was v's first and that cleanup removed later was
    kept, then collected: no loss."""
    out: list[Anomaly] = []
    for key, where in att.told_at.items():
        version, owner = att.versions.get(where), att.owner(where)
        if version is not None and version.taken_by(key):
            why = "its manifest took a version number cleanup had freed; no later version descends from it"
            shown: list[OpKey | None] = [key]
        elif owner == key or (version is not None and version.puts and version.puts[0].by == key
                              and att.collected(version)):
            continue
        else:
            why = ("no manifest was ever accepted for that version" if version is None
                   else f"the manifest there was written by {_name(owner)}")
            shown = [key, owner]
        out.append(Anomaly("lost-commit", f"{key} ({att.records[key].op.kind}) was told it committed version "
                           f"{where.version} of {where.dataset}, but {why}", *where, att.events(*shown)))
    return out


def vanished_versions(att: Attribution) -> list[Anomaly]:
    """``vanished-version``: a version the endpoint accepted is gone and nothing deleted it."""
    return [Anomaly("vanished-version", f"version {w.version} of {w.dataset} was accepted and is gone, deleted "
                    "by nobody", *w, att.events(v.owner))
            for w, v in att.versions.items() if v.puts and v.state is None and not att.collected(v)]


def duplicate_versions(att: Attribution) -> list[Anomaly]:
    """``duplicate-version``: two different manifests were accepted for one version (and no cleanup freed
    the name between them), or two operations were told the same version."""
    out: list[Anomaly] = []
    for where, version in att.versions.items():
        distinct = {p.write.md5 for p in version.puts}
        if len(distinct) > 1 and not version.reuses:
            writers = [p.by for p in version.puts]
            out.append(Anomaly(
                "duplicate-version", f"{len(distinct)} different manifests were accepted for version "
                f"{where.version} of {where.dataset} (written by operations {', '.join(map(_name, writers))}); "
                "the last one wins", *where, att.events(*writers)))
    for where, keys in sorted(att.told.items()):
        found = att.versions.get(where)
        if len(keys) > 1 and not (found is not None and any(found.taken_by(k) for k in keys)):
            out.append(Anomaly(
                "duplicate-version", f"{len(keys)} operations were told they committed version {where.version} "
                f"of {where.dataset}: {', '.join(map(str, keys))}", *where, att.events(*keys)))
    return out


def reused_versions(att: Attribution) -> list[Anomaly]:
    """``version-reused``: a version's manifest was deleted (by cleanup) and a later commit took the freed
    name: the endpoint accepted it, but no later version descends from it."""
    return [Anomaly("version-reused", f"version {w.version} of {w.dataset} was committed by {_name(r.first.by)}, "
                    f"its manifest deleted by {_name(r.deletion.by)}, then the freed name was taken by "
                    f"{_name(r.later.by)}: a commit that later versions do not descend from", *w,
                    att.events(r.first.by, r.deletion.by, r.later.by))
            for w, v in att.versions.items() for r in v.reuses]


def version_gaps(att: Attribution) -> list[Anomaly]:
    """``version-gap``: a dataset's versions (accepted, retained or told) skip a number."""
    numbers: dict[str, set[int]] = defaultdict(set)
    for where in set(att.versions) | set(att.told):
        numbers[where.dataset].add(where.version)
    out: list[Anomaly] = []
    for dataset, seen in sorted(numbers.items()):
        gaps = sorted(set(range(min(seen), max(seen) + 1)) - seen)
        if gaps:
            shown = ", ".join(map(str, gaps[:10])) + (", ..." if len(gaps) > 10 else "")
            around = att.owner(Where(dataset, gaps[0] - 1)), att.owner(Where(dataset, gaps[-1] + 1))
            out.append(Anomaly("version-gap", f"{dataset} has no version {shown}", dataset, gaps[0],
                               att.events(*around)))
    return out


def unreadable_versions(att: Attribution) -> list[Anomaly]:
    """``unreadable-version``: a retained version cannot be read in full (a file is missing, a decode fails)."""
    out: list[Anomaly] = []
    for where, version in att.versions.items():
        state = version.state
        if state is not None and (state.rows is None or state.missing):
            what = state.error or f"{len(state.missing)} referenced file(s) missing: {', '.join(state.missing[:3])}"
            out.append(Anomaly("unreadable-version", f"{where.dataset} v{where.version} cannot be read: {what}",
                               *where, att.events(version.owner)))
    return out


def gc_deleted_reachable(att: Attribution) -> list[Anomaly]:
    """``gc-deleted-reachable``: a file a retained version references was deleted (by the named
    operation: the last that deleted it)."""
    out: list[Anomaly] = []
    for where, version in att.versions.items():
        for missing in version.state.missing if version.state is not None else ():
            if missing in att.deletions:
                deleter = att.deletions[missing][-1].by
                kind = att.records[deleter].op.kind if deleter in att.records else "an unknown client"
                out.append(Anomaly(
                    "gc-deleted-reachable", f"{missing}, referenced by {where.dataset} v{where.version}, was "
                    f"deleted by {_name(deleter)} ({kind})", *where, att.events(deleter, version.owner)))
    return out


def duplicate_commits(att: Attribution) -> list[Anomaly]:
    """``duplicate-commit``: one operation's transaction became two versions."""
    return [Anomaly("duplicate-commit", f"{r.key} ({r.op.kind}) became {len(mine)} versions: {_versions(mine)}",
                    *mine[0], att.events(r.key))
            for r in att.committing() if len(mine := att.owned.get(r.key, [])) > 1]


def failed_but_committed(att: Attribution) -> list[Anomaly]:
    """``failed-but-committed``: an operation was told it failed, yet it owns a version."""
    return [Anomaly("failed-but-committed", f"{r.key} ({r.op.kind}) was told it failed, yet it wrote "
                    f"{_versions(mine)}", *mine[0], att.events(r.key))
            for r in att.committing() if r.outcome == "failed" and (mine := att.owned.get(r.key, []))]


def unattributed_versions(att: Attribution) -> list[Anomaly]:
    """``unattributed-version``: a version no operation in flight wrote."""
    return [Anomaly("unattributed-version", f"version {w.version} of {w.dataset} was written by no operation in "
                    "flight", *w) for w, v in att.versions.items() if v.owner is None]


def tags_overwritten(att: Attribution) -> list[Anomaly]:
    """``tag-overwritten``: two operations were told they created one tag, and no delete of that tag that
    could have taken effect between them was tried (docs/lance-format.md §11: creating a tag that exists is
    refused). A create that succeeds honestly finds the name free, so a second one needs a delete between
    the two writes: one whose invocation-to-completion interval meets the span of the two creates (a
    certainly failed delete deleted nothing; an unknown one may have)."""
    creates: dict[tuple[str, str], list[OpRecord]] = defaultdict(list)
    deletes: dict[tuple[str, str], list[OpRecord]] = defaultdict(list)
    for record in att.records.values():
        for op in record.op.steps:  # a clone (and a pinned stage) first tags the version it reads
            if isinstance(op, DeleteTag) and record.outcome != "failed":
                deletes[(op.root, op.name)].append(record)
            elif isinstance(op, Tag) and record.outcome == "ok":
                creates[(op.root, op.name)].append(record)
    out: list[Anomaly] = []
    for (dataset, name), made in sorted(creates.items()):
        made.sort(key=lambda r: r.start)
        for first, second in pairwise(made):
            start, end = min(first.start, second.start), max(first.end, second.end)
            if any(d.start < end and d.end > start for d in deletes.get((dataset, name), ())):
                continue
            version = second.value.get("tag_version", second.value.get("version"))
            out.append(Anomaly(
                "tag-overwritten", f"{first.key} and {second.key} were both told they created tag {name!r} of "
                f"{dataset}, and no delete of it came between them: the second overwrote the first",
                dataset, int(version) if version is not None else None, att.events(first.key, second.key)))
    return out


def format_breaches(att: Attribution, final: FinalState) -> list[Anomaly]:
    """``format-breach``: certify reports a MUST finding on a retained version (of the dataset or of one of its
    branches) that no known divergence explains; the anomaly names the requirement and the operation that wrote
    the version (a branch's versions are not attributed: their operation is the branch's)."""
    out: list[Anomaly] = []
    for dataset, breaches in sorted(final.breaches.items()):
        for breach in breaches:
            where = Where(dataset, breach.version) if breach.version is not None and breach.branch is None else None
            owner = att.owner(where) if where is not None else None
            at = f" v{breach.version}" if breach.version is not None else ""
            on = f" (branch {breach.branch})" if breach.branch is not None else ""
            out.append(Anomaly("format-breach", f"{dataset}{at}{on}: MUST {breach.requirement}: {breach.message} "
                               f"(written by {_name(owner)})", dataset, breach.version,
                               att.events(owner)))
    return out


def lost_rows(att: Attribution, observed: Iterable[Observation]) -> list[Anomaly]:
    """``lost-rows``: a retained version lacks rows the model holds."""
    return _first_per_cause(a for a in _row_differences(att, observed) if a.kind == "lost-rows")


def phantom_rows(att: Attribution, observed: Iterable[Observation]) -> list[Anomaly]:
    """``phantom-rows``: a retained version holds rows the model does not."""
    return _first_per_cause(a for a in _row_differences(att, observed) if a.kind == "phantom-rows")


def unknown_both_ways(att: Attribution, observed: Iterable[Observation]) -> list[Anomaly]:
    """``unknown-both-ways``: an unknown outcome is committed by one piece of evidence and not by another:
    it owns a version and its rows are missing, or it owns none and its rows are there."""
    return _first_per_cause(a for a in _row_differences(att, observed) if a.kind == "unknown-both-ways")


def duplicate_rows(att: Attribution, observed: Iterable[Observation]) -> list[Anomaly]:
    """``duplicate-rows``: a retained version holds a row more than once."""
    return _first_per_cause(_rows(att, "duplicate-rows", o, op, ids, "holds", "more than once")
                            for o in observed for op, ids in o.doubled().items())


def _row_differences(att: Attribution, observed: Iterable[Observation]) -> Iterator[Anomaly]:
    """Per retained version, the rows it lacks and then those it holds against the model, per operation
    that wrote them: ``lost-rows`` and ``phantom-rows``, or ``unknown-both-ways`` when that operation's
    unknown outcome resolved the other way."""
    for o in observed:
        for op, ids in o.lost().items():
            both = att.resolutions.get(op) is True
            yield _rows(att, "unknown-both-ways" if both else "lost-rows", o, op, ids, "lacks", "that the model holds"
                        + (" (an unknown outcome resolved as committed)" if both else ""))
        for op, ids in o.extra().items():
            both = att.resolutions.get(op) is False
            yield _rows(att, "unknown-both-ways" if both else "phantom-rows", o, op, ids, "holds",
                        "that the model does not" + (" (an unknown outcome resolved as not committed)" if both else ""))


def _rows(att: Attribution, kind: str, o: Observation, op: OpKey, ids: list[int], verb: str, what: str) -> Anomaly:
    return Anomaly(kind, f"{o.where.dataset} v{o.where.version} {verb} rows {sorted(ids)[:6]} of {_name(op)} {what}",
                   *o.where, att.events(op, att.owner(o.where)), _name(op))


def _first_per_cause(anomalies: Iterable[Anomaly]) -> list[Anomaly]:
    """Row anomalies repeat in every later version: keep the first version per (dataset, cause)."""
    out: dict[tuple[str | None, str], Anomaly] = {}
    for anomaly in anomalies:
        out.setdefault((anomaly.dataset, anomaly.cause), anomaly)
    return list(out.values())


def _name(key: OpKey | None) -> str:
    if key is None:
        return "no operation"
    return "the setup" if key == SETUP else str(key)


def _versions(wheres: Sequence[Where]) -> str:
    return ", ".join(f"{d} v{v}" for d, v in sorted(wheres))


def check(history: History, wire: Iterable[WireWrite], final: FinalState) -> CheckResult:
    """Every anomaly of the run (see ``ANOMALY_CLASSES``), in class order, then by dataset and version."""
    att = attribute(history, wire, final)
    observed = replay(att, final)
    anomalies = [
        *lost_commits(att), *vanished_versions(att), *duplicate_versions(att), *reused_versions(att),
        *version_gaps(att), *unreadable_versions(att), *lost_rows(att, observed), *duplicate_rows(att, observed),
        *phantom_rows(att, observed), *duplicate_commits(att), *gc_deleted_reachable(att),
        *unknown_both_ways(att, observed), *failed_but_committed(att), *unattributed_versions(att),
        *tags_overwritten(att), *format_breaches(att, final),
    ]
    rank = {kind: i for i, kind in enumerate(ANOMALY_CLASSES)}
    anomalies.sort(key=lambda a: (rank[a.kind], a.dataset or "", a.version or 0))
    owners = {where: version.owner for where, version in att.versions.items()}
    return CheckResult(anomalies, att.resolutions, owners, sum(1 for k in owners.values() if k not in (None, SETUP)))
