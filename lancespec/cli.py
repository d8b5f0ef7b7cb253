"""The ``lancespec`` command line.

Exit status: 0 success, 1 a breach (certify) or a failure (the other commands), 2 the input could not be
read or the command line is wrong (one line on stderr naming the file or the option and the problem, no
traceback), 3 an internal error (a bug in lancespec, one line saying where; certify still writes the report
of what it checked before; set LANCESPEC_DEBUG=1 for the traceback), 130 interrupted (Ctrl-C). Every value
a dataset controls is printed through ``printable`` (docs/security.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn, TypeVar

from rich.console import Console

from .conformance.certify import CertifyError, bug_site
from .reference.errors import LanceSpecError
from .reference.limits import DEFAULT_LIMITS, LIMIT_OPTIONS, Limits
from .reference.printable import printable

R = TypeVar("R")

EXIT_OK = 0
EXIT_UNREADABLE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

#: The largest version number there is (versions are u64).
MAX_VERSION = 2**64 - 1


class _Parser(argparse.ArgumentParser):
    """Command-line mistakes in one line (``lancespec: error: ...``, exit 2), not the usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_UNREADABLE, f"{self.prog}: error: {printable(message)} (see {self.prog} --help)\n")


def version_number(text: str) -> int:
    """An argparse type: a version, a decimal integer in [0, 2^64 - 1] (checked before converting, so a
    number of thousands of digits is refused in one line)."""
    digits = text.strip()
    if not digits.isdigit() or not digits.isascii() or len(digits) > len(str(MAX_VERSION)) \
            or int(digits) > MAX_VERSION:
        raise argparse.ArgumentTypeError(f"a version is an integer from 0 to {MAX_VERSION}, not {printable(text, 40)}")
    return int(digits)


def positive_count(text: str) -> int:
    """An argparse type: a positive integer of at most 19 digits (a limit)."""
    digits = text.strip()
    if not digits.isdigit() or not digits.isascii() or len(digits) > 19 or int(digits) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer of at most 19 digits, not {printable(text, 40)}")
    return int(digits)


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    """``--max-object-bytes``, ``--max-fragments``, ``--max-json-depth`` (reference.limits)."""
    for name, what in LIMIT_OPTIONS.items():
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=positive_count, metavar="N",
                            default=getattr(DEFAULT_LIMITS, name), help=f"{what} (default %(default)s)")


def limits_of(args: argparse.Namespace) -> Limits:
    """The limits the command line asked for."""
    return Limits(**{name: getattr(args, name) for name in LIMIT_OPTIONS})


