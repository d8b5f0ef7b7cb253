"""A distributed Lance writer for Spark: executors write fragments, the driver commits once, then certifies.

    result = write_lance(df, "s3://bucket/ds", mode="create", initial_bases=[BasePath("s3://b1/x", "b1"), ...],
                         target_bases=["b1", "b2", "b3"], storage_options=opts)
    assert result.certification.conformant

1. At job start the driver reads the dataset's current version R (``append``, ``overwrite``; 0 for
   ``create``) and the schema the fragments are written with (the dataset's for ``append``, the
   DataFrame's for ``create`` and ``overwrite``).
2. One Spark job (``mapInArrow``): every task streams its partition into pylance's
   ``lance.fragment.write_fragments`` (target base: ``target_bases[partition % len(target_bases)]``, so
   the partitions spread over the bases) and returns its fragments' metadata as JSON. Nothing is committed
   by a task.
3. The driver keeps one result per partition, rebuilds the fragments (``FragmentMetadata.from_json``) and
   commits once with ``LanceDataset.commit`` against R: an ``Append``, or an ``Overwrite`` (with the
   bases to register, when creating). The commit assigns fragment ids.
4. ``certify_pipeline_output`` checks the new version against the DataFrame (``certify=True``).

A task that fails or is superseded (a retried or speculative attempt) leaves the files it wrote
unreferenced; certification reports them (PIPE-004). pylance's ``DatasetBasePath`` does not pickle, so
bases are described with ``BasePath`` here.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from reference.errors import DatasetNotFound, ValidationError
from reference.store import open_store
from reference.table import Dataset

from .pipeline import PipelineCertification, certify_pipeline_output, positional, quoted

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["BasePath", "LanceWrite", "StagedWrite", "arrow_schema", "commit_staged", "stage_fragments", "write_lance"]

MODES = ("create", "append", "overwrite")
_RESULT_SCHEMA = pa.schema([("partition", pa.int32()), ("attempt", pa.int32()), ("base", pa.string()),
                            ("fragments", pa.string())])


@dataclass(frozen=True)
class BasePath:
    """A base path to register when the job creates the dataset: ``path`` (absolute), ``name`` (what
    ``target_bases`` refers to) and whether it is laid out as a dataset root."""

    path: str
    name: str
    is_dataset_root: bool = False


@dataclass
class StagedWrite:
    """Fragments written by a job and not yet committed.

    ``fragments``: each fragment's metadata as pylance's JSON, in partition order. ``read_version``: the
    version read at job start (0 when the job creates the dataset). ``dropped``: (partition, attempt) of
    results not kept because another attempt of the partition was kept."""

    uri: str
    mode: str
    read_version: int
    schema: pa.Schema
    initial_bases: tuple[BasePath, ...]
    fragments: list[str]
    partitions: int
    started_at: dt.datetime
    seconds: float
    dropped: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class LanceWrite:
    """The outcome of ``write_lance``: the version committed, the version read at job start, and the
    certification of the output (None when ``certify=False``)."""

    uri: str
    version: int
    read_version: int
    fragments: int
    partitions: int
    started_at: dt.datetime
    write_seconds: float
    commit_seconds: float
    certification: PipelineCertification | None = None


def arrow_schema(df: DataFrame) -> pa.Schema:
    """The Arrow schema Spark hands ``df``'s rows to ``mapInArrow`` with (timestamps in the session's
    time zone)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    timezone = df.sparkSession.conf.get("spark.sql.session.timeZone")
    return to_arrow_schema(df.schema, timezone=timezone)


def _lance_bases(bases: Sequence[BasePath]) -> list[Any]:
    import lance

    return [lance.DatasetBasePath(b.path, name=b.name, is_dataset_root=b.is_dataset_root, id=i)
            for i, b in enumerate(bases, start=1)]


# --- executor side ----------------------------------------------------------------------------------


