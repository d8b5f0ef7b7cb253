"""``lancespec spark-certify URI [--master URL]``: ``lancespec certify`` with the per-file checks run by
Spark. Starts a local Spark (``local[*]``) unless ``--master`` names another, its driver bound to
127.0.0.1; same options, report formats and exit status as ``certify`` (0 conformant, 1 a MUST
requirement breached, 2 unreadable, or Spark cannot start here)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .certify import add_version_options
from .options import EXIT_UNREADABLE, add_storage_options, check_areas, dataset_uri, emit_report, parse_storage_options


def register(sub: Any) -> None:
    """Add ``spark-certify`` to the ``lancespec`` subcommands ``sub``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "spark-certify", help="certify with Spark: per-file checks as one job over fragments",
        description="Certify a dataset as `certify` does, with the per-file checks (data and deletion files, row "
        "counts, blobs) run as a Spark job over fragments and the manifest-level checks on the driver. Exit 0 "
        "conformant, 1 a MUST requirement is breached, 2 unreadable or Spark cannot start.")
    parser.add_argument("uri", type=dataset_uri, help="dataset root: a local path, file:// or s3:// URI")
    parser.add_argument("--master", default="local[*]",
                        help="Spark master URL (default local[*]: a local Spark on every core); the driver binds "
                        "to 127.0.0.1")
    add_version_options(parser)
    parser.add_argument("--only", action="append", metavar="AREA", help="run only this area's checks; repeat")
    parser.add_argument("--fragments-per-task", type=int, metavar="N",
                        help="fragments per Spark task (default: four tasks per core)")
    add_storage_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lancespec.conformance.report import RENDERERS
    from lancespec.conformance.spark.distributed import certify_with_spark
    from lancespec.conformance.spark.session import spark_session, spark_unavailable

    check_areas(args.only)
    why = spark_unavailable()
    if why is not None:
        print(f"lancespec: error: Spark cannot start here: {why}", file=sys.stderr)
        return EXIT_UNREADABLE
    from pyspark.sql import SparkSession

    options = parse_storage_options(args.storage_option)
    if args.io_parallelism is not None:  # the driver's and every executor's reads
        options["lancespec_io_parallelism"] = str(args.io_parallelism)
    existing = SparkSession.getActiveSession()
    spark = spark_session(args.master, app_name="lancespec spark-certify")
    try:
        result = certify_with_spark(spark, args.uri, version=args.version, all_versions=args.all_versions,
                                    areas=args.only, storage_options=options,
                                    fragments_per_task=args.fragments_per_task)
    finally:
        if existing is None:  # a session this command started; one the caller had stays up
            spark.stop()
    report = result.report
    emit_report(report, RENDERERS, args.format, args.output)
    sys.stderr.write(f"spark ({args.master}): {result.tasks} task(s), {result.fragments} fragment(s), {result.files} "
                     f"file(s) checked in {result.job_seconds:.2f} s; {result.seconds:.2f} s in all\n")
    return report.exit_code
