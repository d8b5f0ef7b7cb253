"""``lancespec inspect URI``: the versions, bases, fragments and refs of a dataset (docs/inspect-json.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .options import EXIT_OK, add_limit_options, add_storage_options, limits_of, parse_storage_options, version_number


def register(sub: Any) -> None:
    """Add ``inspect`` to the ``lancespec`` subcommands ``sub``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "inspect", help="show versions, bases, fragments and refs of a dataset")
    parser.add_argument("uri", help="dataset root: a local path, file:// or s3:// URI")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--version", type=version_number, help="a version number (default: latest)")
    which.add_argument("--tag", help="the version a tag names")
    parser.add_argument("--branch", help="a branch (with --version: that version of the branch)")
    parser.add_argument("--json", action="store_true", help="print the JSON document (docs/inspect-json.md)")
    add_storage_options(parser)
    add_limit_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from lancespec.conformance.fetch import RunStorage
    from lancespec.inspect import inspect_report, render_text
    from lancespec.reference.table import Dataset

    storage = RunStorage(parse_storage_options(args.storage_option), args.io_parallelism, limits_of(args))
    dataset = Dataset.open(args.uri, storage=storage)
    snapshot = dataset.snapshot(args.version, tag=args.tag, branch=args.branch)
    report = inspect_report(dataset, snapshot)
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        render_text(report, Console())
    return EXIT_OK
