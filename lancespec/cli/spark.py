"""``lancespec spark-certify URI [--master URL]``: ``lancespec certify`` with the per-file checks run by
Spark. Starts a local Spark (``local[*]``) unless ``--master`` names another, its driver bound to
127.0.0.1; certify's options (``certify.add_certify_options``: versions, report formats, areas, ``--ignore``,
baselines, storage, limits) and exit status (0 conformant, 1 a MUST requirement breached, 2 unreadable, or
Spark cannot start here). The input is read (the dataset and the version asked for) before Spark starts, so a
wrong path or option costs no Spark start-up (about 30 s)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from ..destination import write_text
from .certify import add_certify_options, renderers
from .options import EXIT_INTERRUPTED, EXIT_UNREADABLE, emit_report, exits, limits_of, parse_storage_options


def register(sub: Any) -> None:
    """Add ``spark-certify`` to the ``lancespec`` subcommands ``sub``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "spark-certify", help="certify with Spark: per-file checks as a job per root over fragments",
        description="Certify a dataset as `certify` does, with the per-file checks (data and deletion files, row "
        "counts, blobs) run as a Spark job per root over slices of its fragments (a long history in whole "
        "versions), beside the manifest-level checks on the driver. "
        + exits("0 conformant, 1 a MUST requirement is breached (2 also when Spark cannot start)"))
    add_certify_options(parser)
    parser.add_argument("--master", default="local[*]",
                        help="Spark master URL (default local[*]: a local Spark on every core); the driver binds "
                        "to 127.0.0.1")
    parser.add_argument("--fragments-per-task", type=int, metavar="N",
                        help="fragments per Spark task (default: four tasks per core)")
    parser.set_defaults(func=run)


def check_input(args: argparse.Namespace, options: dict[str, str]) -> None:
    """Open the dataset and the version asked for (a LanceSpecError, exit 2, when either cannot be read)."""
    from conformance.fetch import RunStorage
    from lancespec.inspect import open_dataset

    dataset = open_dataset(args.uri, RunStorage(options, args.io_parallelism, limits_of(args)))
    if args.version is not None:
        dataset.snapshot(args.version)


@contextlib.contextmanager
def interrupt_ends_the_process(jvm_log: str) -> Iterator[None]:
    """While Spark runs, Ctrl-C is one line and exit 130 at once (``os._exit``), as everywhere else.

    Unwinding would stop Spark with tasks in flight: pyspark's own handler cancels the jobs, and its Python
    workers, which take the terminal's SIGINT too, crash (what the JVM and they print goes to ``jvm_log``,
    removed then). The JVM ignores SIGINT (pyspark starts it so) and exits by itself when this process ends
    (its standard input closes), started or still starting; it and its workers hold nothing lancespec must
    clean up, and ``os._exit`` ends every thread (the session's start, the jobs). The session starts in a
    thread of its own (``background_session``), where a SparkContext installs no handler of its own. Outside
    the main thread, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with contextlib.suppress(OSError):
            os.unlink(jvm_log)
        sys.stderr.write("lancespec: interrupted\n")
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run(args: argparse.Namespace) -> int:
    from conformance.baseline import render_baseline, set_aside_ids
    from conformance.spark.distributed import certify_with_spark
    from conformance.spark.session import background_session, spark_unavailable
    from reference import __version__

    options = parse_storage_options(args.storage_option)
    if args.io_parallelism is not None:  # the driver's and every executor's reads
        options["lancespec_io_parallelism"] = str(args.io_parallelism)
    chosen = renderers(args)
    set_aside = set_aside_ids(args.ignore, args.baseline)
    check_input(args, options)
    why = spark_unavailable()
    if why is not None:
        print(f"lancespec: error: Spark cannot start here: {why}", file=sys.stderr)
        return EXIT_UNREADABLE
    log = tempfile.NamedTemporaryFile(prefix="lancespec-spark-", suffix=".log", delete=False)  # noqa: SIM115
    log.close()
    with interrupt_ends_the_process(log.name):
        try:
            # the JVM and its workers start beside the driver's listing, decoding and checks; the jobs wait
            # for the session in their threads. A session this process had stays up; one started here stops.
            with background_session(args.master, app_name="lancespec spark-certify", jvm_log=log.name) as spark:
                result = certify_with_spark(spark, args.uri, version=args.version, all_versions=args.all_versions,
                                            areas=args.only, storage_options=options,
                                            fragments_per_task=args.fragments_per_task, limits=limits_of(args),
                                            set_aside=set_aside, since=args.since)
        except Exception:
            print(f"lancespec: what Spark printed is in {log.name}", file=sys.stderr)
            raise
    os.unlink(log.name)
    report = result.report
    emit_report(report, chosen, args)
    if args.write_baseline:
        write_text(args.write_baseline, render_baseline(report, __version__)[0], "the baseline")
    if not args.quiet:
        started = "" if spark.started_in is None else f", the session started in {spark.started_in:.2f} s beside it"
        sys.stderr.write(f"spark ({args.master}): {result.tasks} task(s), {result.fragments} fragment(s), "
                         f"{result.files} file(s) checked in {result.job_seconds:.2f} s; "
                         f"{result.seconds:.2f} s in all{started}\n")
    return report.exit_code
