"""Findings of fragment-local checks carried from one version to the next, so that a fragment every version
of a root holds is judged once per root rather than once per version.

A fragment-local check (``Check.fragment_local``) reports about a version the union of what it reports about
each fragment, and what it reports about a fragment depends only on that fragment and on the manifest's
other sections. Between two versions of one root whose other sections are equal (``context_key``), a
fragment recorded identically in both (same ``DataFragment`` bytes) therefore draws the same findings in
both, up to the version they name. When every fragment of the earlier version is still in the later one
(appends, and any operation that only adds fragments), the later version's findings are the earlier
version's, renamed, plus what the check finds in the fragments that are new: the check runs on those only.

The carry is refused, and the check runs on the whole version, when the earlier version lost or changed a
fragment, when the other sections differ, when a finding of the earlier version names its manifest (a
finding about the manifest file would need its path rewritten, and only a re-run says it right), or when a
run stopped short on something it could not read (what it reported then depends on where it stopped). What a run
reports is the same with or without the carry; tests certify with it off (``carry=False``) and compare.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from reference.proto import table_pb2
from reference.table import FragmentView, FragmentViews, Snapshot

from .findings import Finding

#: Manifest fields that differ between versions by construction and that no fragment-local check may read:
#: the version's number and time, where its own sections lie in its file, its transaction, and the
#: counters of ids handed out so far. Every other field (schema, bases, flags, data format, config, branch)
#: is context a fragment-local check may depend on.
VERSION_OWN_FIELDS = frozenset({
    "fragments", "version", "version_aux_data", "timestamp", "tag", "index_section", "max_fragment_id",
    "transaction_file", "transaction_section_deprecated", "transaction_section", "next_row_id",
})


def context_key(manifest: table_pb2.Manifest) -> tuple[tuple[str, bytes], ...]:
    """Every set field of ``manifest`` outside ``VERSION_OWN_FIELDS``, serialized: two versions with equal
    keys give a fragment-local check the same context."""
    key: list[tuple[str, bytes]] = []
    for descriptor, value in manifest.ListFields():
        if descriptor.name in VERSION_OWN_FIELDS:
            continue
        if descriptor.message_type is not None and descriptor.message_type.GetOptions().map_entry:
            key.append((descriptor.name, repr(sorted(value.items())).encode()))
        elif descriptor.is_repeated:
            items = [v.SerializeToString(deterministic=True) if descriptor.message_type else repr(v).encode()
                     for v in value]
            key.append((descriptor.name, b"\0".join(items)))
        elif descriptor.message_type is not None:
            key.append((descriptor.name, value.SerializeToString(deterministic=True)))
        else:
            key.append((descriptor.name, repr(value).encode()))
    return tuple(key)


Run = Callable[[int, Snapshot], tuple[list[Finding], bool]]
"""``run(version, snapshot)``: one check's findings on ``snapshot`` (possibly restricted to some of its
fragments), naming ``version``, and whether the check ran to its end."""


#: A version's ``context_key`` and its fragments' keys (``_keys``).
_Identity = tuple[tuple[tuple[str, bytes], ...], list[bytes]]


@dataclass
class _Judged:
    """The version judged last, and each check's findings on it (None where they cannot be carried); its
    context and fragment keys (``identity``, when they were worked out for it already) are worked out when
    the next version asks (a single version never does)."""

    snapshot: Snapshot
    findings: dict[str, list[Finding] | None]
    identity: _Identity | None = None

    @functools.cached_property
    def context(self) -> tuple[tuple[str, bytes], ...]:
        return self.identity[0] if self.identity is not None else context_key(self.snapshot.manifest)

    @functools.cached_property
    def fragments(self) -> frozenset[bytes]:
        return frozenset(self.identity[1] if self.identity is not None else _keys(self.snapshot))


def _keys(snapshot: Snapshot) -> list[bytes]:
    """Each fragment's DataFragment bytes: equal bytes, the same fragment recorded the same way. Where the
    fragments were decoded as columns, the bytes as stored (no fragment object made); else serialized
    deterministically. Two versions keyed differently only carry less: a fragment whose keys differ is
    judged again."""
    fragments = snapshot.fragments
    if not isinstance(fragments, FragmentViews):
        return [f.proto.SerializeToString(deterministic=True) for f in fragments]
    columns = fragments.columns
    if columns is None:  # the messages, by position in the manifest: no fragment resolved to key it
        messages = snapshot.manifest.fragments
        return [messages[p].SerializeToString(deterministic=True) for p in fragments.positions]
    section, starts, lengths = columns.section, columns.record_start, columns.record_length
    return [section[starts[p]:starts[p] + lengths[p]] for p in fragments.positions]


def _added(last: _Judged, snapshot: Snapshot) -> tuple[Sequence[FragmentView] | None, _Identity]:
    """The fragments of ``snapshot`` that ``last``'s version does not hold, when ``last``'s version holds
    every one of its fragments unchanged in the same context (None when it lost or changed one, or the
    context differs); and ``snapshot``'s identity, worked out on the way."""
    identity = context, keys = context_key(snapshot.manifest), _keys(snapshot)
    if context != last.context or not last.fragments.issubset(keys):
        return None, identity
    fresh = [i for i, k in enumerate(keys) if k not in last.fragments]
    fragments = snapshot.fragments
    added = fragments.subset(fresh) if isinstance(fragments, FragmentViews) else tuple(fragments[i] for i in fresh)
    return added, identity


