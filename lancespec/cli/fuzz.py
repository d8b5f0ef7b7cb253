"""The options of ``python -m lancespec.fuzz`` (``lancespec.fuzz``: the fuzzer of certify on hostile
datasets, docs/security.md). Exit 0 when every case passed, 1 otherwise, the failing seeds printed."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

from lancespec import fuzz as fuzzer

from .options import EXIT_FAILED, EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lancespec.fuzz",
                                     description=(fuzzer.__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200, help="how many cases (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="the first case's seed (default 0)")
    parser.add_argument("--workdir", help="where the pristine world and the case copy live, the world kept for later "
                        "runs, so that a seed replays against the world it failed in (default: a temp dir)")
    parser.add_argument("--structured-share", type=float, default=fuzzer.STRUCTURED_SHARE, metavar="P",
                        help="the share of damage to manifests, transactions, deletion files and refs that is "
                        f"structure-aware (default {fuzzer.STRUCTURED_SHARE}; 0 replays the seeds of runs before it)")
    parser.add_argument("--serve", type=int, metavar="MEMORY", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:  # a worker process (fuzz.Worker starts it)
        fuzzer.serve(args.serve)
        return EXIT_OK
    with tempfile.TemporaryDirectory(prefix="lancespec-fuzz-") as tmp:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        result = fuzzer.fuzz(args.cases, args.seed, workdir, progress=True,
                              structured_share=args.structured_share)
    for seed, why in sorted(result.failures.items()):
        print(f"seed {seed}: {why}")
    print(result.summary())
    return EXIT_FAILED if result.failures else EXIT_OK
