"""Certify where datasets live, scheme by scheme: s3:// (the embedded S3 server), az:// (Azurite) and gs://
(fake-gcs-server), lancespec against pylance in the same run.

    python bench/bench_stores.py [--schemes s3,az,gs] [--fragments N] [--versions V] [--latency-ms MS]
                                 [--repeat N] [--json FILE]

Each emulator runs on 127.0.0.1 behind the simulator's fault proxy with bench_s3.py's latency-only profile
(every request waits ``--latency-ms``, default 20, jittered 0.5x-1.5x). The input is ``--versions`` pylance
appends (default 5) of one-row fragments, ``--fragments`` in all (default 1,000), written straight to the
emulator; on gs:// (where object_store cannot upload to fake-gcs-server) pylance writes it on local disk and it
is uploaded through the JSON API. Sides, timed ``--repeat`` times (default 3) alternately after one warm-up,
each through its own proxy port so its requests are counted apart: ``lancespec`` (``certify`` of every version)
and ``pylance walk + validate`` (open, then every version's fragments' data files and ``validate()``).

``bench_s3.py --scheme az|gs`` measures one store already running (``lancespec serve az``); this script starts
each emulator itself and, for gs://, puts the input in place without object_store.

Reported per scheme: best and median seconds, the ratio lancespec / pylance (of the bests), requests (GET,
HEAD, LIST) per distinct object read, and this process's CPU milliseconds per request of each side (both run
in this process: lancespec's Python and Rust, pylance's Rust). The proxy classifies requests by S3's shapes: on
az:// a listing (``GET /account/container?comp=list``) counts as a GET of one object named by the container,
so the distinct objects of az:// are one too many (and requests per object a hair low); on gs:// listings are
``GET /bucket?list-type=2``, as on S3.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench_s3 import ProxyProcess, build, counted, lancespec_certify, pylance_walk
from harness import BestAndMedian

from simulator.emulators import (
    AzuriteServer,
    FakeGcsServer,
)
from simulator.s3 import EmbeddedS3Server

SCHEMES = ("s3", "az", "gs")
LANCESPEC, PYLANCE = 0, 1


class Side(BestAndMedian):
    def __init__(self, name: str) -> None:
        self.name = name
        self.runs: list[float] = []
        self.cpu: list[float] = []
        self.requests = 0
        self.objects = 0


@contextmanager
def dataset(scheme: str, fragments: int, versions: int) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(uri, endpoint, storage options) of the input on ``scheme``'s emulator, for as long as the block runs."""
    if scheme == "s3":
        with EmbeddedS3Server() as s3:
            uri = s3.create_bucket("bench") + "/ds"
            build(s3.storage_options(), uri, fragments, versions)
            yield uri, s3.endpoint, s3.storage_options()
    elif scheme == "az":
        with AzuriteServer() as az:
            uri = az.create_container("bench") + "/ds"
            build(az.storage_options(), uri, fragments, versions)
            yield uri, az.endpoint, az.storage_options()
    else:
        with FakeGcsServer() as gcs, tempfile.TemporaryDirectory() as scratch:
            gcs.create_bucket("bench")
            build({}, str(Path(scratch) / "ds"), fragments, versions)
            uri = gcs.upload_tree(Path(scratch) / "ds", "bench", "ds")
            yield uri, gcs.endpoint, gcs.storage_options()


def timed(side: Side, fn: Callable[[], object]) -> None:
    cpu, started = time.process_time(), time.perf_counter()
    fn()
    side.runs.append(time.perf_counter() - started)
    side.cpu.append(time.process_time() - cpu)


def bench_scheme(scheme: str, fragments: int, versions: int, latency_ms: float, repeat: int) -> dict[str, Any]:
    with dataset(scheme, fragments, versions) as (uri, endpoint, options):
        proxy = ProxyProcess(endpoint, 2, latency_ms)
        try:
            sides = [Side("lancespec"), Side("pylance walk + validate")]
            calls: list[Callable[[], object]] = [
                lambda: lancespec_certify(uri, proxy.storage_options(LANCESPEC, options), None),
                lambda: pylance_walk(uri, proxy.storage_options(PYLANCE, options), True),
            ]
            for client, call in enumerate(calls):  # the warm-up run counts the requests
                sides[client].requests, sides[client].objects = counted(proxy, client, call)
            for _ in range(repeat):
                for side, call in zip(sides, calls, strict=True):
                    timed(side, call)
        finally:
            proxy.close()
    return {"scheme": scheme, "uri": uri, "fragments": fragments, "versions": versions, "latency_ms": latency_ms,
            "ratio": sides[LANCESPEC].best / sides[PYLANCE].best,
            "sides": [{"name": s.name, "best": s.best, "median": s.median, "runs": s.runs,
                       "requests": s.requests, "objects": s.objects,
                       "requests_per_object": s.requests / max(1, s.objects),
                       "cpu_ms_per_request": 1000 * min(s.cpu) / max(1, s.requests)} for s in sides]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schemes", default=",".join(SCHEMES), help="comma-separated, of s3, az, gs")
    parser.add_argument("--fragments", type=int, default=1000)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)
    schemes = [s for s in args.schemes.split(",") if s]
    if unknown := set(schemes) - set(SCHEMES):
        parser.error(f"unknown scheme(s) {sorted(unknown)}; choose from {', '.join(SCHEMES)}")
    results = []
    print(f"{'scheme':6} {'side':24} {'best s':>8} {'median s':>9} {'ratio':>6} {'req/obj':>8} {'cpu ms/req':>10}")
    for scheme in schemes:
        result = bench_scheme(scheme, args.fragments, args.versions, args.latency_ms, args.repeat)
        results.append(result)
        for side in result["sides"]:
            ratio = f"{result['ratio']:.2f}" if side["name"] == "lancespec" else ""
            print(f"{scheme:6} {side['name']:24} {side['best']:8.2f} {side['median']:9.2f} {ratio:>6} "
                  f"{side['requests_per_object']:8.3f} {side['cpu_ms_per_request']:10.3f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"python": sys.version.split()[0], "cpus": os.cpu_count(),
                                               "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
