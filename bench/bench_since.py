"""Incremental certification (``certify --all-versions --since previous.json``) on a long history, after one
more commit, against certifying the new version alone (issue 33: at most 1.2x). Slow and opt-in: run it
directly, it is not part of ``bench/run.py``::

    python bench/bench_since.py                     # 10,000 versions (the history is built once, ~1 min)
    python bench/bench_since.py --versions 1000     # a quicker look

Steps: build (or reuse) a pylance-written growing history (``histories.growing_history``), copy it, certify
it in full with ``--all-versions`` and keep the JSON report, commit one more version, then time, best of
``--repeat`` alternating rounds: (a) ``certify --version NEW`` and (b) ``certify --all-versions --since
previous.json``, each writing its JSON report as CI would. Finally the incremental report is compared with
a full run's (equal less ``carried_over`` and ``evidence``), so the figure is of a run that is right.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from histories import commit_one_more, growing_history

from conformance.certify import certify
from conformance.report import to_json

LIMIT = 1.2
"""The most an incremental run may cost, as a multiple of certifying the new version alone (issue 33)."""


def _write_report(uri: str, out: Path, **options: Any) -> dict[str, Any]:
    document = to_json(certify(uri, **options))
    out.write_text(json.dumps(document, indent=2) + "\n")
    return document


def _timed(run: Callable[[], object]) -> float:
    gc.collect()
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def _judged(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in ("carried_over", "evidence")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "lancespec-bench-since",
                        help="where the history is built once and kept")
    args = parser.parse_args(argv)

    history = growing_history(args.cache / f"history-{args.versions}", args.versions)
    with tempfile.TemporaryDirectory(prefix="bench-since-") as work:
        uri = str(Path(work) / "ds")
        shutil.copytree(history, uri)
        previous = Path(work) / "previous.json"
        full_s = _timed(lambda: _write_report(uri, previous, all_versions=True))
        new = commit_one_more(uri)
        alone_out, since_out = Path(work) / "alone.json", Path(work) / "since.json"
        alone, since = [], []
        for _ in range(args.repeat):
            alone.append(_timed(lambda: _write_report(uri, alone_out, version=new)))
            since.append(_timed(lambda: _write_report(uri, since_out, all_versions=True, since=str(previous))))
        incremental = json.loads(since_out.read_text())
        full = _write_report(uri, Path(work) / "full.json", all_versions=True)
        same = _judged(incremental) == _judged(full)
    ratio = min(since) / min(alone)
    median_ratio = statistics.median(since) / statistics.median(alone)
    print(f"history: {args.versions:,} versions + 1 (pylance-written, {history})")
    print(f"certify --all-versions (full, writes previous.json): {full_s:.2f} s")
    print(f"certify --version {new} (the new version alone), best of {args.repeat}: {min(alone):.2f} s "
          f"(all: {', '.join(f'{t:.2f}' for t in alone)})")
    print(f"certify --all-versions --since previous.json, best of {args.repeat}: {min(since):.2f} s "
          f"(all: {', '.join(f'{t:.2f}' for t in since)})")
    print(f"ratio {ratio:.2f}x of the best, {median_ratio:.2f}x of the medians (limit {LIMIT}x); "
          f"carried over: {incremental['carried_over']}")
    print(f"incremental report equals a full run's: {same}")
    return 0 if same and ratio <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
