"""Incremental certification (``certify --since REPORT``): the version checks' findings on a version an
earlier run judged are carried over when the run proves that nothing they judged has changed on storage;
everything else is judged as a full run judges it.

What a version check finds on a version depends on the version's manifest and on the objects its reads
ask about (the data, deletion and index files the manifest references, and whatever else a check reads or
lists: a base's directory, a blob file, an external row-id file). A full run writes into its JSON report
the **evidence** of that (``Evidence``, ``EVIDENCE_FORMAT``): the selection it certified, each judged
version's manifest, for each object the version checks depend on its identity at the time (size,
last-modified time, and the ETag where the store gives one; ``None`` for an object found missing), and
which findings came from version checks. The files a manifest references are tied to the versions that
reference them (the first and last such version of each root: a conservative range); what the checks read
besides is tied to every version of the root.

An incremental run (``Since``) lists the dataset's objects again and compares: a version is **carried**
when the earlier run judged it, its manifest is the same object with the same identity, no file of its
range changed, appeared or vanished, and nothing else its root's checks read changed. A carried version's
version-check findings are taken from the earlier report and its version checks do not run. Every other
version (new ones, and those judged before whose evidence changed: the report lists them) is judged. The
carry is decided from the listing alone, before any manifest is read. The dataset checks (history, refs,
layout, conflicts, orphans: every cross-version rule) always run on the whole history, every version
decoded as in a full run (a rule about one version alone is a version check, so that it is carried: the
transaction a version's manifest names, ``history.transaction``, is tied to that version like its files);
a carried version is not resolved (a ``Head``; ``DatasetContext.snapshot``
resolves it for the rule that needs its files), so they see exactly what a full run sees.

Which checks are which: a version check (``Check.scope == "version"``) judges one version from its
manifest and the objects it reads, so its findings can be carried; one version check looks beyond its
version (``files.data_files_exist`` asks whether the root's first version is a shallow clone, whose
inherited files it then excuses), hence ``first`` in the evidence: a root whose first version changed
(a cleanup, a rewritten manifest) is judged again whole. A dataset check (history, ids, conflicts, refs,
layout, orphans, clones, index coverage) looks across versions or at the dataset as a whole and always
runs. The result is the report a full run would write, with ``carried_over`` saying what was carried.

An earlier report is refused (``SinceRefused``, exit 2) when it is not a lancespec certify report of this
lancespec version with evidence, when it was written for another dataset, another version selection,
other checks or other limits, or when it was written by a run that did not finish (no evidence then).
A listing a version check made (a dataset-root base's ``_versions/``, an index directory) is compared
whole: a branch whose checks list its parent's ``_versions/`` is judged again whenever the parent commits.
Identity is size, time and ETag, not a content hash: an object rewritten in place with the same size
within the store's time resolution (a microsecond on a local disk, a second on S3 without ETags) is not
seen to change. The reads of version checks Spark runs in its executors are not noted: under
``spark-certify``, the evidence is the referenced files and what the driver's checks read."""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from reference import __version__
from reference.errors import LanceSpecError, ObjectNotFound
from reference.layout import transaction_uri
from reference.limits import Limits
from reference.plain_fragments import file_uris
from reference.store import ObjectInfo, Storage
from reference.store.uri import normalize
from reference.table import Snapshot

from .fetch import Observed, RunStorage
from .findings import Finding

EVIDENCE_FORMAT = "lancespec.evidence/1"

#: An object's identity: "SIZE TIME" or "SIZE TIME ETAG" (the last-modified time in ISO 8601, the ETag where
#: the store gives one), or None when it is missing.
Identity = str | None


class SinceRefused(LanceSpecError):
    """The report given with ``--since`` cannot be the basis of an incremental run (the message says why)."""


def selection(uri: str, version: int | None, all_versions: bool, checks: Iterable[str], limits: Limits,
              offloaded: Iterable[str]) -> dict[str, Any]:
    """What a run was asked to certify, as its evidence records it: an incremental run must ask the same."""
    return {"uri": uri, "version": version, "all_versions": all_versions, "checks": sorted(checks),
            "limits": dataclasses.asdict(limits), "offloaded": sorted(offloaded)}


