"""Attribution, the checker's first step: from the three views of a run, who did what.

The views (none trusted alone): the **history** (``History``: what each writer asked for and was told),
the **wire log** (``proxy.WireWrite``: every manifest PUT and deletion the endpoint applied, with the
writer and the arrival time) and the **final storage** (``FinalState``: every retained version as read
back). A writer sends requests only while an operation is in flight, so the arrival time attributes each
request to exactly one operation.

``attribute`` names the sender of every applied write; the *owner* of each version (the operation that
wrote the manifest now at it: the retained file, or for a version cleanup removed, the last accepted PUT of
that name); the reuses of a version name cleanup had freed; the acknowledged commits (at the version each
was told) and the owned ones; how each unknown outcome resolved (committed when it owns a version); and the
commits the row model applies (``rowmodel``).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from reference.layout import parse_manifest_name

from .history import History, OpKey, OpRecord
from .proxy import WireWrite

__all__ = ["SETUP", "Attribution", "Breach", "Commit", "FinalState", "Reuse", "Sent", "VersionAttribution",
           "VersionState", "Where", "attribute", "manifest_where"]

SETUP = OpKey(-1, -1)
"""The owner of version 1 of the initial datasets (written by the setup, not through the proxy)."""


class Where(NamedTuple):
    """One version of one dataset."""

    dataset: str
    version: int


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
    breaches: dict[str, list[Breach]] = field(default_factory=dict)
    """Per dataset, what certify reports at MUST on its retained versions that no known divergence explains."""


class Breach(NamedTuple):
    """A MUST finding of certify on a retained version (``branch`` None for the dataset's main root)."""

    requirement: str
    version: int | None
    branch: str | None
    message: str


class Sent(NamedTuple):
    """A write the endpoint applied (an accepted manifest PUT, a deletion) and the operation that sent it
    (None: no operation of that client was in flight when it arrived)."""

    write: WireWrite
    by: OpKey | None


class Reuse(NamedTuple):
    """A version name taken twice: ``first`` was accepted, ``deletion`` removed it (a cleanup), then
    ``later``, a different manifest, took the freed name."""

    first: Sent
    deletion: Sent
    later: Sent


@dataclass(slots=True)
class VersionAttribution:
    """One version: the manifests the endpoint accepted for it (in its order), what was retained, the
    owner (``SETUP`` for an initial version 1, None when no operation in flight wrote the final manifest)
    and the reuses of its name."""

    puts: list[Sent]
    state: VersionState | None
    owner: OpKey | None
    reuses: list[Reuse]

    def taken_by(self, key: OpKey) -> bool:
        """Whether ``key``'s manifest took this name after cleanup freed it."""
        return any(r.later.by == key for r in self.reuses)


class Commit(NamedTuple):
    """One committed operation as the model applies it: at the version it was told (acknowledged) or owns
    (any other outcome), with the version its transaction read (None when no manifest of it says)."""

    record: OpRecord
    where: Where
    read_version: int | None


@dataclass
class Attribution:
    """Who did what in one run (see the module docstring)."""

    records: dict[OpKey, OpRecord]
    """Every operation, in invocation order."""
    versions: dict[Where, VersionAttribution]
    """Every version accepted or retained, in order."""
    deletions: dict[str, list[Sent]]
    """The applied deletions of each object key, in the endpoint's order."""
    told_at: dict[OpKey, Where] = field(default_factory=dict)
    """Each acknowledged commit (a committing operation told it committed), in invocation order, and the
    version it was told."""
    told: dict[Where, list[OpKey]] = field(default_factory=dict)
    """``told_at`` by version."""
    owned: dict[OpKey, list[Where]] = field(default_factory=dict)
    """The versions each operation owns."""
    resolutions: dict[OpKey, bool] = field(default_factory=dict)
    """Every unknown committing operation: True when it owns a version."""
    commits: list[Commit] = field(default_factory=list)
    """What the row model applies (``_commits``)."""

    def committing(self) -> Iterator[OpRecord]:
        return (r for r in self.records.values() if r.op.commits_to is not None)

    def owner(self, where: Where) -> OpKey | None:
        found = self.versions.get(where)
        return found.owner if found is not None else None

    def collected(self, version: VersionAttribution) -> bool:
        """Whether a manifest accepted for ``version`` was deleted since (by a cleanup)."""
        return any(p.write.key in self.deletions for p in version.puts)

    def events(self, *keys: OpKey | None) -> list[int]:
        """The history events (invocation, completion) of the operations ``keys`` (None, the setup: none)."""
        return [e.index for key in keys if key is not None and key in self.records
                for e in self.records[key].events()]


def attribute(history: History, wire: Iterable[WireWrite], final: FinalState) -> Attribution:
    """Who did what in the run (see the module docstring)."""
    records = {r.key: r for r in history.records()}
    by_writer: dict[int, list[OpRecord]] = defaultdict(list)  # each writer's operations, in invocation order
    for record in records.values():
        by_writer[record.op.writer].append(record)
    puts: dict[Where, list[Sent]] = defaultdict(list)
    deletions: dict[str, list[Sent]] = defaultdict(list)
    for write in sorted(wire, key=lambda w: w.at):  # the endpoint's order; the arrival time names the sender
        if not write.applied:
            continue
        sent = Sent(write, _sender(by_writer.get(write.client, []), write.t))
        if write.kind == "delete":
            deletions[write.key].append(sent)
        elif write.kind == "manifest-put" and (where := manifest_where(write.key)) is not None:
            puts[where].append(sent)
    retained = {Where(d, v): state for d, versions in final.versions.items() for v, state in versions.items()}
    att = Attribution(records, {}, dict(deletions))
    for where in sorted(set(puts) | set(retained)):
        accepted, state = puts.get(where, []), retained.get(where)
        owner = _owner(where, accepted, state, final.initial)
        att.versions[where] = VersionAttribution(accepted, state, owner, _reuses(accepted, att.deletions))
        if owner is not None and owner != SETUP:
            att.owned.setdefault(owner, []).append(where)
    for record in att.committing():
        if _acknowledged(record):
            where = att.told_at[record.key] = Where(str(record.op.commits_to), int(record.value["version"]))
            att.told.setdefault(where, []).append(record.key)
    att.resolutions = {r.key: r.key in att.owned for r in att.committing() if r.outcome == "unknown"}
    att.commits = _commits(att, final)
    return att


def _sender(ops: Sequence[OpRecord], t: float) -> OpKey | None:
    """The operation of a writer (``ops``, in invocation order) in flight at ``t``. A writer runs one
    operation at a time: the last one started at or before ``t`` is the only candidate."""
    i = bisect.bisect_right(ops, t, key=lambda r: r.start) - 1
    return ops[i].key if i >= 0 and t <= ops[i].end else None


def manifest_where(key: str) -> Where | None:
    """The version of a manifest key ``{dataset}/_versions/{name}`` (None for any other key)."""
    dataset, sep, name = key.partition("/_versions/")
    if not sep or "/" in name:
        return None
    parsed = parse_manifest_name(name)
    if parsed is None or parsed.detached:
        return None
    return Where(dataset, parsed.version)


def _owner(where: Where, puts: Sequence[Sent], state: VersionState | None, initial: Sequence[str]) -> OpKey | None:
    """The sender of the manifest that is final at ``where``: the retained one, else the last accepted."""
    if state is None:
        return puts[-1].by if puts else None
    matching = [p.by for p in puts if p.write.md5 == state.md5]
    if matching:
        return matching[-1]
    return SETUP if where.dataset in initial and where.version == 1 else None


def _reuses(puts: Sequence[Sent], deletions: dict[str, list[Sent]]) -> list[Reuse]:
    """Later manifests, different from the first, accepted after a deletion of the name."""
    out: list[Reuse] = []
    for later in puts[1:]:
        if later.write.md5 == puts[0].write.md5:
            continue
        between = [d for d in deletions.get(later.write.key, ()) if puts[0].write.at < d.write.at < later.write.at]
        if between:
            out.append(Reuse(puts[0], between[0], later))
    return out


def _commits(att: Attribution, final: FinalState) -> list[Commit]:
    """Acknowledged operations where they were told; every other owner where it owns, unless it was
    acknowledged elsewhere (a second copy is a duplicate-commit, not a second step of the model)."""
    md5_read = dict(final.read_versions)  # the read version of each manifest: a delete removes what it saw
    md5_read.update({state.md5: state.read_version for versions in final.versions.values()
                     for state in versions.values() if state.read_version is not None})

    def read_version(key: OpKey, where: Where) -> int | None:
        version = att.versions.get(where)
        if version is None:
            return None
        known = [md5_read[p.write.md5] for p in version.puts
                 if p.by == key and p.write.md5 is not None and p.write.md5 in md5_read]
        if known:
            return known[-1]
        return version.state.read_version if version.owner == key and version.state is not None else None

    told = [(key, where) for where, keys in att.told.items() for key in keys]
    owned = [(v.owner, where) for where, v in att.versions.items()
             if v.owner is not None and v.owner != SETUP and not _acknowledged(att.records[v.owner])]
    return [Commit(att.records[key], where, read_version(key, where)) for key, where in told + owned]


def _acknowledged(record: OpRecord) -> bool:
    return record.outcome == "ok" and "version" in record.value
