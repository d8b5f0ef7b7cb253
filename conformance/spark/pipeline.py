"""Certify what a Spark pipeline wrote: the Lance output holds exactly the source DataFrame's rows, one
commit made it, no fragment was committed twice, and failed tasks left no orphan data files.

``certify_pipeline_output(spark, source_df, uri, read_version=R)`` judges the output version V (default:
the latest) against R, the version the pipeline read when it started (0: it created the dataset). The
output's *new* fragments (those none of whose data files R references; every fragment when R = 0) are
what the pipeline wrote. Findings use the pipeline requirements below (``PIPELINE_REQUIREMENTS``, all
MUST); the output version is also certified against the catalogue with ``certify_with_spark``.

* PIPE-001 content: the new fragments hold the source's rows: the same row count and, for every column,
  the same order-independent digest (``digest``), plus a row digest that notices values moved between
  rows. Both sides are digested in Spark by one function: the source with ``mapInArrow``, the output by
  executors reading its fragments with pylance. Columns missing on either side are findings.
* PIPE-002 one commit: V's transaction is an append or an overwrite that read R, and no version between
  R and V added data that V holds (a pipeline committing per task would).
* PIPE-003 no fragment written twice: no data file is referenced by two fragments of V (a task's
  fragment committed twice), and no two new fragments hold identical rows while V holds more rows than
  the source (a retried or speculative attempt's output committed beside the first).
* PIPE-004 no orphans: every ``.lance`` file in V's data directories (the root's ``data/`` and every
  base's) is referenced by some version of the dataset or of its branches. With ``started_at`` only
  files written since then count (older orphans are not this job's).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from reference.commit import load_transaction
from reference.errors import LanceSpecError
from reference.layout import DATA_DIR
from reference.store import Storage, open_store
from reference.store.uri import is_absolute, join, normalize
from reference.table import Dataset, Snapshot

from ..certify import order_findings
from ..findings import Finding
from .digest import Digest, digest_batches
from .distributed import SparkCertification, certify_with_spark, findings_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["PIPELINE_REQUIREMENTS", "PipelineCertification", "certify_pipeline_output"]

PIPELINE_REQUIREMENTS: dict[str, str] = {
    "PIPE-001": "the output's new fragments hold exactly the source's rows (row count, a digest per column and "
                "a row digest, order-independent)",
    "PIPE-002": "one commit, made against the version read at job start, produced the output version",
    "PIPE-003": "no fragment is written twice (no data file referenced by two fragments; no task's rows "
                "committed twice)",
    "PIPE-004": "no orphan data files: every data file in the output's data directories is referenced by a "
                "version",
}
SEVERITY = "MUST"
_SHOWN = 5
#: File systems keep modification times coarser than the clock; files this much older than
#: ``started_at`` still count as the job's.
_CLOCK_SLACK = dt.timedelta(seconds=2)


@dataclass
class PipelineCertification:
    """The outcome of ``certify_pipeline_output``.

    ``findings``: the PIPE-* findings; ``certification``: the output version certified against the
    catalogue (None when not asked for); ``all_findings`` both, in certify's order, and ``findings_df``
    the same as a Spark DataFrame. ``source`` and ``output``: the two digests; ``new_fragments``: the ids
    of the fragments the pipeline wrote."""

    uri: str
    version: int
    read_version: int | None
    findings: list[Finding] = field(default_factory=list)
    certification: SparkCertification | None = None
    source: Digest = field(default_factory=Digest)
    output: Digest = field(default_factory=Digest)
    new_fragments: list[int] = field(default_factory=list)
    findings_df: Any = None

    @property
    def all_findings(self) -> list[Finding]:
        format_findings = self.certification.report.findings if self.certification is not None else []
        return order_findings([*format_findings, *self.findings])

    @property
    def must_findings(self) -> list[Finding]:
        return [f for f in self.all_findings if f.severity == "MUST"]

    @property
    def conformant(self) -> bool:
        readable = self.certification is None or self.certification.report.readable
        return readable and not self.must_findings


# --- executor side ----------------------------------------------------------------------------------


def digest_partition(columns: Sequence[str], batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: one row holding the digest (JSON) of the partition's rows, whose columns are
    ``columns`` in order (under positional names: see ``positional``)."""
    digest = digest_batches((b.rename_columns(list(columns)) for b in batches), columns)
    yield pa.RecordBatch.from_pylist([{"digest": digest.to_json()}], schema=pa.schema([("digest", pa.string())]))


