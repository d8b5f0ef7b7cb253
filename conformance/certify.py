"""Certify a dataset: run the checks over one version, or every version of every root, and report.

Four outcomes, kept apart (``Report.outcome``; docs/exit-codes.md):

* **breach** (exit 1): a MUST requirement is breached, counting only the findings the run did not set aside
  (``conformance.baseline``). Every finding names a requirement. What the dataset itself holds is judged:
  a manifest that exists but is not a manifest, a listed version whose manifest is gone, a data file that is
  missing or malformed are findings (an unreadable manifest is ``UNREADABLE_REQUIREMENT``'s).
* **cannot judge** (exit 2): a readable version needs a feature lancespec does not know (``judgement``).
* **cannot read** (exit 2): the reader's setup, not the dataset, keeps lancespec from reading: a storage
  option, access refused, a bucket that does not exist, a store that does not answer, a limit reached, an
  unsupported scheme or a malformed URI, no dataset at the URI (``errors.CannotRead``). The rule: whatever
  ``CannotRead`` any read of the run meets (the run's ``Storage`` notes it, even where a check handled it)
  stops certification; certify raises it with the report attached (``cannot_read`` says why; it holds no
  finding, since nothing read after or around it can be trusted), and the command line prints one line
  naming the cause and what to do, and no requirement id.
* **conformant** (exit 0).

A check failed by a bug of lancespec is exit 3 (the report then holds what was checked before, and
``internal_error`` says where). A version that does not exist is a command-line mistake: certify raises
VersionNotFound naming the versions there are (one line, exit 2).
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable, Collection, Iterable, Mapping

from reference.collector import fewer_full_collections
from reference.errors import CannotRead, InvalidOption, InvalidRefName, LanceSpecError, VersionNotFound
from reference.layout import BRANCHES_DIR, VERSIONS_DIR, branch_root, ref_name_from_file
from reference.limits import DEFAULT_LIMITS, Limits
from reference.store import Storage, open_store
from reference.store.uri import join, scheme_of
from reference.table import Dataset, Head, Snapshot

from .baseline import settle
from .carry import Carry, Run
from .catalogue import load_catalogue
from .checks import REGISTRY, Check, DatasetContext, HistoryCache, VersionContext, select
from .fetch import FetchProgress, Observed, RunStorage
from .findings import Finding, Report
from .judgement import cannot_judge
from .locate import what_is_there
from .report import version_ranges
from .since import Evidence, Present, Since, identity, selection


class CertifyError(Exception):
    """A check failed in a way that is a bug of lancespec, not a finding about the dataset: the command line
    exits 3 with ``report``, the report of everything checked before the failure, which ``certify``
    attaches (a ``conformance.findings.Report``)."""

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.report: Report | None = None


#: Called as progress(done, total, description) while certifying.
Progress = Callable[[int, int, str], None]

#: Called as offload(root, versions, checks) once per root, with its readable versions ((version, snapshot),
#: oldest first) and the version checks named in ``certify(..., offloaded=...)``, which certify then does not
#: run itself: the caller runs them (``conformance.spark`` as a distributed job, while certify goes on with
#: the root's other checks) and adds their findings (``order_findings``).
Offload = Callable[[Dataset, list[tuple[int, Snapshot]], list[Check]], None]

UNREADABLE_REQUIREMENT = "HIST-001"


def bug_site(exc: BaseException) -> str:
    """``file:line in function`` of the innermost frame of ``exc``: where the bug is."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "unknown place"
    frame = frames[-1]
    return f"{frame.filename}:{frame.lineno} in {frame.name}"


def _run(check: Check, ctx: VersionContext | DatasetContext) -> bool:
    """Run ``check`` into ``ctx``; False when it stopped short on something it could not read."""
    ctx.declared = check.requirements
    try:
        check.func(ctx)
    except LanceSpecError as exc:
        # The check met something it could not read: that is itself a breach of what it checks.
        ctx.finding(check.requirements[0], exc.where or ctx.dataset.uri, f"unreadable: {exc.message}",
                    code="unreadable")
        return False
    except Exception as exc:
        at = f" v{ctx.version}" if ctx.version is not None else ""
        raise CertifyError(f"check {check.name} failed on{at}: {type(exc).__name__}: {exc} (at {bug_site(exc)})",
                           ctx.dataset.uri) from exc
    return True


def _unreadable(dataset: Dataset, version: int | None, path: str, message: str) -> Finding:
    return Finding(UNREADABLE_REQUIREMENT, load_catalogue()[UNREADABLE_REQUIREMENT].severity, version, path, message,
                   dataset.branch_name)


