"""``lancespec fixtures build|verify``: the golden fixture corpus (docs/fixtures.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .options import EXIT_OK, add_quiet_option, add_report_options, emit_report, exits


def register(sub: Any) -> None:
    """Add ``fixtures build`` and ``fixtures verify`` to the ``lancespec`` subcommands ``sub``."""
    fixtures = sub.add_parser("fixtures", help="build or verify the golden fixture corpus (docs/fixtures.md)")
    actions = fixtures.add_subparsers(dest="action", required=True)
    build = actions.add_parser("build", help="regenerate the corpus deterministically",
                               description=exits("0 built"))
    verify = actions.add_parser("verify", help="hold a reader to the corpus; exit 1 on a failure",
                                description="Prints the verdict (PASSED or FAILED), then a pass/fail table per case. "
                                "The corpus is never modified. " + exits("0 every case passed (or failed as "
                                "expected), 1 a case failed"))
    verify.add_argument("--reader", required=True, metavar="READER",
                        help="reference, pylance, lancedb, or cmd:COMMAND (docs/writer-contract.md)")
    add_report_options(verify, ("text", "json"))
    add_quiet_option(build)
    for p in (build, verify):
        p.add_argument("--corpus", metavar="DIR", help="the corpus directory (default: fixtures/ of the checkout)")
        p.add_argument("--case", action="append", metavar="GLOB", help="only cases whose id matches; repeat")
    fixtures.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from conformance.corpus.corpus import build_corpus, default_corpus, render_table, verify_corpus
    from lancespec.progress import progress_bar

    corpus = Path(args.corpus) if args.corpus else default_corpus()
    if args.action == "build":
        with progress_bar("building fixtures", quiet=args.quiet) as progress:
            index = build_corpus(corpus, only=args.case, progress=progress)
        if not args.quiet:
            sys.stdout.write(f"built {len(index['cases'])} cases into {corpus} ({index['total_bytes']} bytes, "
                             f"{len(index['files'])} files, corpus version {index['corpus_version']})\n")
        return EXIT_OK
    with progress_bar("verifying fixtures", quiet=args.quiet) as progress:
        report = verify_corpus(corpus, args.reader, only=args.case, progress=progress)
    emit_report(report, {"text": render_table, "json": lambda r: json.dumps(r.to_json(), indent=2) + "\n"}, args)
    return report.exit_code