def digest_fragments(uri: str, version: int, columns: Sequence[str], storage_options: Mapping[str, str] | None,
                     fragment_ids: Iterable[int]) -> Iterator[tuple[str, int, str]]:
    """Read each fragment of ``uri`` at ``version`` with pylance (deletions applied) and digest its rows:
    ``("ok", id, digest JSON)`` or ``("error", id, why)``."""
    import lance

    dataset = None
    for fragment_id in fragment_ids:
        try:
            if dataset is None:
                dataset = lance.dataset(uri, version=version, storage_options=dict(storage_options or {}))
            fragment = dataset.get_fragment(fragment_id)
            if fragment is None:
                raise LookupError(f"pylance finds no fragment {fragment_id}")
            digest = digest_batches(fragment.to_batches(columns=list(columns)), columns)
        except Exception as exc:
            yield ("error", fragment_id, f"{type(exc).__name__}: {exc}")
            continue
        yield ("ok", fragment_id, digest.to_json())


# --- driver side ------------------------------------------------------------------------------------


class _Judge:
    def __init__(self, version: int) -> None:
        self.version = version
        self.findings: list[Finding] = []

    def finding(self, requirement: str, path: str, message: str) -> None:
        self.findings.append(Finding(requirement, SEVERITY, self.version, path, message))


def _data_uris(snapshot: Snapshot) -> set[str]:
    return {normalize(f.uri) for fragment in snapshot.fragments for f in fragment.files if f.uri is not None}


def _fragment_ids(ids: Iterable[int]) -> str:
    shown = sorted(ids)
    return ", ".join(map(str, shown[:_SHOWN])) + (" …" if len(shown) > _SHOWN else "")


def _check_commit(judge: _Judge, dataset: Dataset, output: Snapshot, read_version: int, explicit: bool,
                  new_files: set[str]) -> None:
    """PIPE-002."""
    where = output.manifest_uri
    try:
        txn = load_transaction(dataset, output.version)
    except LanceSpecError as exc:
        judge.finding("PIPE-002", exc.where or where, f"the transaction of version {output.version} cannot be "
                      f"read: {exc.message}")
        txn = None
    else:
        if txn is None:
            judge.finding("PIPE-002", where, f"version {output.version} records no transaction: which commit made "
                          "it, against which version, cannot be told")
    if txn is not None:
        operation = txn.WhichOneof("operation")
        if operation not in ("append", "overwrite"):
            judge.finding("PIPE-002", where, f"version {output.version} was made by a {operation} operation, not by "
                          "an append or overwrite of the pipeline's fragments")
        if explicit and txn.read_version != read_version:
            judge.finding("PIPE-002", where, f"the commit of version {output.version} was made against version "
                          f"{txn.read_version}, but the job read version {read_version} when it started")
    if not new_files:
        judge.finding("PIPE-002", where, f"version {output.version} adds no data file to version {read_version}")
        return
    contributing: list[int] = []
    previous = set()
    if read_version >= 1:
        try:
            previous = _data_uris(dataset.snapshot(read_version, strict=False))
        except LanceSpecError:
            previous = set()
    for v in range(read_version + 1, output.version + 1):
        try:
            files = _data_uris(output if v == output.version else dataset.snapshot(v, strict=False))
        except LanceSpecError:
            continue  # a missing version between: the history checks' matter
        if (files - previous) & new_files:
            contributing.append(v)
        previous = files
    if contributing != [output.version]:
        judge.finding("PIPE-002", where, f"the output's new data files were committed by {len(contributing)} "
                      f"commits (versions {', '.join(map(str, contributing))}), not by one commit of version "
                      f"{output.version}")


def _check_duplicates(judge: _Judge, output: Snapshot, new_ids: list[int], digests: Mapping[int, Digest],
                      source_rows: int) -> None:
    """PIPE-003."""
    by_file: dict[str, list[int]] = defaultdict(list)
    for fragment in output.fragments:
        for f in fragment.files:
            if f.uri is not None:
                by_file[normalize(f.uri)].append(fragment.id)
    for uri, ids in sorted(by_file.items()):
        if len(ids) > 1:
            judge.finding("PIPE-003", f"{output.manifest_uri} fragments {_fragment_ids(ids)}",
                          f"data file {uri} is referenced by {len(ids)} fragments ({_fragment_ids(ids)}): one "
                          "written fragment was committed more than once")
    output_rows = sum(d.rows for d in digests.values())
    if output_rows <= source_rows:
        return
    groups: dict[tuple[int, int, tuple[tuple[str, int], ...]], list[int]] = defaultdict(list)
    for fragment_id in new_ids:
        d = digests.get(fragment_id)
        if d is not None and d.rows:
            groups[(d.rows, d.row, tuple(sorted(d.columns.items())))].append(fragment_id)
    shared = {uri for uri, ids in by_file.items() if len(ids) > 1}
    for (rows, _, _), ids in sorted(groups.items(), key=lambda item: item[1]):
        files = {normalize(f.uri) for fr in output.fragments if fr.id in ids for f in fr.files if f.uri is not None}
        if len(ids) > 1 and not files <= shared:
            judge.finding("PIPE-003", f"{output.manifest_uri} fragments {_fragment_ids(ids)}",
                          f"fragments {_fragment_ids(ids)} hold the same {rows} rows in different data files, and "
                          f"the output holds {output_rows - source_rows} rows more than the source: a task's "
                          "rows were written and committed twice (a retried or speculative attempt)")


