"""Certify where datasets live: an S3-compatible store with real latency, lancespec against pylance.

    python bench/bench_s3.py [--quick] [--fragments N] [--versions V] [--latency-ms MS]
                             [--io-parallelism N] [--repeat N] [--spark] [--spark-cores 1,2]
                             [--no-pylance] [--json FILE]
                             [--scheme s3|az|gs --storage-option KEY=VALUE ... [--uri SCHEME://BUCKET]]

``--scheme az`` or ``gs`` (or s3 with ``--storage-option``) measures a store already running, an emulator
``lancespec serve az|gs`` started, configured by the options it printed (one of them names the endpoint,
``ENDPOINT_KEYS``; the bucket or container must exist); the dataset is written under ``--uri``.

The store is the embedded S3 server (moto on 127.0.0.1) behind the simulator's fault proxy with a
latency-only profile: every request waits ``--latency-ms`` (default 20 ms) jittered by 0.5x-1.5x before it
is forwarded, as a request to a real bucket waits for the network and the service. The input is written by
pylance straight to the server (no proxy): ``--versions`` appends (default 20; 5 with ``--quick``) of
one-row fragments, ``--fragments`` in all (default 10,000; 1,000 with ``--quick``), so the last version
references every data file.

Sides, each timed ``--repeat`` times alternately after one warm-up, through its own proxy port so the
proxy counts each side's requests apart:

* ``lancespec``: ``certify(uri, all_versions=True)``, every check on every version;
* ``pylance walk``: ``lance.dataset`` then, for every version, ``checkout_version`` and every fragment's
  data files;
* ``pylance walk + validate``: the same plus ``validate()`` on every version, the figure the ratio is
  taken against (pylance reading what it needs to vouch for every version).

Reported: best and median seconds, the ratio lancespec / (pylance walk + validate), requests per distinct
object read (GET, HEAD and LIST requests of one run over the distinct objects it read, from the proxy's
counters) and each side's peak resident memory (one run in a child process, its ``VmHWM``). With
``--spark``: ``certify_with_spark`` on local[N] for each N of ``--spark-cores`` against the same proxy,
with Spark's start-up (session and first run) stated apart, its requests counted, and the driver's steps
(``SparkCertification.phases``). ``--io-parallelism`` is every task's as well as plain certify's (default
32). Every side also reports the CPU seconds per run of each process (``proc_cpu``): this one (plain
certify, pylance, or Spark's driver Python), the server, the proxy, Spark's JVM and its Python workers.
``--no-pylance`` leaves the pylance sides out (the ratio is then against plain certify).

Each side's imports happen inside it, so that the memory probe of a side loads only what that side needs.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness import BestAndMedian
from proc_cpu import CpuMeter, Group, find_child

from reference.store.base import DEFAULT_IO_PARALLELISM
from simulator.faults import FaultProfile
from simulator.proxy import FaultProxy
from simulator.s3 import EmbeddedS3Server

LANCESPEC, PYLANCE_WALK, PYLANCE_VALIDATE, CHILD = 0, 1, 2, 3


@dataclass
class Side(BestAndMedian):
    name: str
    runs: list[float] = field(default_factory=list)
    requests: int = 0
    objects: int = 0
    peak_rss_mb: float | None = None
    note: str = ""
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per process group, summed over the runs
    phases: list[dict[str, float]] = field(default_factory=list)  # Spark: the driver's steps, per run
    load: list[float] = field(default_factory=list)  # 1-minute load average after each run

    def add_cpu(self, spent: dict[str, float]) -> None:
        for group, seconds in spent.items():
            self.cpu[group] = self.cpu.get(group, 0.0) + seconds

    def cpu_per_run(self) -> dict[str, float]:
        return {group: seconds / max(1, len(self.runs)) for group, seconds in self.cpu.items()}

    def median_phases(self) -> dict[str, float]:
        return {k: statistics.median(p[k] for p in self.phases) for k in self.phases[0]} if self.phases else {}

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "runs": self.runs, "best": self.best, "median": self.median,
                "requests": self.requests, "objects": self.objects, "peak_rss_mb": self.peak_rss_mb,
                "note": self.note, "cpu_per_run": self.cpu_per_run(), "phases": self.phases, "load": self.load}


def build(options: dict[str, str], uri: str, fragments: int, versions: int) -> float:
    """``versions`` pylance appends of one-row fragments, ``fragments`` in all; returns the seconds."""
    import lance
    import pyarrow as pa

    started = time.perf_counter()
    per = fragments // versions
    for v in range(versions):
        table = pa.table({"id": pa.array(range(v * per, (v + 1) * per), pa.int64())})
        lance.write_dataset(table, uri, mode="create" if v == 0 else "append", max_rows_per_file=1,
                            storage_options=options)
    return time.perf_counter() - started


def pylance_walk(uri: str, options: dict[str, str], validate: bool) -> int:
    """Open the dataset, then every version: its fragments' data files (and ``validate()``)."""
    import lance

    ds = lance.dataset(uri, storage_options=options)
    files = 0
    for entry in ds.versions():
        at = ds.checkout_version(entry["version"])
        files += sum(len(f.data_files()) for f in at.get_fragments())
        if validate:
            at.validate()
    return files


