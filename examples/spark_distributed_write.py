"""Distributed write with Spark: executors write Lance fragments, the driver commits once, then certifies.

    python examples/spark_distributed_write.py [DIR] [--rows N] [--partitions P] [--master URL]

Creates DIR/ds (default: a new temporary directory) from a DataFrame of N rows (default 1,000,000) in P
partitions (default 16), its data files spread over three bases DIR/base-1..3:

1. the driver notes the version it reads at job start (0 here: the job creates the dataset);
2. one Spark job: each task writes its partition with pylance's ``lance.fragment.write_fragments`` into
   one base (partition number modulo the bases) and returns the fragments' metadata as JSON;
3. the driver rebuilds the fragments and commits them once (``LanceDataset.commit``, an Overwrite that
   registers the bases), against the version read at job start;
4. ``certify_pipeline_output`` checks the output against the DataFrame (rows, per-column digests, one
   commit, no fragment twice, no orphans) and the catalogue.

Then it appends N/10 more rows with lancespec's helper, ``write_lance``, which does the same four steps.
Exit status 0 when both outputs certify clean. Spark runs locally (``local[*]``) unless ``--master``
says otherwise; its driver binds to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from conformance.spark import (
    PipelineCertification,
    arrow_schema,
    certify_pipeline_output,
    spark_session,
    write_lance,
)

BASES = ("base-1", "base-2", "base-3")


def source(spark: Any, start: int, rows: int, partitions: int) -> Any:
    return spark.range(start, start + rows, numPartitions=partitions).selectExpr(
        "id", "concat('row-', id) AS name", "CAST(id AS DOUBLE) * 0.5 AS value",
        "timestamp_seconds(1700000000 + id) AS ts")


def lance_bases(where: Path) -> list[Any]:
    import lance

    return [lance.DatasetBasePath(str(where / name), name=name, id=i) for i, name in enumerate(BASES, start=1)]


def write_partition(uri: str, schema: pa.Schema, where: str, batches: Iterator[pa.RecordBatch]
                    ) -> Iterator[pa.RecordBatch]:
    """Runs in an executor: write this partition's rows as fragments into one base; commit nothing."""
    from lance.fragment import write_fragments
    from pyspark import TaskContext

    task = TaskContext.get()
    assert task is not None
    base = BASES[task.partitionId() % len(BASES)]
    reader = pa.RecordBatchReader.from_batches(schema, (b if b.schema == schema else b.cast(schema) for b in batches))
    fragments = write_fragments(reader, uri, schema=schema, mode="create", initial_bases=lance_bases(Path(where)),
                                target_bases=[base])
    yield pa.RecordBatch.from_pylist(
        [{"partition": task.partitionId(), "fragments": json.dumps([f.to_json() for f in fragments])}],
        schema=pa.schema([("partition", pa.int32()), ("fragments", pa.string())]))


def distributed_create(df: Any, uri: str, where: Path) -> tuple[int, dt.datetime]:
    """Steps 1-3: write in executors, commit once on the driver; returns the version and the start time."""
    import lance

    started_at = dt.datetime.now(dt.UTC)
    schema = arrow_schema(df)
    body = functools.partial(write_partition, uri, schema, str(where))
    rows = df.mapInArrow(body, "partition int, fragments string").collect()
    fragments = [lance.FragmentMetadata.from_json(json.dumps(meta))
                 for row in sorted(rows, key=lambda r: r.partition) for meta in json.loads(row.fragments)]
    operation = lance.LanceOperation.Overwrite(schema, fragments, initial_bases=lance_bases(where))
    committed = lance.LanceDataset.commit(uri, operation, read_version=None)  # job start: no dataset yet
    return int(committed.version), started_at


def summary(label: str, cert: PipelineCertification) -> str:
    state = "CLEAN" if cert.conformant else "NOT CLEAN"
    lines = [f"{label}: {state}: version {cert.version}, {cert.output.rows:,} rows in {len(cert.new_fragments)} new "
             f"fragment(s); source {cert.source.rows:,} rows"]
    lines += [f"  {f.severity} {f.requirement} {f.path}: {f.message}" for f in cert.all_findings]
    return "\n".join(lines)


def run(spark: Any, where: Path, rows: int, partitions: int) -> int:
    uri = str(where / "ds")
    df = source(spark, 0, rows, partitions)
    version, started_at = distributed_create(df, uri, where)
    first = certify_pipeline_output(spark, df, uri, version=version, read_version=0, started_at=started_at)
    print(summary("create (the recipe by hand)", first))

    more = source(spark, rows, max(1, rows // 10), max(1, partitions // 2))
    appended = write_lance(more, uri, mode="append", target_bases=list(BASES))
    assert appended.certification is not None
    print(summary(f"append with write_lance (read version {appended.read_version})", appended.certification))
    return 0 if first.conformant and appended.certification.conformant else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", nargs="?", type=Path, help="where to write (default: a new temporary directory)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args(argv)
    where = args.dir or Path(tempfile.mkdtemp(prefix="lancespec-spark-"))
    where.mkdir(parents=True, exist_ok=True)
    spark = spark_session(args.master, app_name="lancespec distributed write example")
    try:
        return run(spark, where.resolve(), args.rows, args.partitions)
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