def _data_directories(output: Snapshot) -> list[str]:
    """The root's data/ and the data directory of every usable base of the output version."""
    dirs = [join(base.path, DATA_DIR) if base.is_dataset_root else base.path.rstrip("/")
            for base in output.bases if base.path and is_absolute(base.path)]
    return sorted({normalize(d) for d in [join(output.root, DATA_DIR), *dirs]})


def _referenced(dataset: Dataset) -> set[str] | None:
    """Every data file any attached version of the main root or of a branch references (None when some
    manifest cannot be read: then nothing can be called an orphan)."""
    main = dataset.main()
    try:
        roots = [main, *(main.branch(name) for name in sorted(main.branches()))]
        referenced: set[str] = set()
        for root in roots:
            for entry in root.version_entries(allow_mixed=True):
                referenced |= _data_uris(root.snapshot(entry.version, strict=False))
    except LanceSpecError:
        return None
    return referenced


def _check_orphans(judge: _Judge, storage: Storage, dataset: Dataset, output: Snapshot,
                   started_at: dt.datetime | None) -> None:
    """PIPE-004."""
    referenced = _referenced(dataset)
    if referenced is None:
        judge.finding("PIPE-004", dataset.uri, "some manifest of the dataset cannot be read, so orphan data files "
                      "cannot be told from live ones")
        return
    since = started_at.astimezone(dt.UTC) - _CLOCK_SLACK if started_at is not None else None
    for directory in _data_directories(output):
        try:
            listed = [info for info in storage.list(directory, recursive=False) if info.uri.endswith(".lance")]
        except LanceSpecError as exc:
            judge.finding("PIPE-004", directory, f"the data directory cannot be listed: {exc.message}")
            continue
        for info in listed:
            if normalize(info.uri) in referenced:
                continue
            if since is not None and info.last_modified < since:
                continue
            judge.finding("PIPE-004", info.uri, f"data file ({info.size} bytes, written "
                          f"{info.last_modified:%Y-%m-%d %H:%M:%S} UTC) is referenced by no version: the output of "
                          "a failed or superseded task")


def quoted(column: str) -> str:
    """``column`` as Spark reads a plain column name (dots and spaces included)."""
    return "`" + column.replace("`", "``") + "`"


def positional(df: DataFrame) -> DataFrame:
    """``df`` with its columns renamed ``_0, _1, ...``: ``mapInArrow`` cannot resolve names holding dots,
    so the Python side gets the rows by position and restores the names."""
    return df.toDF(*(f"_{i}" for i in range(len(df.columns))))


def _top_level_fields(snapshot: Snapshot) -> list[str]:
    return [f.name for f in snapshot.manifest.fields if f.parent_id == -1]