def lancespec_certify(uri: str, options: dict[str, str], parallelism: int | None) -> int:
    from conformance.certify import certify

    report = certify(uri, all_versions=True, storage_options=options, io_parallelism=parallelism)
    if report.exit_code != 0:
        raise SystemExit(f"certify found breaches on a pylance dataset: {report.findings[:3]}")
    return len(report.versions)


ENDPOINT_KEYS = {"s3": ("aws_endpoint", "endpoint", "aws_endpoint_url", "endpoint_url"),
                 "az": ("azure_endpoint", "azure_storage_endpoint"), "gs": ("google_base_url", "base_url")}
"""The storage options that name each scheme's endpoint (``--scheme``)."""


def origin_of(base: dict[str, str]) -> str:
    """The scheme, host and port of the endpoint ``base`` names (where the proxy forwards)."""
    from urllib.parse import urlsplit

    endpoint = urlsplit(next(base[k] for keys in ENDPOINT_KEYS.values() for k in keys if k in base))
    return f"{endpoint.scheme}://{endpoint.netloc}"


def through(base: dict[str, str], origin: str) -> dict[str, str]:
    """``base`` with its endpoint's scheme, host and port replaced by ``origin`` (its path kept: Azurite's
    endpoint ends in the account's name), so every request goes through the proxy."""
    from urllib.parse import urlsplit

    key = next(k for keys in ENDPOINT_KEYS.values() for k in keys if k in base)
    return {**base, key: origin + urlsplit(base[key]).path, "allow_http": "true"}


class ProxyProcess:
    """The fault proxy in a child process of its own (``--serve-proxy``), so that its Python threads do not
    share a GIL with the side being timed (pylance's Rust threads would not feel it; lancespec would)."""

    def __init__(self, upstream: str, clients: int, latency_ms: float) -> None:
        self.child = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve-proxy", upstream, str(clients), str(latency_ms)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.child.stdin is not None and self.child.stdout is not None
        self.ports: list[int] = json.loads(self.child.stdout.readline())["ports"]

    def storage_options(self, client: int, base: dict[str, str]) -> dict[str, str]:
        return through(base, f"http://127.0.0.1:{self.ports[client]}")

    def counts(self, client: int) -> tuple[Counter[str], int]:
        """The client's requests per class so far and the distinct objects it read since the last call."""
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write(f"{client}\n")
        self.child.stdin.flush()
        answer = json.loads(self.child.stdout.readline())
        return Counter(answer["requests"]), answer["objects"]

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait(timeout=30)