def _roots(main: Dataset, all_versions: bool) -> list[Dataset]:
    """The main root, and with ``all_versions`` every branch root. Branches are found by their ref file
    names, without decoding the files: a damaged ref is the refs checks' finding, not a reason to stop."""
    if not all_versions:
        return [main]
    roots = [main]
    names = sorted(ref_name_from_file(info.uri.rsplit("/", 1)[-1]) for info in main.ref_files(BRANCHES_DIR))
    for name in names:
        try:
            roots.append(Dataset(branch_root(main.uri, name), main.storage, main_root=main.uri, branch=name))
        except InvalidRefName:
            continue  # a name that would leave tree/: refs.branches reports it (REF-003), nothing is listed
    return roots


@fewer_full_collections()  # a long run keeps millions of objects alive (reference.collector)
def certify(uri: str, *, version: int | None = None, all_versions: bool = False,
            areas: Iterable[str] | None = None, storage_options: Mapping[str, str] | None = None,
            progress: Progress | None = None, offload: Offload | None = None,
            offloaded: Collection[str] = (), io_parallelism: int | None = None, lazy: bool = False,
            limits: Limits = DEFAULT_LIMITS, set_aside: Mapping[str, str] | None = None,
            storage: Storage | None = None, since: str | None = None, with_evidence: bool = True) -> Report:
    """Certify the dataset at ``uri``: its latest version, ``version``, or (``all_versions``) every
    attached version of the main root and of every branch, with the dataset-wide checks. With ``offload``,
    the version checks named in ``offloaded`` are handed to it instead of run here (see ``Offload``).
    ``limits``: the sizes readers trust (``reference.limits``). A check that fails with anything but a
    ``LanceSpecError`` is a lancespec bug: CertifyError, carrying the report of what was checked before.

    Per root, the I/O comes first and in parallel (``conformance.fetch``; ``io_parallelism`` requests at
    once): the manifests of every version selected, then every read the selected version checks declare
    (``Check.prefetch``); the checks then run one by one on what was fetched, each fragment-local check
    judging a fragment that earlier versions of the root hold unchanged once (``conformance.carry``).
    ``lazy`` skips both: each check reads what it needs when it needs it, one request at a time, through an
    uncached store, on every fragment of every version (the behaviour the plan and the carry must reproduce
    exactly; tests compare the two).

    Findings are marked with the known divergence they match, and set aside when ``set_aside`` (ids to
    where they came from: ``conformance.baseline``) names it or its requirement. ``storage``: the store to
    read through, for a caller that draws from the same reads afterwards (``certify --format html`` hands its
    ``RunStorage`` to the page, so one run feeds every format); made from the options otherwise.

    A run that is not ``lazy`` leaves in the report the evidence an incremental run needs
    (``report.evidence``), unless ``with_evidence`` is False (a caller that writes no JSON report: no later
    run can be based on this one, and a million files' identities are not worth gathering); ``since``, the
    path of an earlier run's JSON report, makes this run one (``conformance.since``: SinceRefused when that
    report cannot be its basis)."""
    if lazy and since is not None:
        raise InvalidOption("an incremental run (since) cannot be lazy")
    if storage is None:
        storage = (open_store(storage_options, limits) if lazy
                   else RunStorage(storage_options, io_parallelism, limits))
    main = Dataset(uri, storage)
    report = Report(main.uri, set_aside=dict(set_aside or {}))
    chosen = [c.name for c in select(areas)]
    asked = selection(main.uri, version, all_versions, chosen, limits, offloaded if offload is not None else ())
    earlier = Since.load(since, asked) if since is not None else None
    evidence = None if lazy or not with_evidence else Evidence(asked)
    try:
        _certify_into(report, main, version, all_versions, areas, progress, offload, offloaded,
                      evidence, earlier)
        stop_if_unread(storage)
        if evidence is not None:  # what an incremental run found is still so: the store did not change under it
            present = earlier.present if earlier is not None and earlier.present is not None else None
            evidence.seal(present or Present(storage, main.uri))
            stop_if_unread(storage)
        report.evidence = evidence
        report.carried_over = earlier.summary if earlier is not None else None
    except CannotRead as exc:
        report.cannot_read = str(exc)
        report.findings = []
        exc.report = report
        raise
    except CertifyError as exc:
        report.internal_error = str(exc)
        exc.report = report
        raise
    finally:
        report.findings = order_findings(report.findings)
        settle(report)
    return report


def stop_if_unread(storage: Storage) -> None:
    """Raise the first ``CannotRead`` any read through ``storage`` met, even one a check handled: what the
    run could not read for its setup's sake cannot be judged (the rule of the module docstring)."""
    if storage.cannot_read is not None:
        raise storage.cannot_read


