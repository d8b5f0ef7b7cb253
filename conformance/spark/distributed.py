"""Certify a dataset with Spark: the per-file checks as a job over fragments, the rest on the driver.

The checks that follow every file a version references to storage take most of certify's time; they are
registered *fragment-local* (``checks.Check``), so what they find in a version is the union of what they
find in any partition of its fragments. Here:

1. The driver runs ``certify`` itself with every check but the fragment-local ones (``fragment_checks()``).
   Once a root's snapshots are read, certify hands them over (its ``offload`` hook) before its own checks of
   the root, and:
2. a Spark job checks the root's fragments, in a thread of the driver, while certify goes on. Each task
   gets slices of versions' fragments (the rest of each manifest is broadcast once), builds each
   version's snapshot *restricted to its slice* with ``reference.table.build_snapshot`` and runs the very
   same check functions on it through certify's own runner. Tasks return findings, not files.
3. The driver waits for the jobs and merges both sets of findings in certify's order: the report equals
   ``certify``'s on the same dataset (``tests/spark/test_equivalence.py``, every pylance shape and golden
   case, clean and damaged, and a long history).

Executors reach storage through lancespec's own store with the storage options passed down (S3 included;
no s3a, no Hadoop file system), making every read their slices' checks declare at once
(``conformance.fetch``). Tasks are cut only between *cells* (a root's run of versions at one position,
``_partitions``), so a file the versions of a run share is read and judged once, as certify reads it; a
long history is planned as whole versions, its runs spread over the tasks (``_plan``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from reference.codec import ManifestFile
from reference.errors import CannotRead, InvalidOption
from reference.layout import ManifestNaming
from reference.limits import DEFAULT_LIMITS, Limits
from reference.proto import table_pb2, transaction_pb2
from reference.store import ObjectStore
from reference.store.uri import scheme_of
from reference.table import Dataset, FragmentViews, ResolutionMemo, Snapshot, build_snapshot

from ..baseline import settle
from ..carry import Additions, Carry
from ..certify import CertifyError, _runner, certify, order_findings
from ..checks import Check, VersionContext, all_checks
from ..fetch import RunStorage
from ..findings import Finding, Report
from .session import BackgroundSession

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["FINDINGS_SCHEMA", "SparkCertification", "certify_with_spark", "findings_frame", "fragment_checks"]


#: The schema of the findings DataFrame (one row per finding, as in certify's JSON report).
FINDINGS_SCHEMA = ("requirement string, severity string, version long, branch string, path string, detail string, "
                   "message string, known_divergence string, set_aside_by string, code string")

#: Tasks per core when the caller does not fix ``fragments_per_task``: enough to even out slow tasks.
TASKS_PER_CORE = 4


def fragment_checks() -> frozenset[str]:
    """The names of the checks registered fragment-local (``checks.Check``), run in executors; every other
    check runs on the driver."""
    return frozenset(name for name, check in all_checks().items() if check.fragment_local)


@dataclass(frozen=True)
class _VersionWork:
    """One version, as executors need it: everything of its decoded manifest file but the fragments (the
    ``header``), as the messages' serialized bytes (lossless; the protobuf classes do not pickle). Each
    task adds its slice of the fragments to the header and builds its snapshot from that, exactly as the
    driver built the whole one: what a task decodes and holds grows with its slice, not the version."""

    root: str
    main_root: str
    branch: str | None
    version: int
    naming: ManifestNaming
    manifest_uri: str
    header: bytes
    transaction: bytes | None
    transaction_bytes: bytes | None
    index_section: bytes | None
    size: int
    checks: tuple[str, ...]
    fragments: int
    run: int = 0

    @classmethod
    def of(cls, root: Dataset, snapshot: Snapshot, checks: Iterable[str], run: int = 0) -> _VersionWork:
        """The work of ``snapshot``, a version of ``root``, for ``checks``; ``run``: its run (``_Runs``)."""
        mf = snapshot.manifest_file
        header = table_pb2.Manifest()
        header.CopyFrom(mf.manifest)
        del header.fragments[:]
        return cls(root.uri, root.main_root, root.branch_name, snapshot.version, snapshot.naming,
                   snapshot.manifest_uri, header.SerializeToString(),
                   None if mf.transaction is None else mf.transaction.SerializeToString(), mf.transaction_bytes,
                   None if mf.index_section is None else mf.index_section.SerializeToString(), mf.size,
                   tuple(checks), len(snapshot.fragments), run)

    def snapshot(self, fragments: bytes, memo: ResolutionMemo | None = None) -> Snapshot:
        """The snapshot of this version restricted to ``fragments`` (``fragment_slice``'s bytes): built by
        ``build_snapshot`` from the manifest with only those fragments (``memo``: what earlier snapshots of
        the root resolved, as a ``Dataset`` keeps it, so a fragment several versions share is resolved once)."""
        manifest = table_pb2.Manifest.FromString(self.header)
        manifest.MergeFromString(fragments)  # appends the slice to the (empty) repeated field
        manifest_file = ManifestFile(
            manifest,
            None if self.transaction is None else transaction_pb2.Transaction.FromString(self.transaction),
            self.transaction_bytes,
            None if self.index_section is None else table_pb2.IndexSection.FromString(self.index_section),
            self.size,
            fragments,  # the slice is a Manifest section holding only fragments: its columns decode from it
        )
        return build_snapshot(self.root, self.version, self.naming, self.manifest_uri, manifest_file, memo)


def fragment_slice(manifest: table_pb2.Manifest, start: int, stop: int) -> bytes:
    """A manifest message holding only ``manifest.fragments[start:stop]``, serialized."""
    part = table_pb2.Manifest()
    part.fragments.extend(manifest.fragments[start:stop])
    return part.SerializeToString()


@dataclass
class SparkCertification:
    """The outcome of ``certify_with_spark``.

    ``report``: the same Report ``certify`` returns. ``findings_df``: its findings as a Spark DataFrame
    (``FINDINGS_SCHEMA``) of ``spark`` (the session, or the ``BackgroundSession`` that makes one), made when
    first asked for. ``tasks``, ``fragments`` and
    ``files``: the distributed jobs' size (files = data and deletion files of the fragments checked,
    summed over versions). ``seconds``: the whole call;
    ``job_seconds``: the Spark jobs alone, from the first start to the last end (they run while the driver
    runs ``certify``); ``task_seconds`` and ``task_cpu_seconds``: each task's time in
    the check code, wall clock and CPU. ``phases``: seconds per step (``certify``: the driver's own checks,
    manifests and snapshots included, and handing the versions over, which is ``offload``: the versions'
    headers for the executors; ``slices``: the fragment slices serialized, and ``broadcast``, both in the
    jobs' threads; ``job``: the
    Spark jobs, collect included, as ``job_seconds``; ``wait``: the driver waiting for them after ``certify``,
    the part of ``job`` its own work did not hide; ``merge``), and ``session``: how long a job waited,
    in its thread, for a session still starting (``background_session``; the driver worked meanwhile).
    """

    report: Report
    spark: Any = field(default=None, repr=False, compare=False)
    tasks: int = 0
    fragments: int = 0
    files: int = 0
    seconds: float = 0.0
    job_seconds: float = 0.0
    versions: list[tuple[str, int]] = field(default_factory=list)
    task_seconds: list[float] = field(default_factory=list)
    task_cpu_seconds: list[float] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        return self.report.findings

    @functools.cached_property
    def findings_df(self) -> DataFrame:
        """The findings as a DataFrame, built on first use (creating one costs the driver about 0.1 s, and
        the first of a session seconds, which a caller reading only the report does not pay)."""
        return findings_frame(_session(self.spark), self.report.findings)


def findings_frame(spark: SparkSession, findings: Iterable[Finding]) -> DataFrame:
    """Findings as a Spark DataFrame with ``FINDINGS_SCHEMA`` (the fields of ``Finding.to_json``, in order)."""
    return spark.createDataFrame([tuple(f.to_json().values()) for f in findings], FINDINGS_SCHEMA)


# --- executor side ----------------------------------------------------------------------------------


#: The store backends of this (executor) process, by storage options: its tasks reuse their connections.
_BACKENDS: dict[tuple[tuple[tuple[str, str], ...], Limits], dict[str, ObjectStore]] = {}


def check_fragments(works: Mapping[int, _VersionWork], storage_options: Mapping[str, str] | None,
                    tasks: Iterable[tuple[int, int, int, bytes]],
                    limits: Limits = DEFAULT_LIMITS) -> Iterator[tuple[Any, ...]]:
    """Run each task's checks on its version restricted to its slice ``[start, stop)`` of the fragments.

    Yields ``("finding", Finding)``, ``("done", fragments, files, seconds, cpu seconds)`` per task,
    ``("error", text)`` when a check fails by a bug of lancespec (where certify raises CertifyError), and
    ``("cannot_read", message, where)`` last when a read met a ``CannotRead`` (where certify raises it)."""
    # one per partition: the read cache lives as long as it does; the connections outlive it
    backends = _BACKENDS.setdefault((tuple(sorted((storage_options or {}).items())), limits), {})
    storage = RunStorage(storage_options, limits=limits, backends=backends)
    registry: dict[str, Check] = all_checks()
    parts: list[tuple[_VersionWork, int, int, Snapshot | str]] = []
    jobs: dict[tuple[str, ...], Callable[[], object]] = {}
    roots: dict[tuple[str, str, str | None], tuple[Dataset, ResolutionMemo]] = {}  # one per root, as certify's
    added: dict[tuple[str, int, tuple[str, ...]], Additions] = {}
    for key, start, stop, fragments in tasks:  # first every slice's reads, made at once
        work = works[key]
        try:
            if (work.root, work.main_root, work.branch) not in roots:
                roots[work.root, work.main_root, work.branch] = (
                    Dataset(work.root, storage, main_root=work.main_root, branch=work.branch), ResolutionMemo())
            dataset, memo = roots[work.root, work.main_root, work.branch]
            part = work.snapshot(fragments, memo)
            if len(part.fragments) != stop - start:
                raise AssertionError(f"the slice holds {len(part.fragments)} fragments, not {stop - start}")
            # the reads of what the slice held in the version before were declared for that version
            new = added.setdefault((work.root, start, work.checks), Additions()).of(part)
            for prefetch in dict.fromkeys(registry[name].prefetch for name in work.checks):  # may share one
                if prefetch is None:
                    continue
                for read, job in prefetch(VersionContext(dataset, version=work.version, snapshot=new)):
                    jobs.setdefault(read, job)
        except Exception as exc:
            parts.append((work, start, stop, f"{type(exc).__name__}: {exc}"))
            continue
        parts.append((work, start, stop, part))
    started, cpu = time.perf_counter(), time.process_time()
    storage.prefetch(list(jobs.values()), remote=any(scheme_of(w.root) != "file" for w, *_ in parts))
    reads = (time.perf_counter() - started, time.process_time() - cpu)
    sliced = max(1, sum(stop - start for _, start, stop, _ in parts))
    carries: dict[tuple[str, int, tuple[str, ...]], Carry] = {}
    for work, start, stop, piece in parts:  # then the checks, on what was read
        started, cpu = time.perf_counter(), time.process_time()
        try:
            if isinstance(piece, str):
                raise CertifyError(piece, work.root)
            # the same slice of the versions of a root comes in ascending order: what it held unchanged in
            # the version before is carried, as certify carries it over whole versions (conformance.carry)
            slot = (work.root, start, work.checks)
            if slot not in carries:
                dataset = roots[work.root, work.main_root, work.branch][0]
                carries[slot] = Carry({name: _runner(dataset, registry[name]) for name in work.checks})
            for found in carries[slot].judge(work.version, piece).values():
                yield from (("finding", f) for f in found)
        except Exception as exc:
            yield ("error", f"{work.root} v{work.version} fragments [{start}, {stop}): {type(exc).__name__}: {exc}")
            continue
        files = sum(len(f.files) + f.HasField("deletion_file") for f in piece.manifest.fragments)  # none resolved
        share = (stop - start) / sliced  # this slice's share of the reads
        yield ("done", len(piece.fragments), files, time.perf_counter() - started + share * reads[0],
               time.process_time() - cpu + share * reads[1])
    if storage.cannot_read is not None:  # the reader's setup, not the dataset: the driver stops (certify's rule)
        yield ("cannot_read", storage.cannot_read.message, storage.cannot_read.where)


def _executor(bc: Any, storage_options: dict[str, str] | None, limits: Limits,
              groups: Iterable[list[tuple[int, int, int, bytes]]]) -> Iterator[tuple[Any, ...]]:
    return check_fragments(bc.value, storage_options, [task for group in groups for task in group], limits)


# --- driver side ------------------------------------------------------------------------------------


class _Runs:
    """Numbers the versions of each root into *runs*, given oldest first: a version that does not hold every
    fragment id of the version before it (a compaction, an overwrite, a delete of whole fragments) starts a
    new run. The carry (``conformance.carry``) never crosses into such a version, whose fragments are judged
    whole anyway, so cutting a root's versions into tasks between runs costs no judgement twice."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[int, npt.NDArray[np.uint64]]] = {}

    def of(self, root: str, snapshot: Snapshot) -> int:
        """The run of ``snapshot``, the next version of ``root``."""
        fragments = snapshot.fragments
        columns = fragments.columns if isinstance(fragments, FragmentViews) else None
        ids = (columns.id if columns is not None and isinstance(fragments, FragmentViews)
               and fragments.positions == range(len(columns.id))
               else np.fromiter((f.id for f in snapshot.manifest.fragments), np.uint64))
        run, before = self._last.get(root, (0, None))
        if before is not None and not np.isin(before, ids).all():
            run += 1
        self._last[root] = (run, ids)
        return run


