"""Simulator throughput and checker speed (not a lancespec-vs-pylance pair: run it on its own).

    python bench/bench_simulate.py [--quick] [--writers 1,2,4,8] [--repeat N] [--json FILE]

1. Commits per second with 1, 2, 4 and 8 writer processes, reference and pylance, on the embedded server
   (through the proxy, no faults, honest personality): an append-only workload of ``appends x writers``
   operations on one dataset, timed from the writers' release to the last completion; the checker then
   proves the run clean (a run with an anomaly is reported as such, its figure is not trusted). With
   ``--repeat N`` every (writers, kind) run is repeated N times, the kinds alternating within a round, and
   the table gives each one's median and the ratio reference / pylance of the medians (above 1: the
   reference commits more versions per second). ``--json`` also gives each run's requests per commit by
   class, as the proxy counted them.
2. Checker time for a synthetic 10,000-operation history (8 writers, appends, deletes and overwrites on two
   datasets, every manifest in the wire log, a cleanup per dataset that removed all but the last 100
   versions, which are retained with their rows).

``bench/run.py`` imports this module but it registers no benchmark there: both measurements are of the
simulator alone.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from conformance.operations import Append, Cleanup, Delete, Overwrite
from reference.layout import ManifestNaming, manifest_name
from simulator.attribution import FinalState, VersionState
from simulator.checker import check
from simulator.history import History
from simulator.proxy import WireWrite
from simulator.simulate import RunConfig, simulate
from simulator.workload import Planned, initial_ids, row_id


def commits_per_second(writers: int, writer: str, appends: int) -> dict[str, Any]:
    config = RunConfig(writers=writers, ops=appends * writers, seed=writers, writer=writer, faults="none",
                       datasets=1, preflight_rounds=0, weights={"append": 1.0})
    report = simulate(config)
    return {"writers": writers, "writer": writer, "operations": len(report.history.records()),
            "commits": report.result.commits, "seconds": round(report.seconds_writing, 3),
            "commits_per_s": round(report.commits_per_s, 3), "anomalies": len(report.result.anomalies),
            "requests_per_commit": {kind: round(n / max(report.result.commits, 1), 2)
                                    for kind, n in sorted(report.requests.items())},
            "failed": sum(1 for r in report.history.records() if r.outcome != "ok")}


def synthetic(ops: int, writers: int = 8, datasets: int = 2, retained: int = 100,
              seed: int = 1) -> tuple[History, list[WireWrite], FinalState]:
    """A clean history of ``ops`` operations, its wire log and final state (see the module docstring)."""
    rng = random.Random(seed)
    raw: list[tuple[float, int, str, Planned, dict[str, Any]]] = []
    wire: list[WireWrite] = []
    state = {f"ds{d}": list(initial_ids(d)) for d in range(datasets)}
    version = dict.fromkeys(state, 1)
    snapshots: dict[str, dict[int, tuple[int, ...]]] = {d: {1: tuple(rows)} for d, rows in state.items()}
    counters = [0] * writers
    t = 0.0
    for _ in range(ops):
        w = rng.randrange(writers)
        index = counters[w]
        counters[w] += 1
        dataset = f"ds{rng.randrange(datasets)}"
        roll = rng.random()
        if roll < 0.8 or len(state[dataset]) < 4:
            ids = tuple(row_id(w, index, k) for k in range(rng.randint(1, 3)))
            op = Planned(w, index, (Append(dataset, ids[0], len(ids), max_rows_per_file=None),))
            state[dataset] = state[dataset] + list(ids)
        elif roll < 0.97:
            ids = tuple(rng.sample(state[dataset], 2))
            op = Planned(w, index, (Delete(dataset, ids),))
            state[dataset] = [r for r in state[dataset] if r not in ids]
        else:
            ids = tuple(row_id(w, index, k) for k in range(3))
            op = Planned(w, index, (Overwrite(dataset, ids[0], len(ids), max_rows_per_file=None),))
            state[dataset] = list(ids)
        version[dataset] += 1
        v = version[dataset]
        snapshots[dataset][v] = tuple(state[dataset])
        md5 = f"{dataset}-{v}"
        raw.append((t, w, "invoke", op, {}))
        wire.append(WireWrite(w, t + 0.0004, "manifest-put", "b",
                              f"{dataset}/_versions/{manifest_name(v, ManifestNaming.V2)}", 200, md5))
        raw.append((t + 0.0008, w, "ok", op, {"version": v}))
        t += 0.001
    final = FinalState(initial=tuple(state))
    for dataset, versions in snapshots.items():
        keep = sorted(versions)[-retained:]
        cleanup = Planned(0, counters[0], (Cleanup(dataset, retain_versions=retained),))
        counters[0] += 1
        raw.append((t, 0, "invoke", cleanup, {}))
        for v in sorted(versions)[:-retained]:
            wire.append(WireWrite(0, t + 0.0001, "delete", "b",
                                  f"{dataset}/_versions/{manifest_name(v, ManifestNaming.V2)}", 204))
        raw.append((t + 0.0002, 0, "ok", cleanup, {}))
        t += 0.001
        final.versions[dataset] = {v: VersionState(f"{dataset}-{v}" if v > 1 else "setup", versions[v],
                                                   read_version=v - 1) for v in keep}
    return History.build(raw), wire, final


def checker_time(ops: int) -> dict[str, Any]:
    history, wire, final = synthetic(ops)
    started = time.perf_counter()
    result = check(history, wire, final)
    seconds = time.perf_counter() - started
    return {"operations": ops, "events": len(history), "seconds": round(seconds, 3),
            "anomalies": len(result.anomalies), "commits": result.commits}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer appends per writer, 1,000-op checker history")
    parser.add_argument("--writers", default="1,2,4,8", help="writer counts (default 1,2,4,8)")
    parser.add_argument("--appends", type=int, default=None, help="appends per writer (default 25, quick 8)")
    parser.add_argument("--kinds", default="reference,pylance", help="writer kinds (default reference,pylance)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per (writers, kind), alternating (default 1)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    args = parser.parse_args(argv)
    os.environ.setdefault("LANCE_LOG", "error")
    console = Console() if sys.stdout.isatty() else Console(width=120)
    appends = args.appends or (8 if args.quick else 25)
    rows = []
    kinds = args.kinds.split(",")
    counts = [int(x) for x in args.writers.split(",")]
    console.print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for round_ in range(args.repeat):
        for writers in counts:
            for kind in kinds:
                console.print(f"  round {round_ + 1}/{args.repeat}: {kind}, {writers} writer(s), {appends} appends "
                              "each ...")
                rows.append({**commits_per_second(writers, kind, appends), "round": round_ + 1,
                             "load": round(os.getloadavg()[0], 1)})
    table = Table(title=f"commits per second on the embedded server ({appends} appends per writer, no faults, "
                        f"median [each of {args.repeat} run(s)])")
    for column in ("writers", *kinds, *(["reference / pylance"] if {"reference", "pylance"} <= set(kinds) else []),
                   "failed", "anomalies"):
        table.add_column(column, justify="right")
    for writers in counts:
        mine = {k: [r for r in rows if r["writers"] == writers and r["writer"] == k] for k in kinds}
        median = {k: statistics.median(r["commits_per_s"] for r in mine[k]) for k in kinds}
        runs = {k: " ".join(f"{r['commits_per_s']:.2f}" for r in mine[k]) for k in kinds}
        cells = [f"{median[k]:.2f} [{runs[k]}]" for k in kinds]
        if {"reference", "pylance"} <= set(kinds):
            cells.append(f"{median['reference'] / median['pylance']:.2f}" if median["pylance"] else "-")
        table.add_row(str(writers), *cells, str(sum(r["failed"] for k in kinds for r in mine[k])),
                      str(sum(r["anomalies"] for k in kinds for r in mine[k])))
    console.print(table)
    console.print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    ops = 1_000 if args.quick else 10_000
    checked = checker_time(ops)
    console.print(f"checker: {checked['operations']} operations ({checked['events']} events), "
                  f"{checked['commits']} versions, {checked['seconds']:.2f} s, {checked['anomalies']} anomalies")
    if args.json:
        args.json.write_text(json.dumps({"commits": rows, "checker": checked}, indent=2) + "\n")
    return 0 if all(r["anomalies"] == 0 for r in rows) and checked["anomalies"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