def serve_proxy(upstream: str, clients: int, latency_ms: float) -> None:
    """The child side of ``ProxyProcess``: ports on stdout, then one line of counters per client id read."""
    latency = FaultProfile("latency-only", {"*": {"latency": 1.0}}, latency_s=latency_ms / 1000,
                           description="every request delayed")
    with FaultProxy(upstream, clients, faults=latency) as proxy:
        print(json.dumps({"ports": [int(proxy.endpoint(i).rsplit(":", 1)[1]) for i in range(clients)]}), flush=True)
        for line in sys.stdin:
            client = int(line)
            requests = {cls: n for (c, cls), n in proxy.requests.items() if c == client}
            objects = len(proxy.objects_read.pop(client, ()))
            print(json.dumps({"requests": requests, "objects": objects}), flush=True)


def counted(proxy: ProxyProcess, client: int, fn: Callable[[], object]) -> tuple[int, int]:
    """Requests (GET, HEAD, LIST) and distinct objects read by one run of ``fn`` through ``client``'s port."""
    before, _ = proxy.counts(client)
    fn()
    after, objects = proxy.counts(client)
    spent = after - before
    return sum(spent[c] for c in ("get", "head", "list")), objects


def peak_rss_mb(code: str) -> float:
    """Peak resident memory of a child Python running ``code``, in MiB: the child's own high-water mark
    (``VmHWM``; ``wait4``'s ``ru_maxrss`` would report the parent's size at the fork)."""
    probe = code + "; print(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(f"the memory probe failed ({run.returncode}): {run.stderr[-2000:]}")
    return int(run.stdout.split()[-1]) / 1024


def measured(side: Side, meter: CpuMeter, fn: Callable[[], object]) -> object:
    """One timed run of ``fn`` into ``side``: its seconds, the CPU each process group spent, the load after."""
    before = meter.sample()
    started = time.perf_counter()
    out = fn()
    side.runs.append(time.perf_counter() - started)
    side.add_cpu(CpuMeter.spent(before, meter.sample()))
    side.load.append(os.getloadavg()[0])
    return out


def spark_sides(meter: CpuMeter, proxy: ProxyProcess, uri: str, base: dict[str, str], repeat: int,
                parallelism: int | None, cores: tuple[int, ...]) -> list[Side]:
    """``certify_with_spark`` on local[N] for each N of ``cores``: start-up (session and first run) apart,
    then ``repeat`` timed runs with the driver's steps and each process group's CPU. Sessions come from
    ``spark_session``, whose workers run this Python (so they import the lancespec under test)."""
    from conformance.spark import certify_with_spark, spark_session

    sides = []
    options = proxy.storage_options(CHILD, base)
    if parallelism is not None:  # every task's reads, as the plain side's
        options["lancespec_io_parallelism"] = str(parallelism)
    for n in cores:
        started = time.perf_counter()
        spark = spark_session(f"local[{n}]", app_name="lancespec-bench-s3")
        session_s = time.perf_counter() - started
        requests, objects = counted(proxy, CHILD, functools.partial(
            certify_with_spark, spark, uri, all_versions=True, storage_options=options))
        side = Side(f"spark local[{n}]", note=f"start-up {session_s:.1f} s session + "
                    f"{time.perf_counter() - started - session_s:.1f} s first run", requests=requests, objects=objects)
        jvm = spark.sparkContext._gateway.proc.pid  # the driver JVM, and the daemon forking the Python workers
        daemon = find_child(jvm, "pyspark.daemon")
        groups = {**meter.groups, "jvm": Group(jvm)}
        if daemon is not None:
            groups["workers"] = Group(daemon)
        spark_meter = CpuMeter(groups)
        for _ in range(repeat):
            result: Any = measured(side, spark_meter, functools.partial(
                certify_with_spark, spark, uri, all_versions=True, storage_options=options))
            side.phases.append({**result.phases, "tasks": float(result.tasks),
                                "task_cpu": sum(result.task_cpu_seconds)})
        spark.stop()
        sides.append(side)
    return sides