def _check_content(judge: _Judge, spark: SparkSession, source_df: DataFrame, output: Snapshot, lance_uri: str,
                   new_ids: list[int], columns: Sequence[str] | None, options: dict[str, str] | None,
                   fragments_per_task: int | None, result: PipelineCertification) -> dict[int, Digest]:
    """PIPE-001; returns the digest of every new fragment that could be read."""
    where = output.manifest_uri
    lance_columns = _top_level_fields(output)
    wanted = list(columns) if columns is not None else list(source_df.columns)
    missing_out = [c for c in wanted if c not in lance_columns]
    missing_src = [c for c in wanted if c not in source_df.columns]
    extra = [c for c in lance_columns if c not in wanted] if columns is None else []
    if missing_out:
        judge.finding("PIPE-001", where, f"the output has no column(s) {', '.join(missing_out)} of the source")
    if missing_src:
        judge.finding("PIPE-001", where, f"the source has no column(s) {', '.join(missing_src)}")
    if extra:
        judge.finding("PIPE-001", where, f"the output has column(s) {', '.join(extra)} the source does not have")
    compared = [c for c in wanted if c in lance_columns and c in source_df.columns]

    source_rows = (positional(source_df.select(*(quoted(c) for c in compared)))
                   .mapInArrow(functools.partial(digest_partition, compared), "digest string").collect())
    result.source = Digest.total((Digest.from_json(r.digest) for r in source_rows), compared)

    sc = spark.sparkContext
    per_task = fragments_per_task or max(1, -(-len(new_ids) // max(1, sc.defaultParallelism * 4)))
    slices = max(1, -(-len(new_ids) // per_task))
    read = (sc.parallelize(new_ids, slices)
            .mapPartitions(functools.partial(digest_fragments, lance_uri, output.version, compared, options))
            .collect()) if new_ids else []
    digests = {fid: Digest.from_json(text) for status, fid, text in read if status == "ok"}
    unreadable = sorted((fid, text) for status, fid, text in read if status == "error")
    for fid, why in unreadable:
        judge.finding("PIPE-001", f"{where} fragment {fid}", f"fragment {fid} cannot be read with pylance, so its "
                      f"rows cannot be compared with the source: {why}")
    result.output = Digest.total(digests.values(), compared)
    if unreadable:
        return digests
    src, out = result.source, result.output
    if src.rows != out.rows:
        judge.finding("PIPE-001", where, f"the output's new fragments hold {out.rows} rows, the source "
                      f"{src.rows} ({out.rows - src.rows:+d})")
    differing = src.differences(out)
    for name, (a, b) in differing.items():
        if name == "<row>":
            if len(differing) == 1:
                judge.finding("PIPE-001", where, f"every column holds the source's values, but not in the same rows "
                              f"(row digest {b:016x}, source {a:016x})")
        else:
            judge.finding("PIPE-001", where, f"column {name!r} differs from the source's (digest {b:016x}, source "
                          f"{a:016x})")
    return digests


def certify_pipeline_output(spark: SparkSession, source_df: DataFrame, uri: str, *, version: int | None = None,
                            read_version: int | None = None, started_at: dt.datetime | None = None,
                            columns: Sequence[str] | None = None, storage_options: Mapping[str, str] | None = None,
                            certify_format: bool = True, fragments_per_task: int | None = None
                            ) -> PipelineCertification:
    """Certify that version ``version`` (default latest) of the Lance dataset at ``uri`` is what a pipeline
    should have written from ``source_df``, starting from version ``read_version`` (0: the pipeline created
    the dataset; None: the version before the output).

    ``columns``: the columns to compare (default: the source's, and output columns the source lacks are
    findings). ``started_at``: when the job started (orphans older than that are not reported).
    ``certify_format``: also certify the output version against the catalogue (``certify_with_spark``).
    ``source_df`` is evaluated once more here; cache it if computing it again is costly or not
    deterministic."""
    options = dict(storage_options) if storage_options is not None else None
    storage = open_store(options)
    dataset = Dataset(uri, storage)
    output_version = version if version is not None else dataset.latest_version()
    output = dataset.snapshot(output_version, strict=False)
    explicit = read_version is not None
    base_version = read_version if read_version is not None else output_version - 1
    if base_version < 0 or base_version >= output_version:
        raise ValueError(f"read_version {base_version} must lie in [0, {output_version})")
    result = PipelineCertification(dataset.uri, output_version, read_version)
    judge = _Judge(output_version)

    old_files: set[str] = set()
    if base_version >= 1:
        try:
            old_files = _data_uris(dataset.snapshot(base_version, strict=False))
        except LanceSpecError as exc:
            judge.finding("PIPE-002", exc.where or dataset.uri, f"the version read at job start, {base_version}, "
                          f"cannot be read: {exc.message}")
    new_ids = [f.id for f in output.fragments
               if not any(r.uri is not None and normalize(r.uri) in old_files for r in f.files)]
    result.new_fragments = new_ids
    new_files = {normalize(r.uri) for f in output.fragments if f.id in set(new_ids) for r in f.files
                 if r.uri is not None}

    digests = _check_content(judge, spark, source_df, output, dataset.uri, new_ids, columns, options,
                             fragments_per_task, result)
    _check_commit(judge, dataset, output, base_version, explicit, new_files)
    _check_duplicates(judge, output, new_ids, digests, result.source.rows)
    _check_orphans(judge, storage, dataset, output, started_at)
    result.findings = order_findings(judge.findings)
    if certify_format:
        result.certification = certify_with_spark(spark, uri, version=output_version, storage_options=options,
                                                  fragments_per_task=fragments_per_task)
    result.findings_df = findings_frame(spark, result.all_findings)
    return result