def identity(info: ObjectInfo | None) -> Identity:
    if info is None:
        return None
    moment = info.last_modified.isoformat()
    return f"{info.size} {moment} {info.etag}" if info.etag else f"{info.size} {moment}"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
#: Objects given to ``identities`` at once (its arrays then stay a few MB).
IDENTITIES_AT_ONCE = 1 << 13


def identities(infos: list[ObjectInfo | None]) -> list[Identity]:
    """``identity`` of each of ``infos``, in order. Where every object found has no ETag and a time in UTC (a
    local disk's listing: the evidence of a large version names a million files), the times are written in
    ISO 8601 by numpy at once, as ``datetime.isoformat`` writes them (the microseconds left out when 0), instead
    of one ``isoformat`` an object (2 µs each with a time zone). (Its arrays hold a string per object: callers
    with a million pass a part at a time, ``IDENTITIES_AT_ONCE``.)"""
    found = [info for info in infos if info is not None]
    if not all(info.etag is None and info.last_modified.tzinfo is UTC for info in found):
        return [identity(info) for info in infos]
    micros = np.fromiter([(info.last_modified - _EPOCH) // _MICROSECOND for info in found], np.int64, len(found))
    moments = micros.astype("datetime64[us]")
    texts = np.datetime_as_string(moments, unit="us").astype(object)
    whole = np.flatnonzero(micros % 1_000_000 == 0)
    if whole.size:
        texts[whole] = np.datetime_as_string(moments[whole], unit="s")
    made: list[Identity] = [f"{info.size} {moment}+00:00" for info, moment in zip(found, texts.tolist(), strict=True)]
    if len(found) == len(infos):
        return made
    it = iter(made)
    return [None if info is None else next(it) for info in infos]


def listing_digest(infos: Iterable[ObjectInfo]) -> str:
    """A listing's identity: every object's URI and identity, in URI order."""
    digest = hashlib.sha256()
    for info in sorted(infos, key=lambda i: i.uri):
        digest.update(json.dumps([info.uri, identity(info)]).encode())
    return digest.hexdigest()


def _listing_key(directory: str, recursive: bool) -> str:
    return f"{directory}\n{'recursive' if recursive else 'one level'}"


def finding_key(f: Finding) -> tuple[object, ...]:
    """A finding less what each run marks anew (known divergence, set aside)."""
    return (f.requirement, f.severity, f.version, f.path, f.message, f.branch, f.detail, f.code)


def finding_from_json(item: Mapping[str, Any]) -> Finding:
    """A finding of a JSON report (``Finding.to_json``), unmarked: the run marks it again (``baseline.settle``)."""
    return Finding(item["requirement"], item["severity"], item["version"], item["path"], item["message"],
                   item["branch"], item["detail"], code=item["code"])


@dataclass
class RootEvidence:
    """One root's evidence: each judged version's manifest, each referenced file's range of versions (first,
    last), what else the version checks read (objects, listings), the version checks' findings, and the
    manifest of the root's first version (a shallow clone's inherited files are those of its first version:
    ``files.data_files_exist`` reads it for every version)."""

    manifests: dict[int, str] = field(default_factory=dict)
    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    objects: set[str] = field(default_factory=set)
    listings: set[tuple[str, bool]] = field(default_factory=set)
    findings: set[tuple[object, ...]] = field(default_factory=set)
    first: str | None = None

    def judged(self, v: int, snapshot: Snapshot) -> None:
        """Record a version whose version checks ran: its manifest, the files it references and the transaction
        file it names (``history.transaction`` reads it)."""
        self.manifests[v] = snapshot.manifest_uri
        files, only = self.files, (v, v)  # one tuple shared by the files first met here (a million of them)
        if not files:  # the first version judged: each file's range is this version alone
            self.files = dict.fromkeys(file_uris(snapshot), only)
        else:
            for uri in file_uris(snapshot):
                span = files.get(uri)
                files[uri] = only if span is None else (min(span[0], v), max(span[1], v))
        transaction = transaction_uri(snapshot.root, snapshot.manifest.transaction_file)
        if transaction is not None:
            self._tie(transaction, v, v)

    def _tie(self, uri: str, first: int, last: int) -> None:
        span = self.files.get(uri)
        self.files[uri] = (first, last) if span is None else (min(span[0], first), max(span[1], last))

    def observed(self, seen: Observed, versions_dir: str) -> None:
        """What the version checks read besides the manifests and referenced files, less the listing of the
        root's ``versions_dir`` (what a version check takes of it is the first version: ``first``)."""
        self.objects.update(seen.objects.difference(self.files))  # a referenced file is in files
        self.listings.update(key for key in seen.listings if key != (normalize(versions_dir), False))

    def carried(self, earlier: RootEvidence, versions: Iterable[int]) -> None:
        """Take the evidence of the ``versions`` carried from ``earlier``."""
        carried = sorted(versions)
        for v in carried:
            self.manifests[v] = earlier.manifests[v]
        for uri, (first, last) in earlier.files.items():
            at = bisect.bisect_left(carried, first)
            if at < len(carried) and carried[at] <= last:
                self._tie(uri, first, last)
        if carried:
            self.objects.update(earlier.objects)
            self.listings.update(earlier.listings)


def _span(value: Any) -> tuple[int, int]:
    """A file's range of versions as evidence holds it: two integers, the first not above the last; ValueError
    otherwise (a report edited by hand ended certify in exit 3: issue 32)."""
    if not (isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)
            and value[0] <= value[1]):
        raise ValueError(f"a file's range of versions is {str(value)[:80]}, not two integers in order")
    return value[0], value[1]


def _text(value: Any) -> str:
    """A URI as evidence holds it: a string; ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"{str(value)[:80]} is no URI")
    return value


@dataclass
class Evidence:
    """What an incremental run needs of a run (the module docstring): the selection, each root's evidence
    (by label: ``main`` or the branch name) and, filled when the run ends (``seal``), the identity of every
    object and listing the roots name."""

    selection: dict[str, Any]
    roots: dict[str, RootEvidence] = field(default_factory=dict)
    objects: dict[str, Identity] = field(default_factory=dict)
    listings: dict[str, str] = field(default_factory=dict)
    #: What the version checks' HEADs answered (``Observed.heads``): ``seal`` asks no object twice.
    answered: dict[str, Identity] = field(default_factory=dict)

    def root(self, label: str) -> RootEvidence:
        return self.roots.setdefault(label, RootEvidence())

    def add_version_findings(self, findings: Iterable[Finding]) -> None:
        """Mark ``findings`` as version checks' findings (each on its own root)."""
        for f in findings:
            self.root(f.branch or "main").findings.add(finding_key(f))

    def seal(self, now: Present) -> None:
        """Record the identity, now, of every object and listing the roots name."""
        now.knows(self.answered)
        for evidence in self.roots.values():
            for objects in (evidence.manifests.values(), evidence.files, evidence.objects,
                            [evidence.first] if evidence.first else []):
                fresh = [uri for uri in objects if uri not in self.objects]
                self.objects.update(zip(fresh, now.identities(fresh), strict=True))
            for directory, recursive in evidence.listings:
                self.listings[_listing_key(directory, recursive)] = now.listing(directory, recursive)

    def to_json(self, findings: list[Finding]) -> dict[str, Any]:
        """The JSON form; version findings as indices into the report's ``findings``."""
        at = {finding_key(f): i for i, f in enumerate(findings)}
        return {
            "format": EVIDENCE_FORMAT,
            "selection": self.selection,
            "objects": self.objects,
            "listings": self.listings,
            "roots": {label: {"manifests": {str(v): uri for v, uri in sorted(r.manifests.items())},
                              "files": r.files, "objects": sorted(r.objects.difference(r.files)),
                              "listings": [_listing_key(d, rec) for d, rec in sorted(r.listings)],
                              "findings": sorted(at[k] for k in r.findings if k in at), "first": r.first}
                      for label, r in sorted(self.roots.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> tuple[Evidence, dict[str, list[int]]]:
        """The evidence, and each root's version findings as indices into the report's ``findings``."""
        evidence = cls(data["selection"], objects=dict(data["objects"]), listings=dict(data["listings"]))
        indices: dict[str, list[int]] = {}
        for label, r in data["roots"].items():
            listings = set()
            for key in r["listings"]:
                directory, _, how = key.rpartition("\n")
                listings.add((directory, how == "recursive"))
            evidence.roots[label] = RootEvidence(
                {int(v): _text(uri) for v, uri in r["manifests"].items()},
                {uri: _span(span) for uri, span in r["files"].items()}, {_text(o) for o in r["objects"]}, listings,
                first=None if r["first"] is None else _text(r["first"]))
            indices[label] = list(r["findings"])
        return evidence, indices


class Present:
    """The identities of objects now: from one recursive listing of the main root (which holds the branch
    roots), a HEAD for an object elsewhere."""

    def __init__(self, storage: Storage, main_uri: str) -> None:
        self.storage = storage
        self.root = normalize(main_uri)
        self._below = self.root + "/"
        self._listed: Mapping[str, ObjectInfo] | None = None
        self._known: dict[str, Identity] = {}

    def knows(self, identities: Mapping[str, Identity]) -> None:
        """Take ``identities`` as what a HEAD now would answer (the run's own HEADs: the store does not change
        under a run)."""
        for uri, found in identities.items():
            self._known.setdefault(uri, found)

    def _listing(self) -> Mapping[str, ObjectInfo]:
        if self._listed is None:
            if isinstance(self.storage, RunStorage):  # the run's index of its listings: no second one
                self._listed = self.storage.listed_by_uri(self.root)
            else:
                self._listed = {i.uri: i for i in self.storage.list(self.root, recursive=True)}
        return self._listed

    def identities(self, uris: list[str]) -> list[Identity]:
        """``identity`` of each of ``uris``, in order (the evidence of a large version names a million files):
        those below the root that no HEAD answered from the listing at once (``identities``), the others one by
        one."""
        known, below = self._known, self._below
        apart = {n for n, uri in enumerate(uris) if uri in known or not uri.startswith(below)}
        if len(apart) == len(uris):
            return [self.identity(uri) for uri in uris]
        listed = self._listing()
        if not apart:
            found: list[Identity] = []
            for at in range(0, len(uris), IDENTITIES_AT_ONCE):
                found += identities(list(map(listed.get, uris[at:at + IDENTITIES_AT_ONCE])))
            return found
        inside = iter(identities([listed.get(uri) for n, uri in enumerate(uris) if n not in apart]))
        return [self.identity(uri) if n in apart else next(inside) for n, uri in enumerate(uris)]

    def identity(self, uri: str) -> Identity:
        if uri in self._known:
            return self._known[uri]
        if uri.startswith(self._below):  # answered by the listing, kept already: not copied into _known
            return identity(self._listing().get(uri))
        else:
            try:
                found = identity(self.storage.head(uri))
            except ObjectNotFound:
                found = None
        self._known[uri] = found
        return found

    def listing(self, directory: str, recursive: bool) -> str:
        return listing_digest(self.storage.list(directory, recursive))


@dataclass
class CarriedOver:
    """What an incremental run carried: from which report, how many versions and findings, and which
    versions it judged: new ones, and (``changed``) ones the earlier report judged whose evidence changed."""

    source: str
    versions: int = 0
    findings: int = 0
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"from": self.source, "versions": self.versions, "findings": self.findings, "new": self.new,
                "changed": self.changed}

    def line(self) -> str:
        changed = f"; judged again, changed on storage: {', '.join(self.changed)}" if self.changed else ""
        return (f"carried over from {self.source}: the version checks of {self.versions:,} version(s) "
                f"({self.findings:,} finding(s)); judged {len(self.new):,} new version(s){changed}")


def _place(label: str, v: int) -> str:
    return f"v{v}" if label == "main" else f"{label}@v{v}"


class Since:
    """An incremental run's view of the earlier report: which versions it may carry, and their findings."""

    def __init__(self, source: str, earlier: Evidence, findings: list[Finding], indices: dict[str, list[int]]) -> None:
        self.source = source
        self.earlier = earlier
        self._findings = findings
        self._indices = indices
        self.summary = CarriedOver(source)
        self.present: Present | None = None

    @classmethod
    def load(cls, path: str, expected: Mapping[str, Any]) -> Since:
        """The report at ``path``, refused (``SinceRefused``) unless an incremental run asking ``expected``
        (``selection``) may build on it."""
        from .report import REPORT_FORMAT

        try:
            with open(path, encoding="utf-8") as stream:
                data = json.load(stream)
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested past the parser
            raise SinceRefused(f"cannot read the earlier report: {str(exc)[:200]}", path) from exc
        if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
            raise SinceRefused(f"not a lancespec certify report ({REPORT_FORMAT}, written by --format json)", path)
        if data.get("lancespec_version") != __version__:
            raise SinceRefused(f"written by lancespec {data.get('lancespec_version')}, not {__version__}: "
                               "certify without --since", path)
        evidence = data.get("evidence")
        if not isinstance(evidence, dict) or evidence.get("format") != EVIDENCE_FORMAT:
            raise SinceRefused(f"the report holds no evidence ({EVIDENCE_FORMAT}): it was written by a run that "
                               "did not finish; certify without --since", path)
        different = [key for key in expected if evidence["selection"].get(key) != expected[key]]
        if different:
            names = {"uri": "the dataset", "version": "--version", "all_versions": "--all-versions",
                     "checks": "the checks (--only)", "limits": "the limits", "offloaded": "the Spark offload"}
            raise SinceRefused("the earlier report was written with other options ("
                               + ", ".join(names.get(k, k) for k in different)
                               + "); certify with the same ones, or without --since", path)
        try:
            earlier, indices = Evidence.from_json(evidence)
            findings = [finding_from_json(f) for f in data["findings"]]
            if any(not 0 <= i < len(findings) for found in indices.values() for i in found):
                raise ValueError("a finding index outside the findings")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SinceRefused(f"the report's evidence is malformed ({type(exc).__name__}: {exc}); certify without "
                               "--since", path) from exc
        return cls(path, earlier, findings, indices)

    def carry(self, storage: Storage, main_uri: str, label: str, first: str | None,
              manifests: Mapping[int, str]) -> set[int]:
        """The versions of root ``label`` (its first version's manifest now ``first``; ``manifests``: the
        manifest of each version asked about) whose version checks need not run; notes the rest."""
        if self.present is None:
            self.present = Present(storage, main_uri)
        now = self.present
        before = self.earlier.roots.get(label)
        judged_before = {} if before is None else before.manifests
        if before is None or before.first != first or self._root_changed(before, now):
            affected = set(judged_before)
        else:
            affected = set()
            for uri, (lowest, highest) in before.files.items():
                if now.identity(uri) != self.earlier.objects.get(uri):
                    affected.update(v for v in judged_before if lowest <= v <= highest)
        carried: set[int] = set()
        for v, manifest in sorted(manifests.items()):
            judged = judged_before.get(v)
            if judged is None:
                self.summary.new.append(_place(label, v))
            elif v in affected or judged != manifest or now.identity(manifest) != self.earlier.objects.get(manifest):
                self.summary.changed.append(_place(label, v))
            else:
                carried.add(v)
        return carried

    def findings(self, label: str, carried: set[int]) -> list[Finding]:
        """The earlier report's version-check findings on the ``carried`` versions of root ``label``."""
        found = [f for i in self._indices.get(label, []) if (f := self._findings[i]).version in carried]
        self.summary.versions += len(carried)
        self.summary.findings += len(found)
        return found

    def _root_changed(self, before: RootEvidence, now: Present) -> bool:
        """Whether the first version's manifest, or anything else the root's checks read besides manifests and
        referenced files, changed."""
        if before.first is not None and now.identity(before.first) != self.earlier.objects.get(before.first):
            return True
        if any(now.identity(uri) != self.earlier.objects.get(uri) for uri in before.objects
               if uri not in before.files):
            return True
        return any(now.listing(d, rec) != self.earlier.listings.get(_listing_key(d, rec)) for d, rec in before.listings)


__all__ = ["EVIDENCE_FORMAT", "CarriedOver", "Evidence", "RootEvidence", "Since", "SinceRefused", "selection"]
