"""``lancespec inspect URI``: the versions, bases, fragments and refs of a dataset (docs/inspect-json.md)."""

from __future__ import annotations

import argparse
import io
import sys
from typing import Any

from reference.errors import InvalidOption
from reference.printable import Rendered, json_chunks, printable

from ..destination import write_rendered, write_text
from .options import (
    EXIT_OK,
    DeprecatedSpelling,
    add_limit_options,
    add_report_options,
    add_storage_options,
    dataset_uri,
    exits,
    limits_of,
    parse_storage_options,
    report_targets,
    version_number,
)


def register(sub: Any) -> None:
    """Add ``inspect`` to the ``lancespec`` subcommands ``sub``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "inspect", help="show versions, bases, fragments and refs of a dataset", description=exits("0 shown"))
    parser.add_argument("uri", type=dataset_uri, help="dataset root: a local path, file:// or s3:// URI")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--version", type=version_number, help="a version number (default: latest)")
    which.add_argument("--tag", help="the version a tag names")
    parser.add_argument("--branch", help="a branch (with --version: that version of the branch)")
    add_report_options(parser, ("text", "json"), "json: the JSON document (docs/inspect-json.md)",
                       "write the report here")
    parser.add_argument("--json", action=DeprecatedSpelling, fmt="json", nargs=0, help=argparse.SUPPRESS)
    parser.add_argument("--graph", metavar="FILE", help="write the lineage diagram of every version, branch, tag, "
                        "clone source and base: FILE.svg (needs Graphviz) or FILE.dot (docs/reports.md)")
    add_storage_options(parser)
    add_limit_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from conformance.certify import stop_if_unread
    from conformance.fetch import RunStorage
    from lancespec.inspect import inspect_report, open_dataset, render_text

    if args.graph and (args.format != "text" or args.output or args.version is not None or args.tag or args.branch):
        raise InvalidOption("--graph draws every version of every branch; "
                            "it takes no --format, --output, --version, --tag or --branch")
    storage = RunStorage(parse_storage_options(args.storage_option), args.io_parallelism, limits_of(args))
    dataset = open_dataset(args.uri, storage)
    snapshot = dataset.snapshot(args.version, tag=args.tag, branch=args.branch)
    if args.graph:
        from lancespec.render.commands import draw_lineage

        draw_lineage(dataset, args.graph)
        stop_if_unread(storage)
        if not args.quiet:
            print(f"lancespec: wrote the lineage diagram to {printable(args.graph, 200)}", file=sys.stderr)
        return EXIT_OK
    report = inspect_report(dataset, snapshot)
    stop_if_unread(storage)  # a read the report passed over (a ref, a base) that the setup kept from it
    for fmt, path in report_targets(args):
        if path is None and args.quiet:  # inspect has no verdict line: quiet prints nothing
            continue
        if fmt == "text" and path is None:
            render_text(report, Console())
            continue
        text: Rendered
        if fmt == "json":
            text = json_chunks(report)
        else:
            buffer = io.StringIO()
            render_text(report, Console(file=buffer, width=80))
            text = buffer.getvalue()
        if path is None:
            write_rendered(sys.stdout, text)
        else:
            write_text(path, text)
    return EXIT_OK
