"""The distributed writer and pipeline certification: a clean million-row pipeline certifies clean, and
each injected defect is caught with the right finding.

Defects: a fragment committed twice (PIPE-003), a task's rows committed twice (PIPE-003), a commit per
task (PIPE-002), a data file deleted (BASE-004 from the catalogue checks, and PIPE-001: its rows cannot be
read), a source row dropped (PIPE-001), an orphan file from a failed task (PIPE-004).
"""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from conformance.certify import certify
from conformance.findings import Finding
from conformance.spark import (
    BasePath,
    PipelineCertification,
    arrow_schema,
    certify_pipeline_output,
    commit_staged,
    stage_fragments,
    write_lance,
)
from reference.table import Dataset

pytestmark = pytest.mark.spark

MILLION = 1_000_000
SMALL = 20_000


def source(spark: Any, rows: int, partitions: int) -> Any:
    """Deterministic rows of several types (a null every 11th note, a timestamp, a date, a boolean)."""
    return spark.range(0, rows, numPartitions=partitions).selectExpr(
        "id",
        "concat('row-', id) AS name",
        "CAST(id AS DOUBLE) * 0.5 AS value",
        "CASE WHEN id % 11 = 0 THEN NULL ELSE concat('note ', id % 97) END AS note",
        "timestamp_seconds(1700000000 + id) AS ts",
        "date_add(DATE'2024-01-01', CAST(id % 365 AS INT)) AS day",
        "id % 3 = 0 AS flag",
    )


def bases(tmp_path: Path, names: Sequence[str]) -> list[BasePath]:
    return [BasePath(str(tmp_path / name), name) for name in names]


def show(findings: Iterable[Finding]) -> str:
    return "\n".join(f"  {f.requirement} {f.severity} v{f.version} {f.path}: {f.message}" for f in findings) or "  none"


def must(cert: PipelineCertification) -> set[str]:
    return {f.requirement for f in cert.must_findings}


def reported(cert: PipelineCertification, requirement: str) -> list[Finding]:
    found = [f for f in cert.all_findings if f.requirement == requirement]
    assert found, f"{requirement} was not reported; findings:\n{show(cert.all_findings)}"
    return found


