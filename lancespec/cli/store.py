"""``lancespec certify-store --endpoint URL``: is this object store safe for Lance? (docs/certify-store.md)

Exit 0 when every commit-critical property holds, 1 when one does not, 2 when the command line is wrong or
the endpoint cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from lancespec.reference.errors import InvalidOption, StorageError

from .options import EXIT_FAILED, EXIT_OK, parse_storage_options


def register(sub: Any) -> None:
    """Add ``certify-store`` to the ``lancespec`` subcommands ``sub``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "certify-store", help="judge an S3-compatible endpoint: is Lance's commit protocol safe there?",
        description="Exit 0 when every commit-critical property holds, 1 when one does not, 2 when the endpoint "
                    "cannot be reached. Keys are left under _lancespec_store_judge/ in the bucket.")
    parser.add_argument("--endpoint", required=True, metavar="URL", help="the S3 endpoint, http:// or https://")
    parser.add_argument("--bucket", required=True, help="an existing bucket to write the probes into")
    parser.add_argument("--race-rounds", type=int, default=100, metavar="N",
                        help="rounds of 8 concurrent conditional PUTs (default 100)")
    parser.add_argument("--json", metavar="FILE", help="also write the verdict as JSON here")
    parser.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="credentials or region (aws_access_key_id=..., aws_secret_access_key=...); repeat")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lancespec.simulator.store_judge import judge_store

    if not args.endpoint.startswith(("http://", "https://")):
        raise InvalidOption(f"--endpoint must be an http:// or https:// URL, not {args.endpoint!r}")
    if args.race_rounds < 1:
        raise InvalidOption("--race-rounds must be at least 1")
    options = parse_storage_options(args.storage_option)
    _reachable(args.endpoint, args.bucket, options)
    verdict = judge_store(args.endpoint, args.bucket, options, race_rounds=args.race_rounds)
    console = Console() if sys.stdout.isatty() else Console(width=140)
    table = Table(title=f"certify-store {args.endpoint} (bucket {args.bucket})")
    for column in ("property", "commit-critical", "verdict", "observed"):
        table.add_column(column)
    for p in verdict.properties:
        mark = "[green]pass[/green]" if p.passed else "[red]FAIL[/red]"
        table.add_row(p.name, "yes" if p.commit_critical else "", mark, p.observed)
    console.print(table)
    if verdict.commit_safe:
        console.print("[green]Lance's commit protocol is safe on this store[/green] (each commit-critical "
                      "property holds; the atomicity race is evidence, not proof)")
    else:
        console.print("[red]NOT safe for Lance commits[/red]: concurrent writers can lose commits here")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(verdict.to_json(), fh, indent=1)
            fh.write("\n")
    return EXIT_OK if verdict.commit_safe else EXIT_FAILED


def _reachable(endpoint: str, bucket: str, options: dict[str, str]) -> None:
    """One HEAD of the bucket first, so an unreachable endpoint or a missing bucket is one line, exit 2."""
    from lancespec.simulator.preflight import s3_client

    try:
        s3_client(endpoint, options).head_bucket(Bucket=bucket)
    except Exception as exc:
        raise StorageError(f"cannot reach bucket {bucket!r} ({type(exc).__name__}: {str(exc)[:160]})",
                           endpoint) from None