def parse_storage_options(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; raises ValueError on an entry without ``=``."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--storage-option expects KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


def check_areas(only: Sequence[str] | None) -> None:
    """Refuse ``--only`` areas no check belongs to, naming the ones there are."""
    from .conformance.checks import all_checks

    areas = sorted({c.area for c in all_checks().values()})
    unknown = sorted(set(only or ()) - set(areas))
    if unknown:
        raise ValueError(f"unknown area(s) {', '.join(unknown)} for --only; choose from {', '.join(areas)}")


def emit_report(report: R, renderers: Mapping[str, Callable[[R], str]], fmt: str, output: str | None) -> None:
    """Write ``report`` in ``fmt`` to ``output`` (then a text summary goes to stderr unless ``fmt`` is text),
    or to stdout."""
    text = renderers[fmt](report)
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
        if fmt != "text":
            sys.stderr.write(renderers["text"](report))
    else:
        sys.stdout.write(text)


def _add_storage_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a pylance-style storage option (aws_endpoint, aws_region, allow_http, connect_timeout, "
                        "timeout, ...); repeat")
    parser.add_argument("--io-parallelism", type=int, metavar="N",
                        help="requests in flight at once (default 32; storage option lancespec_io_parallelism)")


def cmd_inspect(args: argparse.Namespace) -> int:
    from .conformance.fetch import RunStorage
    from .inspect import inspect_report, open_dataset, render_text

    storage = RunStorage(parse_storage_options(args.storage_option), args.io_parallelism, limits_of(args))
    dataset = open_dataset(args.uri, storage)
    snapshot = dataset.snapshot(args.version, tag=args.tag, branch=args.branch)
    report = inspect_report(dataset, snapshot)
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        render_text(report, Console())
    return EXIT_OK


def cmd_certify(args: argparse.Namespace) -> int:
    from .conformance.baseline import set_aside_ids, write_baseline
    from .conformance.certify import certify
    from .conformance.report import RENDERERS
    from .progress import progress_bar
    from .reference import __version__

    check_areas(args.only)
    set_aside = set_aside_ids(args.ignore, args.baseline)
    with progress_bar("certifying") as progress:
        report = certify(args.uri, version=args.version, all_versions=args.all_versions, areas=args.only,
                         storage_options=parse_storage_options(args.storage_option), progress=progress,
                         io_parallelism=args.io_parallelism, limits=limits_of(args), set_aside=set_aside)
    emit_report(report, RENDERERS, args.format, args.output)
    if args.write_baseline:
        write_baseline(report, args.write_baseline, __version__)
    return report.exit_code


def cmd_simulate(args: argparse.Namespace) -> int:
    from .simulator.report import run_command

    return run_command(args, parse_storage_options(args.storage_option))


def cmd_fixtures(args: argparse.Namespace) -> int:
    """``fixtures build`` / ``fixtures verify`` (docs/fixtures.md)."""
    from pathlib import Path

    from .conformance.fixtures.corpus import build_corpus, default_corpus, render_table, verify_corpus
    from .progress import progress_bar

    corpus = Path(args.corpus) if args.corpus else default_corpus()
    if args.action == "build":
        with progress_bar("building fixtures") as progress:
            index = build_corpus(corpus, only=args.case, progress=progress)
        sys.stdout.write(f"built {len(index['cases'])} cases into {corpus} ({index['total_bytes']} bytes, "
                         f"{len(index['files'])} files, corpus version {index['corpus_version']})\n")
        return EXIT_OK
    with progress_bar("verifying fixtures") as progress:
        report = verify_corpus(corpus, args.reader, only=args.case, progress=progress)
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        sys.stdout.write(render_table(report))
    return report.exit_code


def cmd_certify_writer(args: argparse.Namespace) -> int:
    """``certify-writer``: run the writer scenarios (docs/scenario-format.md, docs/writer-contract.md)."""
    from .conformance.scenarios import builtin_scenarios, load_scenarios
    from .conformance.scenarios.certify_writer import RENDERERS, certify_writer, make_writer
    from .progress import progress_bar

    scenarios = []
    for pattern in args.scenarios or ["*"]:
        if pattern.endswith(".json") or "/" in pattern:
            scenarios += load_scenarios([pattern])
        else:
            scenarios += builtin_scenarios(pattern)
    if not scenarios:
        raise ValueError(f"no scenario matches {args.scenarios}")
    unique = {s.name: s for s in scenarios}
    writer = make_writer(args.writer, args.capabilities)
    with progress_bar("certifying writer") as progress:
        report = certify_writer(writer, list(unique.values()), stores=args.store or ["local", "s3"],
                                workdir=args.workdir, compare=not args.no_compare, progress=progress)
    emit_report(report, RENDERERS, args.format, args.output)
    return report.exit_code


def _add_fixture_and_writer_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    """``fixtures build|verify`` and ``certify-writer`` (golden fixtures and writer certification)."""
    fixtures = sub.add_parser("fixtures", help="build or verify the golden fixture corpus (docs/fixtures.md)")
    fixtures_sub = fixtures.add_subparsers(dest="action", required=True)
    build = fixtures_sub.add_parser("build", help="regenerate the corpus deterministically")
    verify = fixtures_sub.add_parser("verify", help="hold a reader to the corpus; exit 1 on a failure",
                                     description="Prints a pass/fail table per case. The corpus is never modified.")
    verify.add_argument("--reader", required=True, metavar="READER",
                        help="reference, pylance, or cmd:COMMAND (docs/writer-contract.md)")
    verify.add_argument("--format", choices=("text", "json"), default="text")
    for p in (build, verify):
        p.add_argument("--corpus", metavar="DIR", help="the corpus directory (default: fixtures/ of the checkout)")
        p.add_argument("--case", action="append", metavar="GLOB", help="only cases whose id matches; repeat")
    fixtures.set_defaults(func=cmd_fixtures)

    writer = sub.add_parser("certify-writer", help="run the writer scenarios against a writer",
                            description="Exit 0 certified (expected divergences and unsupported steps allowed), "
                            "1 a step, a certification or a comparison failed.")
    writer.add_argument("--writer", required=True, metavar="WRITER", help="reference, pylance, or cmd:COMMAND")
    writer.add_argument("--scenarios", action="append", metavar="GLOB",
                        help="scenario names (a glob on the shipped ones) or scenario files (a path glob); repeat")
    writer.add_argument("--store", action="append", choices=("local", "s3"),
                        help="run on this store only (default both; s3 starts the embedded server); repeat")
    writer.add_argument("--capabilities", metavar="FILE", help="the writer's capability file (TOML)")
    writer.add_argument("--format", choices=("text", "json", "junit"), default="text")
    writer.add_argument("--output", metavar="FILE", help="write the report here")
    writer.add_argument("--no-compare", action="store_true", help="do not compare results with the reference")
    writer.add_argument("--workdir", metavar="DIR", help="keep the runs' local data here (default: a temp dir)")
    writer.set_defaults(func=cmd_certify_writer)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lancespec", description="Conformance tools for the Lance table format.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    inspect = sub.add_parser("inspect", help="show versions, bases, fragments and refs of a dataset")
    inspect.add_argument("uri", help="dataset root: a local path, file:// or s3:// URI")
    which = inspect.add_mutually_exclusive_group()
    which.add_argument("--version", type=version_number, help="a version number (default: latest)")
    which.add_argument("--tag", help="the version a tag names")
    inspect.add_argument("--branch", help="a branch (with --version: that version of the branch)")
    inspect.add_argument("--json", action="store_true", help="print the JSON document (docs/inspect-json.md)")
    _add_storage_option(inspect)
    add_limit_options(inspect)
    inspect.set_defaults(func=cmd_inspect)

    certify = sub.add_parser("certify", help="judge a dataset against the requirement catalogue",
                             description="Exit 0 conformant, 1 a MUST requirement is breached, 2 unreadable or "
                                         "cannot judge (a feature lancespec does not know), 3 a lancespec bug (the "
                                         "report of what was checked still comes), 130 interrupted.")
    certify.add_argument("uri", help="dataset root: a local path, file:// or s3:// URI")
    versions = certify.add_mutually_exclusive_group()
    versions.add_argument("--version", type=version_number, help="the version to certify (default: latest)")
    versions.add_argument("--all-versions", action="store_true",
                          help="every version of the main root and of every branch")
    certify.add_argument("--format", choices=("text", "json", "junit"), default="text")
    certify.add_argument("--output", metavar="FILE", help="write the report here (a text summary still goes "
                         "to stderr for json and junit)")
    certify.add_argument("--only", action="append", metavar="AREA",
                         help="run only this area's checks (layout, manifest, bases, files, refs, clones, "
                         "history, blobs, portability); repeat")
    certify.add_argument("--ignore", action="append", default=[], metavar="ID",
                         help="set aside the findings of a requirement (MAN-013) or a known divergence (F-004): "
                         "reported, not counted in the exit status; repeat")
    certify.add_argument("--baseline", action="append", default=[], metavar="FILE",
                         help="set aside every id a baseline file lists (written by --write-baseline); repeat")
    certify.add_argument("--write-baseline", metavar="FILE",
                         help="write a baseline setting aside every finding of this run")
    _add_storage_option(certify)
    add_limit_options(certify)
    certify.set_defaults(func=cmd_certify)
    _add_fixture_and_writer_commands(sub)

    from .conformance.spark.cli import add_spark_certify  # the command lives with the Spark harness

    add_spark_certify(sub, _add_storage_option)

    from .simulator.report import add_arguments as add_simulate_arguments

    simulate = sub.add_parser("simulate", help="concurrent writers, a real S3 server, injected faults, a checker",
                              description="Exit 0 no anomaly, 1 anomalies found (docs/simulator.md).")
    add_simulate_arguments(simulate)
    simulate.set_defaults(func=cmd_simulate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        func: Callable[[argparse.Namespace], int] = args.func
        return _run_command(parser, func, args)
    except KeyboardInterrupt:
        # Children (servers, writers, Spark) are stopped by the context managers the interrupt unwound.
        print("lancespec: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run_command(parser: argparse.ArgumentParser, func: Callable[[argparse.Namespace], int],
                 args: argparse.Namespace) -> int:
    try:
        return func(args)
    except LanceSpecError as exc:
        where = f"{printable(exc.where)}: " if exc.where else ""
        print(f"lancespec: error: {where}{printable(exc.message)}", file=sys.stderr)
        return EXIT_UNREADABLE
    except CertifyError as exc:
        if exc.report is not None:
            from .conformance.report import RENDERERS

            emit_report(exc.report, RENDERERS, args.format, args.output)
        if os.environ.get("LANCESPEC_DEBUG"):
            raise
        print(f"lancespec: internal error (a bug in lancespec): {printable(exc)}", file=sys.stderr)
        return EXIT_INTERNAL
    except ValueError as exc:
        parser.error(str(exc))
    except Exception as exc:  # a bug: say so in one line unless asked for the traceback
        if os.environ.get("LANCESPEC_DEBUG"):
            raise
        print(f"lancespec: internal error: {type(exc).__name__}: {printable(exc)} (at {bug_site(exc)}; "
              "set LANCESPEC_DEBUG=1 for details)", file=sys.stderr)
        return EXIT_INTERNAL