def _certify_into(report: Report, main: Dataset, version: int | None, all_versions: bool,
                  areas: Iterable[str] | None, progress: Progress | None, offload: Offload | None,
                  offloaded: Collection[str], evidence: Evidence | None, since: Since | None) -> None:
    checks = list(select(areas))
    version_checks = [c for c in checks if c.scope == "version"]
    dataset_checks = [c for c in checks if c.scope == "dataset"]
    report.checks_run = [c.name for c in checks]
    report.requirements_checked = sorted({r for c in checks for r in c.requirements})
    try:
        entries = main.version_entries(allow_mixed=True)
    except CannotRead:
        raise
    except LanceSpecError as exc:
        report.readable = False
        report.findings.append(_unreadable(main, None, exc.where or main.uri, exc.message))
        return
    if not entries:
        raise what_is_there(main.storage, main.uri)

    plan: list[tuple[Dataset, list[int]]] = []
    for root in _roots(main, all_versions):
        try:
            listed = [e.version for e in root.version_entries(allow_mixed=True)]
        except CannotRead:
            raise
        except LanceSpecError as exc:
            report.findings.append(_unreadable(root, None, exc.where or root.uri, exc.message))
            continue
        if root is main and not all_versions:
            wanted = version if version is not None else listed[-1]
            if wanted not in listed:
                raise VersionNotFound(f"version {wanted} does not exist; the versions are {version_ranges(listed)}",
                                      main.uri)
            listed = [wanted]
        plan.append((root, listed))

    local_checks = [c for c in version_checks if offload is None or c.name not in offloaded]
    moved = [c for c in version_checks if offload is not None and c.name in offloaded]
    carry = isinstance(main.storage, RunStorage)  # not when lazy
    for root, versions in plan:
        label = root.branch_name or "main"
        carried_over = _carried_over(main, root, versions, evidence, since)
        snapshots: dict[int, Head] = {}
        for v, loaded in zip(versions, _load_snapshots(main.storage, root, versions, carried_over, label, progress),
                             strict=True):
            if isinstance(loaded, CannotRead):
                raise loaded
            if not isinstance(loaded, Head):
                report.findings.append(_unreadable(root, v, loaded.where or root.uri, loaded.message))
                if not all_versions or (root is main and v == versions[-1]):
                    report.readable = False
            elif reasons := cannot_judge(loaded):
                report.cannot_judge.extend(reasons)
            else:
                snapshots[v] = loaded
        judged = {v: s for v, s in snapshots.items() if isinstance(s, Snapshot)}
        if since is not None:
            _carry_findings(report, label, set(snapshots) - set(judged), evidence, since)
        if offload is not None and moved:
            offload(root, sorted(judged.items()), moved)
        observed = _observe(main.storage, evidence is not None)
        _prefetch(main.storage, root, judged, local_checks, label, progress)
        stop_if_unread(main.storage)
        runs = {c.name: _runner(root, c) for c in local_checks}
        carried = Carry({n: r for n, r in runs.items() if carry and REGISTRY[n].fragment_local})
        for i, (v, snapshot) in enumerate(sorted(judged.items())):
            if progress:
                progress(i, len(judged), f"{label} v{v} checks")
            found = carried.judge(v, snapshot)
            for name, run in runs.items():
                made = found[name] if name in found else run(v, snapshot)[0]
                report.findings.extend(made)
                if evidence is not None:
                    evidence.add_version_findings(made)
        if isinstance(main.storage, RunStorage):
            main.storage.observed = None
        if evidence is not None and observed is not None:
            for v, snapshot in judged.items():
                evidence.root(label).judged(v, snapshot)
            evidence.root(label).observed(observed, join(root.uri, VERSIONS_DIR))
            evidence.answered.update((uri, identity(info)) for uri, info in observed.heads.items())
        observed = None  # what it noted (every data file of a large version) is not kept through the dataset checks
        _prefetch(main.storage, root, snapshots, dataset_checks, label, progress)
        stop_if_unread(main.storage)
        if progress:
            progress(0, 1, f"{label} dataset checks")
        attached = HistoryCache()
        for check in dataset_checks:
            dctx = DatasetContext(root, versions=sorted(snapshots), snapshots=snapshots, attached=attached)
            _run(check, dctx)
            report.findings.extend(dctx.findings)
        stop_if_unread(main.storage)
        if root is main:
            report.versions.extend(versions)
        else:
            report.branch_versions[label] = list(versions)
    if progress:
        progress(1, 1, "done")


