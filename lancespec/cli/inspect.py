"""``lancespec inspect URI``: the versions, bases, fragments and refs of a dataset (docs/inspect-json.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from lancespec.reference.errors import InvalidOption

from .options import (
    EXIT_OK,
    add_limit_options,
    add_storage_options,
    dataset_uri,
    limits_of,
    parse_storage_options,
    version_number,
)


def register(sub: Any) -> None:
    """Add ``inspect`` to the ``lancespec`` subcommands ``sub``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "inspect", help="show versions, bases, fragments and refs of a dataset")
    parser.add_argument("uri", type=dataset_uri, help="dataset root: a local path, file:// or s3:// URI")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--version", type=version_number, help="a version number (default: latest)")
    which.add_argument("--tag", help="the version a tag names")
    parser.add_argument("--branch", help="a branch (with --version: that version of the branch)")
    parser.add_argument("--json", action="store_true", help="print the JSON document (docs/inspect-json.md)")
    parser.add_argument("--graph", metavar="FILE", help="write the lineage diagram of every version, branch, tag, "
                        "clone source and base: FILE.svg (needs Graphviz) or FILE.dot (docs/reports.md)")
    add_storage_options(parser)
    add_limit_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from lancespec.conformance.fetch import RunStorage
    from lancespec.inspect import inspect_report, open_dataset, render_text

    if args.graph and (args.json or args.version is not None or args.tag or args.branch):
        raise InvalidOption("--graph draws every version of every branch; "
                            "it takes no --json, --version, --tag or --branch")
    storage = RunStorage(parse_storage_options(args.storage_option), args.io_parallelism, limits_of(args))
    dataset = open_dataset(args.uri, storage)
    snapshot = dataset.snapshot(args.version, tag=args.tag, branch=args.branch)
    if args.graph:
        from lancespec.render.commands import draw_lineage

        draw_lineage(dataset, args.graph)
        return EXIT_OK
    report = inspect_report(dataset, snapshot)
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        render_text(report, Console())
    return EXIT_OK