class Additions:
    """What each version of one root adds to the version before it (``of`` is called once per version,
    oldest first): the fragments a fragment-local check's prefetch must declare reads for. A fragment the
    version before held unchanged, in the same context, names the same files, whose reads were declared for
    that version; where the carry is refused (``Carry``), the whole version is handed over."""

    def __init__(self) -> None:
        self._last: _Judged | None = None

    def of(self, snapshot: Snapshot) -> Snapshot:
        """``snapshot`` restricted to the fragments the previous version did not hold (all of them for the
        first version, or when the previous one lost or changed a fragment, or had another context)."""
        last = self._last
        added, identity = _added(last, snapshot) if last is not None else (None, None)
        self._last = _Judged(snapshot, {}, identity)
        return snapshot if added is None else replace(snapshot, fragments=added)


class Carry:
    """The carry of the fragment-local checks ``runs`` (by name) over the versions of one root: ``judge`` is
    called once per version, oldest first."""

    def __init__(self, runs: dict[str, Run]) -> None:
        self._runs = runs
        self._last: _Judged | None = None

    def judge(self, version: int, snapshot: Snapshot) -> dict[str, list[Finding]]:
        """Each check's findings on ``version``, carried from the previous version where that is exact."""
        last = self._last
        new: Sequence[FragmentView] | None = None
        identity: _Identity | None = None
        if last is not None and any(found is not None for found in last.findings.values()):
            new, identity = _added(last, snapshot)
        out: dict[str, list[Finding]] = {}
        carried: dict[str, list[Finding] | None] = {}
        for name, run in self._runs.items():
            earlier = last.findings[name] if last is not None and new is not None else None
            findings, complete = None, False
            if earlier is not None:
                found, complete = run(version, replace(snapshot, fragments=new)) if new else ([], True)
                if complete:
                    findings = [replace(f, version=version) for f in earlier] + found
            if findings is None:
                findings, complete = run(version, snapshot)
            out[name] = findings
            manifest = snapshot.manifest_uri  # a finding naming the manifest file is not carried
            named = any(manifest in (f.path, f.detail) or manifest in f.message for f in findings)
            carried[name] = findings if complete and not named else None
        self._last = _Judged(snapshot, carried, identity)
        return out


__all__ = ["VERSION_OWN_FIELDS", "Additions", "Carry", "Run", "context_key"]
