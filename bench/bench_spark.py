"""Certify with Spark: files checked per second with local[1] and local[2], against single-process certify.

    python bench/bench_spark.py [--fragments N] [--quick] [--repeat N] [--workdir DIR] [--json FILE]

The input is one version of N two-row fragments (default 20,000; 2,000 with ``--quick``) written by
pylance, every tenth fragment with a deletion file, so N * 1.1 files are checked (data files: existence,
size, footer, row count; deletion files: existence, content, counts). Three ways of certifying it:

* ``certify``: ``conformance.certify.certify(uri)``, one process;
* ``spark local[1]`` and ``spark local[2]``: ``certify_with_spark(spark, uri)`` on a local Spark with one
  and two cores (four tasks per core), the driver running the manifest-level checks.

Each way is warmed up once (for Spark: the Python workers start and import lancespec), then timed
``--repeat`` times; the table shows the best and the median, files per second from the best, and for
Spark the distributed job's own seconds and the CPU its tasks spent in the check code (the rest of a run
is the driver: certify's manifest-level and dataset-wide checks, which do not shrink with more cores).
The scaling ratio is local[2]'s files per second over local[1]'s; the speed-up is each Spark run's
files per second over single-process certify's.

This is a script of its own (``bench/run.py`` compares lancespec with pylance; this compares lancespec
with itself): it imports as a module without doing anything.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness import BestAndMedian

MARKER = ".bench-complete.json"


@dataclass
class Measured(BestAndMedian):
    name: str
    files: int
    runs: list[float] = field(default_factory=list)
    job_runs: list[float] = field(default_factory=list)
    cpu_runs: list[float] = field(default_factory=list)

    @property
    def files_per_second(self) -> float:
        return self.files / self.best


def build(directory: Path, fragments: int) -> str:
    """``directory/ds``: ``fragments`` two-row fragments in one version, then a delete of one row in every
    tenth fragment (a second version with ``fragments / 10`` deletion files)."""
    import lance
    import pyarrow as pa
    from lance.fragment import write_fragments

    uri = str(directory / "ds")
    table = pa.table({"id": pa.array(range(2 * fragments), pa.int64()),
                      "name": pa.array([f"row-{i}" for i in range(2 * fragments)], pa.string())})
    written = write_fragments(table, uri, max_rows_per_file=2)
    lance.LanceDataset.commit(uri, lance.LanceOperation.Overwrite(table.schema, written))
    lance.dataset(uri).delete("id % 20 = 0")
    return uri


def cached_input(workdir: Path, fragments: int) -> str:
    directory = workdir / f"spark-certify-{fragments}-fragments"
    if (directory / MARKER).is_file():
        print(f"reusing {directory}")
        return str(directory / "ds")
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    print(f"building {fragments:,} fragments in {directory} ...", flush=True)
    started = time.perf_counter()
    uri = build(directory, fragments)
    (directory / MARKER).write_text(json.dumps({"build_s": time.perf_counter() - started}))
    print(f"built in {time.perf_counter() - started:.1f} s")
    return uri


Run = Callable[[], tuple[int, float | None, float | None]]


def measure(name: str, repeat: int, run: Run) -> Measured:
    files, _, _ = run()  # warm-up
    out = Measured(name, files)
    for _ in range(repeat):
        started = time.perf_counter()
        checked, job, cpu = run()
        out.runs.append(time.perf_counter() - started)
        if job is not None and cpu is not None:
            out.job_runs.append(job)
            out.cpu_runs.append(cpu)
        if checked != files:
            raise AssertionError(f"{name}: {checked} files checked, then {files}")
    print(f"  {name}: best {out.best:.2f} s, median {out.median:.2f} s, {out.files_per_second:,.0f} files/s",
          flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="certify with Spark local[1], local[2] and in one process")
    parser.add_argument("--fragments", type=int, default=None, help="fragments (default 20,000; 2,000 with --quick)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, help="keep the input here and reuse it (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    fragments = args.fragments or (2_000 if args.quick else 20_000)
    os.environ.setdefault("LANCE_LOG", "error")

    from conformance.certify import certify
    from conformance.spark import (
        certify_with_spark,
        spark_session,
    )

    temp = None if args.workdir else tempfile.mkdtemp(prefix="lancespec-bench-spark-")
    workdir = args.workdir.resolve() if args.workdir else Path(str(temp))
    try:
        uri = cached_input(workdir, fragments)
        results: list[Measured] = []

        def single() -> tuple[int, float | None, float | None]:
            report = certify(uri)
            if not report.conformant:
                raise AssertionError(f"the input does not certify clean: {report.must_findings[:3]}")
            return fragments + fragments // 10, None, None

        print("single-process certify", flush=True)
        results.append(measure("certify (1 process)", args.repeat, single))
        local_findings = certify(uri).findings
        for cores in (1, 2):
            master = f"local[{cores}]"
            print(f"spark {master}: starting", flush=True)
            spark = spark_session(master, app_name=f"lancespec bench {master}")

            def distributed(spark: Any = spark) -> tuple[int, float | None, float | None]:
                result = certify_with_spark(spark, uri)
                if result.findings != local_findings:
                    raise AssertionError("Spark certify and certify disagree")
                return result.files, result.job_seconds, sum(result.task_cpu_seconds)

            try:
                results.append(measure(f"spark {master}", args.repeat, distributed))
            finally:
                spark.stop()
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)

    single_run, one, two = results
    print()
    print(f"{'way':<22}{'files':>8}{'best s':>9}{'median s':>10}{'files/s':>10}{'job s':>8}{'task CPU s':>12}"
          f"{'vs certify':>12}")
    for r in results:
        job = f"{min(r.job_runs):.2f}" if r.job_runs else "-"
        cpu = f"{statistics.median(r.cpu_runs):.2f}" if r.cpu_runs else "-"
        print(f"{r.name:<22}{r.files:>8,}{r.best:>9.2f}{r.median:>10.2f}{r.files_per_second:>10,.0f}{job:>8}{cpu:>12}"
              f"{r.files_per_second / single_run.files_per_second:>11.2f}x")
    scaling = two.files_per_second / one.files_per_second
    job_scaling = min(one.job_runs) / min(two.job_runs)
    print(f"\nscaling ratio local[2] / local[1]: {scaling:.2f}x end to end, {job_scaling:.2f}x for the Spark job "
          f"alone ({fragments + fragments // 10:,} files / job s: {one.files / min(one.job_runs):,.0f} and "
          f"{two.files / min(two.job_runs):,.0f} files/s); {os.cpu_count()} cpu(s), load average "
          f"{os.getloadavg()[0]:.1f}")
    print("job s: the Spark job alone (best); the rest of a run is the driver's manifest-level checks. task CPU s: "
          "CPU the tasks spent in the check code (median).")
    if args.json:
        args.json.write_text(json.dumps({"fragments": fragments, "cpus": os.cpu_count(), "scaling": scaling,
                                         "job_scaling": job_scaling, "load_average": os.getloadavg()[0],
                                         "results": [{**asdict(r), "files_per_second": r.files_per_second}
                                                     for r in results]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
