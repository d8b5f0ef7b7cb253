"""``lancespec certify-store --endpoint URL --bucket B`` (an S3 endpoint, probed with boto3) or ``--uri
SCHEME://BUCKET`` (any store lancespec reads, ``az://`` and ``gs://`` included, probed through lancespec's
storage layer with pylance's storage options): is this object store safe for Lance? (docs/certify-store.md)

Exit 0 when every commit-critical property holds, 1 when one does not, 2 when the command line is wrong or
the endpoint cannot be reached.
"""

from __future__ import annotations

import argparse
import io
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from reference.errors import InvalidOption, StorageError

from .options import (
    EXIT_FAILED,
    EXIT_OK,
    DeprecatedSpelling,
    add_report_options,
    check_report_options,
    emit_report,
    exits,
    parse_storage_options,
)


def register(sub: Any) -> None:
    """Add ``certify-store`` to the ``lancespec`` subcommands ``sub``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "certify-store", help="judge an object store (an S3 endpoint, or az://, gs://, s3:// through --uri): is "
                              "Lance's commit protocol safe there?",
        description="Give --endpoint and --bucket (S3, probed with boto3) or --uri (any scheme lancespec reads, "
                    "probed through its storage layer). Keys are left under _lancespec_store_judge/ in the "
                    "bucket. " + exits(
            "0 every commit-critical property holds, 1 one does not (2 also when the endpoint cannot be reached)"))
    parser.add_argument("--endpoint", metavar="URL", help="the S3 endpoint, http:// or https://")
    parser.add_argument("--bucket", help="an existing bucket of that endpoint to write the probes into")
    parser.add_argument("--uri", metavar="SCHEME://BUCKET",
                        help="instead of --endpoint and --bucket: an existing bucket or container (az://C, gs://B, "
                             "s3://B) reached with the --storage-option keys pylance takes")
    parser.add_argument("--race-rounds", type=int, default=100, metavar="N",
                        help="rounds of 8 concurrent conditional PUTs (default 100)")
    add_report_options(parser, ("text", "json"))
    parser.add_argument("--json", action=DeprecatedSpelling, fmt="json", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="credentials, region or (with --uri) endpoint (aws_access_key_id=..., "
                             "account_name=..., azure_endpoint=...); repeat")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from simulator.store_judge import StoreVerdict, judge_store, judge_store_uri

    if args.race_rounds < 1:
        raise InvalidOption("--race-rounds must be at least 1")
    options = parse_storage_options(args.storage_option)
    if args.uri is not None:
        if args.endpoint is not None or args.bucket is not None:
            raise InvalidOption("--uri replaces --endpoint and --bucket; give one or the other")
        root = args.uri.rstrip("/")
        _, sep, bucket = root.partition("://")
        if not sep or not bucket or "/" in bucket:
            raise InvalidOption(f"--uri must be SCHEME://BUCKET (a bucket or container, no path), not {args.uri!r}")
        _reachable_uri(root, options)
        args.endpoint, args.bucket = root, bucket
        check_report_options(args)
        verdict = judge_store_uri(root, options, race_rounds=args.race_rounds)
    else:
        if args.endpoint is None or args.bucket is None:
            raise InvalidOption("give --endpoint and --bucket (an S3 endpoint) or --uri SCHEME://BUCKET")
        if not args.endpoint.startswith(("http://", "https://")):
            raise InvalidOption(f"--endpoint must be an http:// or https:// URL, not {args.endpoint!r}")
        _reachable(args.endpoint, args.bucket, options)
        check_report_options(args)
        verdict = judge_store(args.endpoint, args.bucket, options, race_rounds=args.race_rounds)

    def text(v: StoreVerdict) -> str:
        """The verdict line, then the table of properties."""
        out = io.StringIO()
        console = Console(file=out, width=140)
        if v.commit_safe:
            console.print(f"SAFE: Lance's commit protocol is safe on this store ({args.endpoint}, bucket "
                          f"{args.bucket}): each commit-critical property holds; the atomicity race is evidence, "
                          "not proof", highlight=False, markup=False, soft_wrap=True)
        else:
            failed = ", ".join(p.name for p in v.properties if p.commit_critical and not p.passed)
            console.print(f"NOT SAFE: NOT safe for Lance commits on {args.endpoint} (bucket {args.bucket}): "
                          f"concurrent writers can lose commits here ({failed})", highlight=False, markup=False,
                          soft_wrap=True)
        table = Table(title=f"certify-store {args.endpoint} (bucket {args.bucket})")
        for column in ("property", "commit-critical", "verdict", "observed"):
            table.add_column(column)
        for p in v.properties:
            table.add_row(p.name, "yes" if p.commit_critical else "", "pass" if p.passed else "FAIL", p.observed)
        console.print(table)
        return out.getvalue()

    emit_report(verdict, {"text": text, "json": lambda v: json.dumps(v.to_json(), indent=1) + "\n"}, args)
    return EXIT_OK if verdict.commit_safe else EXIT_FAILED


def _reachable(endpoint: str, bucket: str, options: dict[str, str]) -> None:
    """One HEAD of the bucket first, so an unreachable endpoint or a missing bucket is one line, exit 2."""
    from simulator.preflight import s3_client

    try:
        s3_client(endpoint, options).head_bucket(Bucket=bucket)
    except Exception as exc:
        raise StorageError(f"cannot reach bucket {bucket!r} ({type(exc).__name__}: {str(exc)[:160]})",
                           endpoint) from None


def _reachable_uri(root: str, options: dict[str, str]) -> None:
    """One listing of the bucket or container first, so an unreachable store or a missing bucket is one line
    (the storage layer's CannotRead), exit 2."""
    from reference.store import open_store

    next(iter(open_store(dict(options)).list_pages(root, 1)), None)