def _carried_over(main: Dataset, root: Dataset, versions: list[int], evidence: Evidence | None,
                  since: Since | None) -> set[int]:
    """The ``versions`` of ``root`` whose version checks ``since`` proves need not run (none without it);
    notes the root's first version in ``evidence`` (``conformance.since``)."""
    entries = root.version_entries(allow_mixed=True)  # listed before: answered from the run's cache
    first = entries[0].uri if entries else None
    label = root.branch_name or "main"
    if evidence is not None:
        evidence.root(label).first = first
    if since is None:
        return set()
    wanted = set(versions)
    return since.carry(main.storage, main.uri, label, first, {e.version: e.uri for e in entries if e.version in wanted})


def _carry_findings(report: Report, label: str, carried: set[int], evidence: Evidence | None, since: Since) -> None:
    """Add to ``report`` the earlier report's version-check findings on the ``carried`` versions of root
    ``label``, and to ``evidence`` the earlier evidence of those versions."""
    findings = since.findings(label, carried)
    report.findings.extend(findings)
    if evidence is not None and carried:
        evidence.root(label).carried(since.earlier.roots[label], carried)
        evidence.add_version_findings(findings)


def _observe(storage: Storage, wanted: bool) -> Observed | None:
    """Start noting what the reads through ``storage`` ask about, when ``wanted`` and it can."""
    if not wanted or not isinstance(storage, RunStorage):
        return None
    storage.observed = Observed()
    return storage.observed


def _runner(root: Dataset, check: Check) -> Run:
    """``check`` as a function of one version of ``root`` (``carry.Run``)."""

    def run(v: int, snapshot: Snapshot) -> tuple[list[Finding], bool]:
        ctx = VersionContext(root, version=v, snapshot=snapshot)
        complete = _run(check, ctx)
        return ctx.findings, complete

    return run


def _load_snapshots(storage: Storage, root: Dataset, versions: list[int], heads: set[int], label: str,
                    progress: Progress | None) -> list[Head | LanceSpecError]:
    """The snapshot of each version (or why it cannot be read), fetched and decoded in parallel through a
    ``RunStorage``, one by one otherwise; for a version in ``heads`` (one an incremental run carries over),
    its manifest decoded without resolving its files, which no version check will ask for."""

    def load(v: int) -> Head | LanceSpecError:
        try:
            return root.head(v, strict=False) if v in heads else root.snapshot(v, strict=False)
        except LanceSpecError as exc:
            return exc

    jobs = [functools.partial(load, v) for v in versions]
    if not isinstance(storage, RunStorage):
        return [job() for job in jobs]
    return storage.fetch_all(jobs, remote=_remote(root), progress=_reading(progress, label, "manifest(s)"))


def _prefetch(storage: Storage, root: Dataset, snapshots: Mapping[int, Head], checks: list[Check],
              label: str, progress: Progress | None) -> None:
    """Every read the ``checks`` declare for the ``snapshots`` (a version check's: for the resolved ones), each
    distinct read once, in parallel (none without a ``RunStorage``: the checks then read as they go)."""
    if not isinstance(storage, RunStorage):
        return
    jobs: dict[tuple[str, ...], Callable[[], object]] = {}
    prefetchers = {(c.scope, c.prefetch): c for c in checks if c.prefetch is not None}  # checks may share one
    for check in prefetchers.values():
        assert check.prefetch is not None
        contexts: list[VersionContext | DatasetContext] = (
            [VersionContext(root, version=v, snapshot=snapshot) for v, snapshot in snapshots.items()
             if isinstance(snapshot, Snapshot)]
            if check.scope == "version"
            else [DatasetContext(root, versions=sorted(snapshots), snapshots=dict(snapshots))])
        for ctx in contexts:
            for key, job in check.prefetch(ctx):
                jobs.setdefault(key, job)
    storage.prefetch(list(jobs.values()), remote=_remote(root), progress=_reading(progress, label, "file-read job(s)"))


def _reading(progress: Progress | None, label: str, what: str) -> FetchProgress:
    """``progress`` as a ``fetch_all`` reading ``what`` reports it."""

    def tick(done: int, total: int) -> None:
        if progress:
            progress(done, total, f"{label}: reading {total:,} {what}")

    return tick


def _remote(root: Dataset) -> bool:
    """Whether the root lives on an object store (bases elsewhere are read as the root's are)."""
    return scheme_of(root.uri) != "file"


def order_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Findings without duplicates, in the order reports list them: a total order over every field, so that
    the same findings found in any order (threads, Spark tasks) give the same list."""
    return sorted(set(findings), key=lambda f: (f.requirement, f.version or 0, f.path, f.message, f.branch or "",
                                                  f.detail or "", f.severity, f.known or "", f.set_aside or "",
                                                  f.code))


__all__ = ["CertifyError", "Offload", "Progress", "bug_site", "certify", "order_findings", "stop_if_unread"]
