"""The checks: plain functions from a context to findings, one module per area, each registered with
the requirement ids it judges and its traits. The registration is the one place a check's links are
written: the catalogue derives each requirement's checks from it (``coverage.coverage``), and the Spark
harness its fragment-local checks (``spark.distributed.fragment_checks``).

A *version* check receives a ``VersionContext`` (one snapshot of one root) and runs once per certified
version; a *dataset* check receives a ``DatasetContext`` and runs once per certified root (refs, history,
orphans). Checks only read; they never write. A check reports a breach with ``ctx.finding(requirement,
path, message, detail, code=...)``; the requirement must be one the check declared, and the code (a word
for what is wrong, ``Finding.code``) is given where one requirement has several kinds of breach.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from reference.codec import ManifestFile
from reference.errors import LanceSpecError
from reference.proto import table_pb2
from reference.store import Storage
from reference.table import Dataset, Head, Snapshot, VersionEntry

from ..catalogue import load_catalogue
from ..findings import Finding


@dataclass
class _Context:
    dataset: Dataset
    declared: tuple[str, ...] = ()
    version: int | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def storage(self) -> Storage:
        return self.dataset.storage

    def finding(self, requirement: str, path: str, message: str, detail: str | None = None, *,
                code: str = "") -> None:
        """Record a breach of ``requirement`` (one of the running check's declared ids) at ``path`` (a URI or
        file, nothing else), ``detail`` naming the element inside it, ``code`` what is wrong (``Finding``:
        given where the requirement's checks report more than one kind of breach; the requirement id
        otherwise)."""
        self.finding_at(self.version, requirement, path, message, detail, code=code)

    def finding_at(self, version: int | None, requirement: str, path: str, message: str,
                   detail: str | None = None, *, code: str = "") -> None:
        """``finding``, about ``version`` (a dataset check's findings otherwise carry none)."""
        if requirement not in self.declared:
            raise AssertionError(f"check reported {requirement}, which it does not declare ({self.declared})")
        severity = load_catalogue()[requirement].severity
        self.findings.append(Finding(requirement, severity, version, path, message, self.dataset.branch_name,
                                     detail, code=code))


@dataclass
class VersionContext(_Context):
    """One version of one root."""

    snapshot: Snapshot | None = None

    @property
    def snap(self) -> Snapshot:
        assert self.snapshot is not None
        return self.snapshot


HISTORY_KEPT_FRAGMENTS = 1_000_000
"""Fragments of the versions not certified that the dataset checks of one root keep decoded between them
(as protobuf, about 130 bytes a fragment); past it, each check that walks the history decodes such a version
again, so memory stays bounded by one manifest whatever the number of versions (issue 32)."""


@dataclass(frozen=True)
class PastVersion:
    """One attached version as the cross-version rules see it: its number, manifest file and manifest, and
    for a certified version the decoded file certify holds (``decoded``: a transaction is then looked up in it
    rather than in the manifest decoded again)."""

    version: int
    manifest_uri: str
    manifest: table_pb2.Manifest
    decoded: ManifestFile | None = field(default=None, repr=False, compare=False)


@dataclass
class HistoryCache:
    """What the dataset checks of one root share of its history: the listing, the versions that could not be
    read, and the manifests kept within ``HISTORY_KEPT_FRAGMENTS``."""

    entries: list[VersionEntry] | None = None
    unreadable: set[int] = field(default_factory=set)
    kept: dict[int, PastVersion] = field(default_factory=dict)
    kept_fragments: int = 0


@dataclass
class DatasetContext(_Context):
    """One root, with the versions selected for certification (all attached versions with --all-versions).

    ``history()`` is the view cross-version rules need (ids never reused, counters that never decrease,
    clones faithful to their source): every attached version, certified or not, one at a time (``attached``
    is shared by the dataset checks of one root).

    ``snapshots`` holds each certified version's manifest, decoded: a ``Snapshot`` (every file resolved)
    where certify resolved it, else a ``Head`` (an incremental run does not resolve the versions it
    carries over: ``conformance.since``); ``snapshot(v)`` is the version with its files resolved, either
    way."""

    versions: list[int] = field(default_factory=list)
    snapshots: dict[int, Head] = field(default_factory=dict)
    attached: HistoryCache = field(default_factory=HistoryCache)

    def snapshot(self, version: int) -> Snapshot:
        """Certified ``version`` with every file resolved (resolved now, and kept, when it was not)."""
        found = self.snapshots[version]
        if not isinstance(found, Snapshot):
            found = self.snapshots[version] = self.dataset.snapshot(version, strict=False)
        return found

    def history(self) -> Iterator[PastVersion]:
        """Every readable attached version of the root, oldest first, up to the latest certified one, each
        decoded as it comes (a manifest, no snapshot) and dropped after unless the cache keeps it. Manifests
        that cannot be read are left out (HIST-001 reports them)."""
        cache = self.attached
        if cache.entries is None:
            try:
                cache.entries = self.dataset.version_entries(allow_mixed=True)
            except LanceSpecError:
                cache.entries = []
        last = max(self.snapshots, default=None)
        for entry in cache.entries:
            if last is not None and entry.version > last:
                break
            certified = self.snapshots.get(entry.version)
            if certified is not None:
                yield PastVersion(entry.version, certified.manifest_uri, certified.manifest, certified.manifest_file)
                continue
            found = cache.kept.get(entry.version)
            if found is None and entry.version not in cache.unreadable:
                try:
                    manifest = self.dataset.manifest_file(entry.uri).manifest
                except LanceSpecError:
                    cache.unreadable.add(entry.version)
                    continue
                if manifest.version != entry.version:  # Dataset.head's rule: such a manifest is unreadable
                    cache.unreadable.add(entry.version)
                    continue
                found = PastVersion(entry.version, entry.uri, manifest)
                if cache.kept_fragments + len(manifest.fragments) <= HISTORY_KEPT_FRAGMENTS:
                    cache.kept[entry.version] = found
                    cache.kept_fragments += len(manifest.fragments)
            if found is not None:
                yield found


VersionCheck = Callable[[VersionContext], None]
DatasetCheck = Callable[[DatasetContext], None]


#: A read a check will make, as a key (unique per object and question) and a job that makes it and leaves
#: the answer in the run's cache (``bases.run_cached``).
Prefetch = tuple[tuple[str, ...], Callable[[], object]]
#: The reads a check will make on one version (a version check, given that version's context) or on one
#: root (a dataset check): certify makes them all at once before any check runs.
Prefetcher = Callable[[Any], Iterable[Prefetch]]


@dataclass(frozen=True)
class Check:
    """A registered check. ``prefetch`` names the reads it will make, so that certify can make those of
    every version at once before any check runs (``conformance.fetch``).

    ``fragment_local`` (version checks only): what the check reports about a fragment depends only on that
    fragment (its files, as ``snapshot.fragments`` resolves them) and on the manifest's other sections
    (schema, bases, feature flags), never on other fragments; so its findings about a version are the union
    of its findings about the version restricted to each part of any split of the fragments. The Spark
    harness runs such checks in executors over slices of the fragments: the trait decides where a check
    runs, never what it finds."""

    name: str
    scope: str  # "version" | "dataset"
    requirements: tuple[str, ...]
    func: Callable[..., None]
    prefetch: Prefetcher | None = None
    fragment_local: bool = False

    def __post_init__(self) -> None:
        if self.fragment_local and self.scope != "version":
            raise AssertionError(f"check {self.name}: only a version check can be fragment-local")

    @property
    def area(self) -> str:
        return self.name.split(".")[0]


REGISTRY: dict[str, Check] = {}


Decorator = Callable[[Callable[..., None]], Callable[..., None]]


def _register(name: str, scope: str, requirements: Iterable[str], prefetch: Prefetcher | None = None,
              fragment_local: bool = False) -> Decorator:
    def decorate(func: Callable[..., None]) -> Callable[..., None]:
        if name in REGISTRY:
            raise AssertionError(f"check {name} registered twice")
        REGISTRY[name] = Check(name, scope, tuple(requirements), func, prefetch, fragment_local)
        return func

    return decorate


def version_check(name: str, *requirements: str, prefetch: Prefetcher | None = None,
                  fragment_local: bool = False) -> Callable[[VersionCheck], VersionCheck]:
    """Register a check that runs on every certified version (``prefetch``, ``fragment_local``: see
    ``Check``)."""
    return _register(name, "version", requirements, prefetch, fragment_local)


def dataset_check(name: str, *requirements: str,
                  prefetch: Prefetcher | None = None) -> Callable[[DatasetCheck], DatasetCheck]:
    """Register a check that runs once per certified dataset root (``prefetch``: see ``Check``)."""
    return _register(name, "dataset", requirements, prefetch)


def all_checks() -> dict[str, Check]:
    """Every check, after importing every module of this package."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return REGISTRY


def areas() -> list[str]:
    """The areas of the registered checks, sorted: the one list ``--only`` takes and the certify page filters
    by."""
    return sorted({c.area for c in all_checks().values()})


def select(areas: Iterable[str] | None = None) -> Iterator[Check]:
    """The checks of the given areas (all when None), in name order."""
    wanted = {a.lower() for a in areas} if areas else None
    for name in sorted(all_checks()):
        check = REGISTRY[name]
        if wanted is None or check.area in wanted:
            yield check
