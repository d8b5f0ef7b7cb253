"""``lancespec certify URI``: judge a dataset against the requirement catalogue.

Exit 0 conformant, 1 a MUST requirement is breached, 2 cannot read (the reader's setup: one line, no
requirement id) or cannot judge, 3 a lancespec bug (the report of what was checked still comes;
``lancespec.cli.main`` writes it), 130 interrupted (docs/exit-codes.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.fetch import RunStorage
    from conformance.findings import Report
    from reference.printable import Rendered

from ..destination import write_rendered, write_text
from .options import (
    add_area_option,
    add_limit_options,
    add_report_options,
    add_storage_options,
    dataset_uri,
    emit_report,
    leave_to_exit,
    limits_of,
    parse_storage_options,
    report_targets,
    version_number,
)

#: certify's report formats (spark-certify's too).
FORMATS = ("text", "json", "junit", "html")
HTML_HELP = "html: one self-contained page with the lineage diagram (needs Graphviz; docs/reports.md)"


def add_version_options(parser: argparse.ArgumentParser) -> None:
    """``--version N`` or ``--all-versions``."""
    versions = parser.add_mutually_exclusive_group()
    versions.add_argument("--version", type=version_number, help="the version to certify (default: latest)")
    versions.add_argument("--all-versions", action="store_true",
                          help="every version of the main root and of every branch")


def add_certify_options(parser: argparse.ArgumentParser) -> None:
    """What ``certify`` and ``spark-certify`` share: the dataset, its versions, the report, the areas, what
    to set aside, storage and limits."""
    parser.add_argument("uri", type=dataset_uri, help="dataset root: a local path, file:// or s3:// URI")
    add_version_options(parser)
    add_report_options(parser, FORMATS, HTML_HELP)
    add_area_option(parser)
    parser.add_argument("--ignore", action="append", default=[], metavar="ID",
                        help="set aside the findings of a requirement (MAN-013) or a known divergence (F-004): "
                        "reported, not counted in the exit status; repeat")
    parser.add_argument("--baseline", action="append", default=[], metavar="FILE",
                        help="set aside the findings a baseline file lists (written by --write-baseline): "
                        "any other finding still counts; repeat")
    parser.add_argument("--write-baseline", metavar="FILE",
                        help="write a baseline setting aside every finding of this run, one entry per finding "
                        "(a known divergence: one entry by its id)")
    parser.add_argument("--since", metavar="REPORT",
                        help="an earlier run's JSON report (--format json): carry over the findings of the versions "
                        "it judged that are unchanged on storage and judge the rest; refused (exit 2) when it was "
                        "written for another dataset, version selection, checks or limits")
    add_storage_options(parser)
    add_limit_options(parser)


def register(sub: Any) -> None:
    """Add ``certify`` to the ``lancespec`` subcommands ``sub``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "certify", help="judge a dataset against the requirement catalogue",
        description="Exit 0 conformant, 1 a MUST requirement is breached, 2 cannot read (storage options, "
                    "access, a missing bucket or dataset, a limit, an unsupported URI: one line, no requirement id) "
                    "or cannot judge (a feature lancespec does not know), 3 a lancespec bug (the report of what "
                    "was checked still comes), 130 interrupted. Every exit path: docs/exit-codes.md.")
    add_certify_options(parser)
    parser.set_defaults(func=run)


def run_storage(args: argparse.Namespace) -> RunStorage:
    """The store one certify run reads through, made from the command's options."""
    from conformance.fetch import RunStorage

    return RunStorage(parse_storage_options(args.storage_option), args.io_parallelism, limits_of(args))


def renderers(args: argparse.Namespace,
              storage: RunStorage | None = None) -> Mapping[str, Callable[[Report], Rendered]]:
    """certify's renderers; ``html`` (lancespec.render) only when asked for, checking Graphviz first, drawn
    through ``storage``, the store the run read through (a new one when the run gave none)."""
    from conformance.report import RENDERERS

    if "html" not in {fmt for fmt, _ in report_targets(args)}:
        return RENDERERS
    from lancespec.render.commands import certify_html

    return {**RENDERERS, "html": certify_html(args.uri, storage or run_storage(args), args.output)}


def emit_cannot_read(report: Report, args: argparse.Namespace) -> None:
    """The report of a run that could not read (``outcome`` cannot_read), for ``--format json`` or ``junit``
    only (text and html say nothing more than the one line ``main`` prints), with no summary on stderr."""
    from conformance.report import RENDERERS

    for fmt, path in report_targets(args):
        if fmt not in ("json", "junit"):
            continue
        if path is None:
            write_rendered(sys.stdout, RENDERERS[fmt](report))
        else:
            write_text(path, RENDERERS[fmt](report))


def run(args: argparse.Namespace) -> int:
    from conformance.baseline import render_baseline, set_aside_ids
    from conformance.certify import certify
    from lancespec.progress import progress_bar
    from reference import __version__

    storage = run_storage(args)
    chosen = renderers(args, storage)
    set_aside = set_aside_ids(args.ignore, args.baseline)
    with progress_bar("certifying", quiet=args.quiet) as progress:
        report = certify(args.uri, version=args.version, all_versions=args.all_versions, areas=args.only,
                         progress=progress, set_aside=set_aside, storage=storage, since=args.since,
                         with_evidence=any(form == "json" for form, _ in report_targets(args)))
    emit_report(report, chosen, args)
    leave_to_exit(report, storage)  # a million files' listings and tails: left for the process's end to free
    if args.write_baseline:
        text, entries = render_baseline(report, __version__)
        write_text(args.write_baseline, text, "the baseline")
        sys.stderr.write(f"wrote {entries} baseline {'entry' if entries == 1 else 'entries'} to "
                         f"{args.write_baseline}\n")
    return report.exit_code