def _plan(works: Mapping[int, _VersionWork], parallelism: int, fragments_per_task: int | None,
          tasks_per_core: int) -> list[tuple[int, int, int]]:
    """Slices ``(version key, start, stop)`` of every version's fragments, none spanning two versions, in
    cell order (root, run, start, version: ``_partitions`` never cuts a cell). By default the versions are
    cut into as few slices as make ``parallelism * tasks_per_core`` cells: a long history of many runs into
    whole versions (a slice costs its task a snapshot, a carry step and reads declared, whatever its size),
    one version (one run) into that many slices."""
    largest = max((w.fragments for w in works.values()), default=0)
    if fragments_per_task is None:
        runs = len({(w.root, w.run) for w in works.values() if w.fragments})
        pieces = max(1, -(-(parallelism * tasks_per_core) // max(1, runs)))  # slices of a version
        fragments_per_task = max(1, -(-largest // pieces))
    if fragments_per_task < 1:
        raise InvalidOption(f"fragments_per_task must be at least 1, got {fragments_per_task}")
    slices = [(key, start, min(start + fragments_per_task, work.fragments))
              for key, work in works.items() for start in range(0, work.fragments, fragments_per_task)]
    return sorted(slices, key=lambda s: (works[s[0]].root, works[s[0]].run, s[1], s[0]))


def _partitions(works: Mapping[int, _VersionWork], plan: Sequence[tuple[int, int, int]],
                count: int) -> list[list[tuple[int, int, int]]]:
    """The plan's slices in at most ``count`` tasks, cut only between cells: every slice at one position
    (root, start) of every version of one run (``_Runs``) lands in the same task, so a file the run's
    versions share (an append keeps the fragments before it) is read once and its findings carried
    (``conformance.carry``). Cells go to the tasks in order, a task taking the cells whose middle slice
    falls in its even share of all the slices (one cell each when there are no more cells than tasks)."""
    cells: list[list[tuple[int, int, int]]] = []
    for item in plan:  # sorted by cell: equal cells are adjacent
        first = cells[-1][0] if cells else None
        if first is not None and _cell(works, first) == _cell(works, item):
            cells[-1].append(item)
        else:
            cells.append([item])
    count, total, done = min(max(1, count), len(cells)), len(plan), 0
    groups: list[list[tuple[int, int, int]]] = [[]]
    for i, cell in enumerate(cells):
        # a new task once the cell's middle passes this task's share, or when each task left needs a cell
        if groups[-1] and (len(cells) - i <= count - len(groups)
                           or (2 * done + len(cell)) * count > 2 * total * len(groups)):
            groups.append([])
        groups[-1].extend(cell)
        done += len(cell)
    return groups if plan else []


def _cell(works: Mapping[int, _VersionWork], item: tuple[int, int, int]) -> tuple[str, int, int]:
    """The cell of a slice: its root, run and position."""
    work = works[item[0]]
    return work.root, work.run, item[1]


def _session(spark: SparkSession | BackgroundSession) -> SparkSession:
    """The session ``spark`` is, or makes once started (waits for a ``BackgroundSession``)."""
    return spark.session() if isinstance(spark, BackgroundSession) else spark


def _context(spark: SparkSession | BackgroundSession) -> SparkContext:
    """The SparkContext of ``spark``, all a job needs (waits for a ``BackgroundSession``'s start)."""
    return spark.context() if isinstance(spark, BackgroundSession) else spark.sparkContext


class _Jobs:
    """The Spark jobs of one ``certify_with_spark`` call: one per root, handed its versions by certify's
    ``offload`` hook as soon as the root's snapshots are read, and run in a thread of their own while the
    driver goes on with its own checks of the root (and with the next roots); ``rows`` waits for them all.
    A session still starting (``BackgroundSession``) is waited for in the job's thread, so its start-up runs
    beside the driver's reading and judging too."""

    def __init__(self, spark: SparkSession | BackgroundSession, options: dict[str, str] | None, limits: Limits,
                 fragments_per_task: int | None, result: SparkCertification) -> None:
        self._spark = spark
        self._options, self._limits, self._fragments_per_task = options, limits, fragments_per_task
        self._result = result
        self._runs = _Runs()
        self._threads: list[threading.Thread] = []
        self._rows: list[tuple[Any, ...]] = []
        self._failures: list[BaseException] = []
        self._group = f"lancespec-{uuid.uuid4().hex}"
        self._span = [math.inf, 0.0]  # when the first job started and the last one ended
        self._cancelled = False
        self._lock = threading.Lock()  # around _span, _rows and the result's phases and tasks: the threads update them

    def offload(self, root: Dataset, versions: list[tuple[int, Snapshot]], checks: list[Check]) -> None:
        """Certify's ``Offload``: the root's versions made into work for the executors (here, in the driver's
        thread, which numbers the runs in order), then planned, sliced and run as a job in a thread. A session
        whose start has failed already stops the driver here (raised), rather than after its checks."""
        if isinstance(self._spark, BackgroundSession) and self._spark.ready():
            self._spark.context()
        at = time.perf_counter()
        names = [c.name for c in checks]
        works = {key: _VersionWork.of(root, snapshot, names, self._runs.of(root.uri, snapshot))
                 for key, (_, snapshot) in enumerate(versions)}
        self._result.versions.extend((w.branch or "main", w.version) for w in works.values())
        with self._lock:
            self._result.phases["offload"] += time.perf_counter() - at
        if not any(w.fragments for w in works.values()):
            return
        thread = threading.Thread(target=self._job, args=(works, [versions]), name=f"lancespec-spark-{root.uri}",
                                  daemon=True)
        self._threads.append(thread)
        thread.start()

    def _job(self, works: dict[int, _VersionWork], held: list[list[tuple[int, Snapshot]]]) -> None:
        phases = self._result.phases
        try:
            at = time.perf_counter()
            sc = _context(self._spark)
            with self._lock:
                phases["session"] = max(phases["session"], time.perf_counter() - at)
            if self._cancelled:
                return
            plan = _plan(works, sc.defaultParallelism, self._fragments_per_task, TASKS_PER_CORE)
            at = time.perf_counter()
            versions = held.pop()  # the snapshots are kept no longer than the slices need them
            groups = [[(key, start, stop, fragment_slice(versions[key][1].manifest, start, stop))
                       for key, start, stop in group]
                      for group in _partitions(works, plan, sc.defaultParallelism * TASKS_PER_CORE)]
            del versions
            sliced, at = time.perf_counter() - at, time.perf_counter()
            bc = sc.broadcast(works)
            with self._lock:
                self._result.tasks += len(groups)
                phases["slices"] += sliced
                phases["broadcast"] += time.perf_counter() - at
                self._span[0] = min(self._span[0], time.perf_counter())
        except BaseException as exc:  # handed to the driver's thread by rows()
            self._failures.append(exc)
            return
        try:
            sc.setJobGroup(self._group, "lancespec spark-certify", interruptOnCancel=True)
            rows = (sc.parallelize(groups, len(groups))  # one group per partition
                    .mapPartitions(functools.partial(_executor, bc, self._options, self._limits))
                    .collect())
            with self._lock:
                self._rows.extend(rows)
        except BaseException as exc:
            self._failures.append(exc)
        finally:
            with contextlib.suppress(Exception):
                bc.destroy()
            with self._lock:
                self._span[1] = max(self._span[1], time.perf_counter())

    def rows(self) -> list[tuple[Any, ...]]:
        """Every job's rows, once all have ended; a job's failure (the session's start's included) raised here."""
        for thread in self._threads:
            thread.join()
        if self._failures:
            raise self._failures[0]
        if self._span[1]:
            self._result.job_seconds = self._result.phases["job"] = self._span[1] - self._span[0]
        return self._rows

    def cancel(self) -> None:
        """Stop the jobs still running (certify failed: their findings would be thrown away) and wait for them;
        a job still waiting for its session does not start."""
        self._cancelled = True
        if self._threads and (not isinstance(self._spark, BackgroundSession) or self._spark.ready()):
            with contextlib.suppress(Exception):
                _context(self._spark).cancelJobGroup(self._group)
        for thread in self._threads:
            thread.join()


def certify_with_spark(spark: SparkSession | BackgroundSession, uri: str, *, version: int | None = None,
                       all_versions: bool = False, areas: Iterable[str] | None = None,
                       storage_options: Mapping[str, str] | None = None,
                       fragments_per_task: int | None = None, limits: Limits = DEFAULT_LIMITS,
                       set_aside: Mapping[str, str] | None = None, since: str | None = None) -> SparkCertification:
    """Certify ``uri`` as ``lancespec certify`` does (same arguments, same Report), with the per-file
    checks run as a Spark job over the fragments of every certified version of each root, while the driver
    runs the other checks. ``spark``: a session, or one still starting (``background_session``), which the
    jobs wait for in their threads while the driver reads and judges.

    ``fragments_per_task``: fragments per Spark task (default: ``_plan``'s, about ``TASKS_PER_CORE`` tasks
    per core of ``spark``). ``storage_options`` go to the driver's and every
    executor's store (pylance-style keys: aws_endpoint, aws_region, allow_http, credentials); ``limits`` and
    ``set_aside`` and ``since`` (an incremental run: the executors judge only the versions certify does not
    carry over): as certify's."""
    started = time.perf_counter()
    options = dict(storage_options) if storage_options is not None else None
    phases = dict.fromkeys(("certify", "offload", "session", "slices", "broadcast", "job", "wait", "merge"), 0.0)
    result = SparkCertification(Report(uri), spark, phases=phases)
    jobs = _Jobs(spark, options, limits, fragments_per_task, result)
    try:
        report = certify(uri, version=version, all_versions=all_versions, areas=areas, storage_options=options,
                         offload=jobs.offload, offloaded=fragment_checks(), limits=limits, set_aside=set_aside,
                         since=since)
    except BaseException:
        jobs.cancel()
        raise
    phases["certify"] = time.perf_counter() - started
    result.report = report
    at = time.perf_counter()
    rows = jobs.rows()
    phases["wait"], at = time.perf_counter() - at, time.perf_counter()
    errors = [r[1] for r in rows if r[0] == "error"]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise CertifyError(f"a fragment check failed in an executor: {errors[0]}{more}", report.uri)
    unread = [r for r in rows if r[0] == "cannot_read"]
    if unread:
        stop = CannotRead(unread[0][1], unread[0][2])
        report.cannot_read, report.findings, stop.report = str(stop), [], report
        raise stop
    if rows:
        found = [r[1] for r in rows if r[0] == "finding"]
        if report.evidence is not None:
            report.evidence.add_version_findings(found)
        report.findings = order_findings([*report.findings, *found])
        settle(report)  # the executors' findings are marked as certify marks its own
        result.fragments = sum(r[1] for r in rows if r[0] == "done")
        result.files = sum(r[2] for r in rows if r[0] == "done")
        result.task_seconds = [r[3] for r in rows if r[0] == "done"]
        result.task_cpu_seconds = [r[4] for r in rows if r[0] == "done"]
        phases["merge"] = time.perf_counter() - at
    result.seconds = time.perf_counter() - started
    return result