def print_cpu(sides: list[Side]) -> None:
    """CPU seconds per run of each process group, per side; for Spark the driver's steps (medians)."""
    groups = sorted({g for side in sides for g in side.cpu}, key=lambda g: (g != "bench", g))
    print(f"\nCPU seconds per run ({os.cpu_count()} cores; 'bench' is this process: plain certify, pylance, or "
          "Spark's driver Python)")
    print(f"{'side':36} " + " ".join(f"{g:>8}" for g in groups) + f" {'all':>8} {'wall':>7} {'load':>5}")
    for side in sides:
        per = side.cpu_per_run()
        cells = " ".join(f"{per[g]:8.2f}" if g in per else f"{'-':>8}" for g in groups)
        load = statistics.median(side.load) if side.load else float("nan")
        print(f"{side.name:36} {cells} {sum(per.values()):8.2f} {side.median:7.2f} {load:5.1f}")
    for side in sides:
        if side.phases:
            phases = side.median_phases()
            driver = phases["certify"] + phases["merge"]  # the hand-over (offload, slices, broadcast) within
            print(f"{side.name}: driver {driver:.2f} s (" + ", ".join(
                f"{k} {v:.2f}" for k, v in phases.items() if k not in ("tasks", "task_cpu")) +
                f"), {phases['tasks']:.0f} tasks, task CPU {phases['task_cpu']:.2f} s (medians)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 fragments in 5 versions")
    parser.add_argument("--fragments", type=int, help="data files in all (default 10,000; 1,000 with --quick)")
    parser.add_argument("--versions", type=int, help="appends (default 20; 5 with --quick)")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="latency per request (default 20)")
    parser.add_argument("--io-parallelism", type=int, default=None, help="lancespec's requests in flight")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spark", action="store_true", help="also Spark local[1] and local[2]")
    parser.add_argument("--spark-cores", default="1,2", help="the N of each Spark local[N] (default 1,2)")
    parser.add_argument("--no-pylance", action="store_true",
                        help="leave out the pylance sides (ratios are then against plain certify)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--scheme", choices=sorted(ENDPOINT_KEYS), default="s3",
                        help="the store: s3 (the embedded server unless --storage-option is given), az or gs (a "
                             "running emulator, --storage-option naming its endpoint)")
    parser.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="the options of a running store (pylance's keys; one names the endpoint)")
    parser.add_argument("--uri", help="the bucket or container to write in (default SCHEME://bench)")
    parser.add_argument("--serve-proxy", nargs=3, metavar=("UPSTREAM", "CLIENTS", "LATENCY_MS"),
                        help=argparse.SUPPRESS)  # the proxy's own process (ProxyProcess)
    args = parser.parse_args(argv)
    if args.serve_proxy:
        serve_proxy(args.serve_proxy[0], int(args.serve_proxy[1]), float(args.serve_proxy[2]))
        return 0
    fragments = args.fragments or (1_000 if args.quick else 10_000)
    versions = args.versions or (5 if args.quick else 20)
    load_before = os.getloadavg()[0]
    with contextlib.ExitStack() as stack:
        if args.scheme == "s3" and not args.storage_option:  # the embedded server, a bucket of its own
            server = stack.enter_context(EmbeddedS3Server())
            uri, base, server_pid = server.create_bucket("bench") + "/ds", server.storage_options(), server.pid
        else:  # a store running already (``lancespec serve az|gs``), its bucket or container made
            base = dict(pair.split("=", 1) for pair in args.storage_option)
            uri, server_pid = f"{args.uri or args.scheme + '://bench'}/ds-{os.getpid()}", None
            assert args.uri is None or args.uri.startswith(args.scheme + "://"), "--uri must be of --scheme"
        build_s = build(base, uri, fragments, versions)
        print(f"built {fragments:,} fragments in {versions} versions in {build_s:.1f} s", flush=True)
        proxy = ProxyProcess(origin_of(base), 4, args.latency_ms)
        groups = {"bench": Group(os.getpid(), tree=False, reaped=False), "proxy": Group(proxy.child.pid)}
        meter = CpuMeter(groups | ({"server": Group(server_pid)} if server_pid else {}))
        try:
            options = {i: proxy.storage_options(i, base) for i in range(3)}
            sides = {LANCESPEC: Side("lancespec certify --all-versions")}
            if not args.no_pylance:
                sides |= {PYLANCE_WALK: Side("pylance walk"), PYLANCE_VALIDATE: Side("pylance walk + validate")}
            calls: dict[int, Callable[[], object]] = {
                LANCESPEC: lambda: lancespec_certify(uri, options[LANCESPEC], args.io_parallelism),
                PYLANCE_WALK: lambda: pylance_walk(uri, options[PYLANCE_WALK], validate=False),
                PYLANCE_VALIDATE: lambda: pylance_walk(uri, options[PYLANCE_VALIDATE], validate=True),
            }
            for client, side in sides.items():  # warm-up, counting requests
                side.requests, side.objects = counted(proxy, client, calls[client])
            for _ in range(args.repeat):
                for client, side in sides.items():
                    measured(side, meter, calls[client])
            setup = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
                     "from bench_s3 import lancespec_certify, pylance_walk; ")
            for client, side in sides.items():
                fn = {LANCESPEC: f"lancespec_certify({uri!r}, {options[client]!r}, {args.io_parallelism!r})",
                      PYLANCE_WALK: f"pylance_walk({uri!r}, {options[client]!r}, False)",
                      PYLANCE_VALIDATE: f"pylance_walk({uri!r}, {options[client]!r}, True)"}[client]
                side.peak_rss_mb = peak_rss_mb(setup + fn)
            cores = tuple(int(n) for n in args.spark_cores.split(","))
            extra = (spark_sides(meter, proxy, uri, base, args.repeat, args.io_parallelism, cores)
                     if args.spark else [])
        finally:
            proxy.close()
    against = sides.get(PYLANCE_VALIDATE, sides[LANCESPEC])
    parallelism = args.io_parallelism or DEFAULT_IO_PARALLELISM
    print(f"\n{fragments:,} data files, {versions} versions, latency {args.latency_ms:g} ms (jittered), "
          f"io-parallelism {parallelism} per process / task, load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after; ratio against {against.name}")
    print(f"{'side':36} {'best s':>8} {'median s':>9} {'ratio':>7} {'requests':>9} {'objects':>8} "
          f"{'req/obj':>8} {'peak MiB':>9}")
    for side in [*sides.values(), *extra]:
        per = f"{side.requests / side.objects:.2f}" if side.objects else "-"
        rss = f"{side.peak_rss_mb:.0f}" if side.peak_rss_mb else "-"
        print(f"{side.name:36} {side.best:8.2f} {side.median:9.2f} {side.best / against.best:6.2f}x "
              f"{side.requests or '-':>9} {side.objects or '-':>8} {per:>8} {rss:>9}  {side.note}")
    if len(extra) >= 2:
        print(f"{extra[-1].name} / {extra[0].name}: {extra[0].best / extra[-1].best:.2f}x best, "
              f"{extra[0].median / extra[-1].median:.2f}x median; {extra[0].name} / plain certify: "
              f"{extra[0].best / sides[LANCESPEC].best:.2f}x best, {extra[0].median / sides[LANCESPEC].median:.2f}x "
              "median")
    print_cpu([*sides.values(), *extra])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"fragments": fragments, "versions": versions, "latency_ms": args.latency_ms,
                       "io_parallelism": parallelism, "build_s": build_s, "load_before": load_before,
                       "sides": [s.to_json() for s in [*sides.values(), *extra]]}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