def test_million_rows_in_16_partitions_across_3_bases_certify_clean(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    df = source(spark, MILLION, 16)
    names = ["b1", "b2", "b3"]
    result = write_lance(df, uri, mode="create", initial_bases=bases(tmp_path, names), target_bases=names)
    cert = result.certification
    assert cert is not None and cert.certification is not None
    assert cert.conformant, "MUST findings on a clean pipeline's output:\n" + show(cert.must_findings)
    assert not cert.findings, show(cert.findings)
    assert (result.version, result.read_version, result.partitions) == (1, 0, 16)
    assert cert.source.rows == cert.output.rows == MILLION
    assert cert.source == cert.output
    snapshot = Dataset(uri).snapshot()
    assert len(snapshot.fragments) == 16 and snapshot.num_rows == MILLION
    per_base = Counter(f.base_id for fragment in snapshot.fragments for f in fragment.files)
    assert per_base == {1: 6, 2: 5, 3: 5}, "partitions spread round-robin over the three bases"
    for name in names:
        assert len(list((tmp_path / name).glob("*.lance"))) == per_base[names.index(name) + 1]
    assert not (Path(uri) / "data").exists() or not any((Path(uri) / "data").iterdir())
    assert cert.certification.files == 16 and cert.certification.tasks >= 1
    assert cert.certification.report.findings == certify(uri).findings
    assert cert.findings_df.count() == len(cert.all_findings)


def test_append_commits_once_against_the_version_read_at_start(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    first = write_lance(source(spark, 2_000, 2), uri, mode="create", initial_bases=bases(tmp_path, ["b1", "b2"]),
                        target_bases=["b1"], certify=False)
    df = source(spark, 3_000, 3).selectExpr("id + 1000000 AS id", "name", "value", "note", "ts", "day", "flag")
    second = write_lance(df, uri, mode="append", target_bases=["b1", "b2"])
    assert (first.version, second.read_version, second.version) == (1, 1, 2)
    cert = second.certification
    assert cert is not None and cert.conformant, show(cert.must_findings)
    assert cert.output.rows == 3_000 and len(cert.new_fragments) == 3, "only the appended rows are compared"


def test_fragment_committed_twice(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    df = source(spark, SMALL, 4)
    staged = stage_fragments(df, uri, mode="create", initial_bases=bases(tmp_path, ["b1", "b2"]),
                             target_bases=["b1", "b2"])
    staged.fragments.append(staged.fragments[1])  # the driver commits one task's fragment twice
    commit_staged(staged)
    cert = certify_pipeline_output(spark, df, uri, read_version=0, started_at=staged.started_at)
    [twice] = reported(cert, "PIPE-003")
    assert "referenced by 2 fragments" in twice.message
    assert must(cert) == {"PIPE-003", "PIPE-001"}, show(cert.must_findings)
    assert cert.output.rows == SMALL + SMALL // 4


def test_task_rows_committed_twice(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    df = source(spark, SMALL, 4)
    staged = stage_fragments(df, uri, mode="create", initial_bases=bases(tmp_path, ["b1", "b2"]),
                             target_bases=["b1", "b2"])
    retry = stage_fragments(df, uri, mode="create", initial_bases=bases(tmp_path, ["b1", "b2"]),
                            target_bases=["b1", "b2"])
    staged.fragments.append(retry.fragments[2])  # a speculative attempt's output, committed beside the first
    commit_staged(staged)
    cert = certify_pipeline_output(spark, df, uri, read_version=0, started_at=staged.started_at)
    duplicated = [f for f in reported(cert, "PIPE-003") if "hold the same" in f.message]
    assert duplicated, show(cert.all_findings)
    assert "PIPE-001" in must(cert)
    orphans = reported(cert, "PIPE-004")  # the other attempts of the retried job were never committed
    assert len(orphans) == len(retry.fragments) - 1


def test_one_commit_per_task(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    df = source(spark, SMALL, 4)
    staged = stage_fragments(df, uri, mode="create", initial_bases=bases(tmp_path, ["b1"]), target_bases=["b1"])
    whole = list(staged.fragments)
    staged.fragments = whole[:2]
    commit_staged(staged)
    staged.mode, staged.read_version, staged.fragments = "append", 1, whole[2:]
    commit_staged(staged)
    cert = certify_pipeline_output(spark, df, uri, read_version=0, started_at=staged.started_at)
    assert must(cert) == {"PIPE-002"}, show(cert.must_findings)
    messages = [f.message for f in reported(cert, "PIPE-002")]
    assert any("committed by 2 commits (versions 1, 2)" in m for m in messages), messages


def test_data_file_deleted(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    df = source(spark, SMALL, 4)
    result = write_lance(df, uri, mode="create", initial_bases=bases(tmp_path, ["b1", "b2"]),
                         target_bases=["b1", "b2"], certify=False)
    victim = sorted((tmp_path / "b2").glob("*.lance"))[0]
    victim.unlink()
    cert = certify_pipeline_output(spark, df, uri, read_version=result.read_version, started_at=result.started_at)
    [missing] = reported(cert, "BASE-004")
    assert str(victim) in missing.message and "does not exist" in missing.message
    assert "cannot be read with pylance" in reported(cert, "PIPE-001")[0].message
    assert must(cert) == {"BASE-004", "PIPE-001"}, show(cert.must_findings)


def test_source_row_dropped(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    df = source(spark, SMALL, 4)
    result = write_lance(df.filter("id != 4321"), uri, mode="create", initial_bases=bases(tmp_path, ["b1"]),
                         target_bases=["b1"], certify=False)
    cert = certify_pipeline_output(spark, df, uri, read_version=result.read_version, started_at=result.started_at)
    messages = [f.message for f in reported(cert, "PIPE-001")]
    assert any(f"hold {SMALL - 1} rows, the source {SMALL} (-1)" in m for m in messages), messages
    assert sum("differs from the source" in m for m in messages) == 7, "every column misses the row's value"
    assert must(cert) == {"PIPE-001"}, show(cert.must_findings)


def test_orphan_file_from_failed_task(spark: Any, tmp_path: Path) -> None:
    """A task writes its fragment and dies before its result reaches the driver (an executor lost after
    writing): the job fails and commits nothing. The pipeline runs again and succeeds; the first
    attempt's file stays behind, referenced by no version."""
    from conformance.spark.writer import write_partition

    uri = str(tmp_path / "ds")
    df = source(spark, SMALL, 4)
    names = ["b1", "b2"]
    base_list = bases(tmp_path, names)
    schema = arrow_schema(df)

    def dies_after_writing(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        task = TaskContext.get()
        assert task is not None
        if task.partitionId() != 1:
            return  # only partition 1 runs; the others wait for the pipeline's second run
        yield from write_partition(uri, schema, "create", names, base_list, None, {}, batches)
        raise RuntimeError("executor lost after writing its fragment")

    started = dt.datetime.now(dt.UTC)
    with pytest.raises(Exception, match="executor lost after writing"):
        df.mapInArrow(dies_after_writing, "partition int, attempt int, base string, fragments string").collect()
    left = sorted((tmp_path / "b2").glob("*.lance"))
    assert len(left) == 1, "partition 1 wrote into base b2 before it failed"
    result = write_lance(df, uri, mode="create", initial_bases=base_list, target_bases=names, certify=False)
    cert = certify_pipeline_output(spark, df, uri, read_version=result.read_version, started_at=started)
    [orphan] = reported(cert, "PIPE-004")
    assert orphan.path == str(left[0])
    assert must(cert) == {"PIPE-004"}, show(cert.must_findings)
    afterwards = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=10)
    later = certify_pipeline_output(spark, df, uri, read_version=0, started_at=afterwards, certify_format=False)
    assert not later.findings, "a file older than the job's start is not the job's orphan"
    os.unlink(left[0])


def test_column_names_that_need_quoting(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    df = spark.range(0, 1_000, numPartitions=2).selectExpr("id AS `a b`", "CAST(id AS STRING) AS `x-y`")
    first = write_lance(df, uri, mode="create")
    second = write_lance(df, uri, mode="append")
    for cert in (first.certification, second.certification):
        assert cert is not None and cert.conformant, show(cert.all_findings)
        assert cert.output.rows == 1_000 and set(cert.output.columns) == {"a b", "x-y"}