def write_partition(uri: str, schema: pa.Schema, mode: str, targets: Sequence[str], bases: Sequence[BasePath],
                    storage_options: Mapping[str, str] | None, write_options: Mapping[str, Any],
                    batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: write this partition's rows as fragments; one row with their JSON."""
    from lance.fragment import write_fragments
    from pyspark import TaskContext

    task = TaskContext.get()
    assert task is not None, "write_partition runs inside a Spark task"
    partition, attempt = task.partitionId(), task.attemptNumber()
    target = targets[partition % len(targets)] if targets else None
    batches = (b.rename_columns(schema.names) for b in batches)  # they come by position (``positional``)
    reader = pa.RecordBatchReader.from_batches(schema, (b if b.schema == schema else b.cast(schema) for b in batches))
    kwargs: dict[str, Any] = dict(write_options)
    if target is not None:
        kwargs["target_bases"] = [target]
    if mode == "create" and bases:
        kwargs["initial_bases"] = _lance_bases(bases)
    fragments = write_fragments(reader, uri, schema=schema, mode=mode, storage_options=dict(storage_options or {}),
                                **kwargs)
    text = json.dumps([f.to_json() for f in fragments])
    yield pa.RecordBatch.from_pylist([{"partition": partition, "attempt": attempt, "base": target or "",
                                       "fragments": text}], schema=_RESULT_SCHEMA)


# --- driver side ------------------------------------------------------------------------------------


def stage_fragments(df: DataFrame, uri: str, *, mode: str = "append", target_bases: Sequence[str] | None = None,
                    initial_bases: Sequence[BasePath] = (), storage_options: Mapping[str, str] | None = None,
                    max_rows_per_file: int = 1024 * 1024, data_storage_version: str | None = None) -> StagedWrite:
    """Steps 1 and 2 of ``write_lance``: read the version at job start and write ``df``'s partitions as
    fragments in executors, committing nothing."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    started_at = dt.datetime.now(dt.UTC)
    started = time.perf_counter()
    options = dict(storage_options) if storage_options is not None else None
    targets = list(target_bases or ())
    dataset = Dataset(uri, open_store(options))
    if mode == "create":
        if dataset.version_entries(allow_mixed=True):
            raise ValidationError("mode 'create', but a dataset exists here", dataset.uri)
        read_version = 0
        schema = arrow_schema(df)
        known = {b.name for b in initial_bases}
    else:
        if initial_bases:
            raise ValueError("initial_bases are registered only when the job creates the dataset (mode 'create')")
        try:
            read_version = dataset.latest_version()
        except DatasetNotFound as exc:
            raise ValidationError(f"mode {mode!r} needs an existing dataset: {exc.message}", dataset.uri) from exc
        snapshot = dataset.snapshot(read_version, strict=False)
        known = {b.name for b in snapshot.bases if b.name is not None}
        if mode == "append":
            import lance

            schema = lance.dataset(uri, version=read_version, storage_options=options).schema
            missing = [n for n in schema.names if n not in df.columns]
            if missing or len(df.columns) != len(schema.names):
                raise ValidationError(f"the DataFrame's columns {df.columns} are not the dataset's {schema.names}",
                                      dataset.uri)
            df = df.select(*(quoted(n) for n in schema.names))
        else:
            schema = arrow_schema(df)
    unknown = [t for t in targets if t not in known]
    if unknown:
        raise ValidationError(f"target base(s) {', '.join(unknown)} are not registered (known: "
                              f"{', '.join(sorted(known)) or 'none'})", dataset.uri)
    write_options: dict[str, Any] = {"max_rows_per_file": max_rows_per_file}
    if data_storage_version is not None:
        write_options["data_storage_version"] = data_storage_version
    body = functools.partial(write_partition, dataset.uri, schema, mode, targets, tuple(initial_bases), options,
                             write_options)
    rows = positional(df).mapInArrow(body, "partition int, attempt int, base string, fragments string").collect()
    kept: dict[int, str] = {}
    dropped: list[tuple[int, int]] = []
    for row in sorted(rows, key=lambda r: (r.partition, r.attempt)):
        if row.partition in kept:
            dropped.append((row.partition, row.attempt))
        else:
            kept[row.partition] = row.fragments
    fragments = [json.dumps(meta) for _, text in sorted(kept.items()) for meta in json.loads(text)]
    return StagedWrite(dataset.uri, mode, read_version, schema, tuple(initial_bases), fragments, len(kept),
                       started_at, time.perf_counter() - started, dropped)


def commit_staged(staged: StagedWrite, storage_options: Mapping[str, str] | None = None) -> int:
    """Step 3 of ``write_lance``: commit the staged fragments once, against the version read at job
    start; returns the new version."""
    import lance

    fragments = [lance.FragmentMetadata.from_json(text) for text in staged.fragments]
    options = dict(storage_options) if storage_options is not None else None
    operation: lance.LanceOperation.BaseOperation
    if staged.mode == "append":
        operation = lance.LanceOperation.Append(fragments)
    else:  # create or overwrite; only a create has initial_bases (stage_fragments)
        operation = lance.LanceOperation.Overwrite(staged.schema, fragments,
                                                   initial_bases=_lance_bases(staged.initial_bases) or None)
    committed = lance.LanceDataset.commit(staged.uri, operation, read_version=staged.read_version or None,
                                          storage_options=options)
    return int(committed.version)


def write_lance(df: DataFrame, uri: str, *, mode: str = "append", target_bases: Sequence[str] | None = None,
                initial_bases: Sequence[BasePath] = (), storage_options: Mapping[str, str] | None = None,
                max_rows_per_file: int = 1024 * 1024, data_storage_version: str | None = None,
                certify: bool = True) -> LanceWrite:
    """Write ``df`` to the Lance dataset at ``uri`` from Spark executors and commit once on the driver.

    ``mode``: ``create`` (no dataset may exist; ``initial_bases`` are registered with ids 1, 2, ...),
    ``append`` or ``overwrite`` (against the version read at job start). ``target_bases``: base names the
    partitions' files go to, round-robin by partition (default: the dataset root's ``data/``).
    ``certify``: then certify the output with ``certify_pipeline_output`` against ``df`` (evaluated
    again; cache it when that is costly)."""
    staged = stage_fragments(df, uri, mode=mode, target_bases=target_bases, initial_bases=initial_bases,
                             storage_options=storage_options, max_rows_per_file=max_rows_per_file,
                             data_storage_version=data_storage_version)
    started = time.perf_counter()
    version = commit_staged(staged, storage_options)
    result = LanceWrite(staged.uri, version, staged.read_version, len(staged.fragments), staged.partitions,
                        staged.started_at, staged.seconds, time.perf_counter() - started)
    if certify:
        result.certification = certify_pipeline_output(df.sparkSession, df, staged.uri, version=version,
                                                       read_version=staged.read_version,
                                                       started_at=staged.started_at, storage_options=storage_options)
    return result
