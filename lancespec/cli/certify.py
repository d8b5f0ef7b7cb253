"""``lancespec certify URI``: judge a dataset against the requirement catalogue.

Exit 0 conformant, 1 a MUST requirement is breached, 2 unreadable or cannot judge, 3 a lancespec bug (the
report of what was checked still comes; ``lancespec.cli.main`` writes it), 130 interrupted.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lancespec.conformance.findings import Report

from .options import (
    add_limit_options,
    add_storage_options,
    check_areas,
    dataset_uri,
    emit_report,
    limits_of,
    parse_storage_options,
    version_number,
)


def add_version_options(parser: argparse.ArgumentParser, formats: tuple[str, ...] = ("text", "json", "junit"),
                        format_help: str | None = None) -> None:
    """``--version N`` or ``--all-versions``, and the report's ``--format`` (one of ``formats``) and
    ``--output``."""
    versions = parser.add_mutually_exclusive_group()
    versions.add_argument("--version", type=version_number, help="the version to certify (default: latest)")
    versions.add_argument("--all-versions", action="store_true",
                          help="every version of the main root and of every branch")
    parser.add_argument("--format", choices=formats, default="text", help=format_help)
    parser.add_argument("--output", metavar="FILE", help="write the report here (a text summary still goes "
                        "to stderr for json and junit)")


def register(sub: Any) -> None:
    """Add ``certify`` to the ``lancespec`` subcommands ``sub``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "certify", help="judge a dataset against the requirement catalogue",
        description="Exit 0 conformant, 1 a MUST requirement is breached, 2 unreadable or cannot judge (a "
                    "feature lancespec does not know), 3 a lancespec bug (the report of what was checked still "
                    "comes), 130 interrupted.")
    parser.add_argument("uri", type=dataset_uri, help="dataset root: a local path, file:// or s3:// URI")
    add_version_options(parser, ("text", "json", "junit", "html"),
                        "html: one self-contained page with the lineage diagram (needs Graphviz; docs/reports.md)")
    parser.add_argument("--only", action="append", metavar="AREA",
                        help="run only this area's checks (layout, manifest, bases, files, refs, clones, "
                        "history, blobs, portability); repeat")
    parser.add_argument("--ignore", action="append", default=[], metavar="ID",
                        help="set aside the findings of a requirement (MAN-013) or a known divergence (F-004): "
                        "reported, not counted in the exit status; repeat")
    parser.add_argument("--baseline", action="append", default=[], metavar="FILE",
                        help="set aside every id a baseline file lists (written by --write-baseline); repeat")
    parser.add_argument("--write-baseline", metavar="FILE",
                        help="write a baseline setting aside every finding of this run")
    add_storage_options(parser)
    add_limit_options(parser)
    parser.set_defaults(func=run)


def renderers(args: argparse.Namespace) -> Mapping[str, Callable[[Report], str]]:
    """certify's renderers; ``html`` (lancespec.render) only when asked for, checking Graphviz first."""
    from lancespec.conformance.report import RENDERERS

    if args.format != "html":
        return RENDERERS
    from lancespec.render.commands import certify_html

    return {**RENDERERS, "html": certify_html(args.uri, parse_storage_options(args.storage_option),
                                              args.io_parallelism, limits_of(args), args.output)}


def run(args: argparse.Namespace) -> int:
    from lancespec.conformance.baseline import set_aside_ids, write_baseline
    from lancespec.conformance.certify import certify
    from lancespec.progress import progress_bar
    from lancespec.reference import __version__

    check_areas(args.only)
    chosen = renderers(args)
    set_aside = set_aside_ids(args.ignore, args.baseline)
    with progress_bar("certifying") as progress:
        report = certify(args.uri, version=args.version, all_versions=args.all_versions, areas=args.only,
                         storage_options=parse_storage_options(args.storage_option), progress=progress,
                         io_parallelism=args.io_parallelism, limits=limits_of(args), set_aside=set_aside)
    emit_report(report, chosen, args.format, args.output)
    if args.write_baseline:
        write_baseline(report, args.write_baseline, __version__)
    return report.exit_code
