"""Scale: one version of 1,000,000 fragments, and a history of 10,000 versions, lancespec against pylance.

    python bench/bench_scale.py --workdir DIR                    # both inputs on local disk (long: minutes)
    python bench/bench_scale.py --workdir DIR --only wide --fragments 200000
    python bench/bench_scale.py --workdir DIR --s3 --latency-ms 20   # also through the S3 server and proxy
    python bench/bench_scale.py --workdir DIR --spark             # also spark-certify on local[2]
    python bench/bench_scale.py --workdir DIR --json scale.json
    python bench/bench_scale.py --workdir DIR --only wide --sides "certify manifest,inspect,pylance open + walk"

An opt-in script (``run.py`` registers nothing from it; nothing here runs in the tests). The inputs come from
``histories.py``, written by pylance once into ``--workdir`` and reused: ``wide``, one version of
``--fragments`` one-row fragments (default 1,000,000; about 3 minutes to write and 1M files on disk);
``history``, ``--versions`` versions of a growing table (default 10,000; appends with a compaction about every
200 versions). Every side runs in a child process of its own, ``--repeat`` times (default 1); each run
reports its seconds (measured inside the child, imports excluded) and its peak resident memory (the child's
``VmHWM``, imports included; for Spark, the driver's Python alone). lancespec runs with ``--max-fragments`` and
``--max-manifest-entries`` raised to 4,000,000: 1,000,000 one-file fragments and the schema are one entry past
the default entry limit. Sides:

* ``certify manifest``: ``certify(uri, areas=["manifest"])``, the manifest checks alone (wide only);
* ``certify``: ``certify(uri)`` (wide) or ``certify(uri, all_versions=True)`` (history), every check;
* ``inspect``: the ``lancespec inspect --json`` document of the latest version (``inspect_report``);
* ``spark-certify`` (``--spark``): ``certify_with_spark`` on local[2], as ``certify``, the session started
  beside the driver as ``spark-certify`` starts it (``background_session``; its start-up is in the seconds:
  one run per session); where both ran, its report must equal ``certify``'s (a
  digest of every compared field of the two reports, ``same_report_check``: a difference fails the run);
* ``pylance open + walk``: ``lance.dataset`` then every fragment's data files, of the latest version (wide)
  or of every version (history).

With ``--s3``, the same inputs are copied to the embedded S3 server and every side runs again through the
fault proxy with a latency-only profile (``--latency-ms``, jittered 0.5x-1.5x; bench_s3.py's proxy process).
Of the wide input only the manifest is copied (1,000,000 PUTs to a Python server would take hours): the S3
sides are then the manifest checks, inspect and pylance's open + walk, none of which reads a data file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent


@dataclass
class Run:
    input: str
    store: str
    side: str
    seconds: list[float]
    peak_mib: list[float]
    note: str = ""
    error: str = ""


# --- the sides (each runs in a child: ``--side NAME URI OPTIONS_JSON``) --------------------------------


def limits() -> Any:
    """Limits that admit the wide input: 1,000,000 fragments and their 1,000,000 data files plus the schema
    are one entry past the default ``--max-manifest-entries``."""
    from reference.limits import Limits

    return Limits(max_fragments=4_000_000, max_manifest_entries=4_000_000)


def side_certify_manifest(uri: str, options: dict[str, str], history: bool) -> str:
    from conformance.certify import certify

    report = certify(uri, areas=["manifest"], storage_options=options or None, all_versions=history,
                     limits=limits())
    return f"exit {report.exit_code}, {len(report.findings)} findings"


def report_digest(report: Any) -> str:
    """A digest of what ``report`` judged (every field that takes part in comparing reports, the findings
    as their JSON), so that sides run in two processes can be shown to give the same report."""
    import dataclasses
    import hashlib

    compared = {f.name: getattr(report, f.name) for f in dataclasses.fields(report) if f.compare}
    compared["findings"] = [f.to_json() for f in report.findings]
    return hashlib.sha256(json.dumps(compared, sort_keys=True, default=str).encode()).hexdigest()[:16]


def side_certify(uri: str, options: dict[str, str], history: bool) -> str:
    from conformance.certify import certify

    report = certify(uri, storage_options=options or None, all_versions=history, limits=limits())
    return (f"exit {report.exit_code}, {len(report.versions)} versions, {len(report.findings)} findings, "
            f"report {report_digest(report)}")


def side_inspect(uri: str, options: dict[str, str], history: bool) -> str:
    from conformance.fetch import RunStorage
    from lancespec.inspect import inspect_report, open_dataset  # type: ignore[import-not-found, unused-ignore]

    dataset = open_dataset(uri, RunStorage(options or None, limits=limits()))
    document = inspect_report(dataset, dataset.snapshot(strict=False))
    text = json.dumps(document)
    return f"{len(document['fragments']):,} fragments, {len(text) / 2**20:.0f} MiB of JSON"


def side_spark(uri: str, options: dict[str, str], history: bool) -> str:
    from conformance.spark import background_session, certify_with_spark

    with background_session("local[2]", app_name="lancespec-bench-scale") as spark:  # as spark-certify starts it
        result = certify_with_spark(spark, uri, all_versions=history, storage_options=options or None,
                                    limits=limits())
    report = result.report
    return (f"exit {report.exit_code}, {len(report.versions)} versions, {len(report.findings)} findings, "
            f"report {report_digest(report)}; session started in {spark.started_in or 0:.1f} s beside the driver "
            f"(the first job waited {result.phases['session']:.1f} s for it), certify_with_spark "
            f"{result.seconds:.1f} s ({result.tasks} tasks, job {result.job_seconds:.1f} s, driver waited "
            f"{result.phases['wait']:.1f} s)")


def side_pylance(uri: str, options: dict[str, str], history: bool) -> str:
    import lance

    ds = lance.dataset(uri, storage_options=options or None)
    files = 0
    for version in [v["version"] for v in ds.versions()] if history else [ds.version]:
        at = ds.checkout_version(version) if history else ds
        files += sum(len(f.data_files()) for f in at.get_fragments())
    return f"{files:,} data file references"


SIDES: dict[str, Callable[[str, dict[str, str], bool], str]] = {
    "certify manifest": side_certify_manifest,
    "certify": side_certify,
    "inspect": side_inspect,
    "spark-certify": side_spark,
    "pylance open + walk": side_pylance,
}


def child_main(name: str, uri: str, options_json: str, history: bool) -> None:
    """In the child: run one side once; print its seconds, peak memory and note as one JSON line."""
    os.environ.setdefault("LANCE_LOG", "error")
    if name == "pylance open + walk":
        import lance  # noqa: F401  (imports are not the side's time)
    else:
        import conformance.certify  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    started = time.perf_counter()
    note = SIDES[name](uri, json.loads(options_json), history)
    seconds = time.perf_counter() - started
    status = Path("/proc/self/status").read_text().splitlines()
    peak = next(line for line in status if line.startswith("VmHWM")).split()[1]
    print(json.dumps({"seconds": seconds, "peak_mib": int(peak) / 1024, "note": note}), flush=True)


def run_side(name: str, uri: str, options: dict[str, str], history: bool, timeout: float) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--side", name, uri, json.dumps(options)]
    if history:
        command.append("--history")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {timeout:.0f} s"}
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1] if done.stderr else ''}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# --- inputs and stores --------------------------------------------------------------------------------


def local_inputs(workdir: Path, fragments: int, versions: int, only: str | None) -> dict[str, str]:
    sys.path.insert(0, str(BENCH_DIR))
    from histories import built_once, growing_history, write_wide_version

    out = {}
    if only in (None, "wide"):
        directory, seconds, built = built_once(workdir / f"scale-wide-{fragments}",
                                               lambda d: write_wide_version(str(d / "ds"), fragments))
        print(f"wide input: {fragments:,} fragments, {'written' if built else 'reused, written'} in {seconds:.0f} s",
              flush=True)
        out["wide"] = str(directory / "ds")
    if only in (None, "history"):
        out["history"] = growing_history(workdir / f"scale-history-{versions}", versions)
        print(f"history input: {versions:,} versions at {out['history']}", flush=True)
    return out


def upload(client: Any, bucket: str, root: Path, prefix: str, keep: Callable[[Path], bool]) -> int:
    """Copy the files under ``root`` that ``keep`` accepts to ``bucket/prefix``, 16 at a time."""
    files = [p for p in root.rglob("*") if p.is_file() and keep(p)]

    def put(path: Path) -> None:
        client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(root).as_posix()}", Body=path.read_bytes())

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, files))
    return len(files)


# --- the bench ----------------------------------------------------------------------------------------


def sides_for(input_name: str, store: str, spark: bool) -> list[str]:
    if input_name == "wide" and store == "s3":  # only the manifest is on the server
        return ["certify manifest", "inspect", "pylance open + walk"]
    names = ["certify manifest", "certify", "inspect"] if input_name == "wide" else ["certify", "inspect"]
    return [*names, *(["spark-certify"] if spark else []), "pylance open + walk"]


def measure(runs: list[Run], input_name: str, store: str, uri: str, options: dict[str, str], args: Any) -> None:
    chosen = set(args.sides.split(",")) if args.sides else None
    for name in sides_for(input_name, store, args.spark):
        if chosen is not None and name not in chosen:
            continue
        run = Run(input_name, store, name, [], [])
        for _ in range(args.repeat):
            result = run_side(name, uri, options, input_name == "history", args.timeout)
            if "error" in result:
                run.error = result["error"]
                break
            run.seconds.append(result["seconds"])
            run.peak_mib.append(result["peak_mib"])
            run.note = result["note"]
        runs.append(run)
        shown = (f"{min(run.seconds):8.2f} s {max(run.peak_mib):7.0f} MiB  {run.note}" if run.seconds
                 else f"FAILED {run.error}")
        print(f"  {input_name:8} {store:6} {name:22} {shown}  (load {os.getloadavg()[0]:.1f})", flush=True)
    same_report_check(runs, input_name, store)


def same_report_check(runs: list[Run], input_name: str, store: str) -> None:
    """spark-certify must give certify's report on the same input: where both ran, their digests
    (``report_digest``) are compared, and a difference is the spark-certify run's error."""
    digests = {run.side: re.search(r"report ([0-9a-f]{16})", run.note) for run in runs
               if (run.input, run.store) == (input_name, store) and run.seconds}
    certified, distributed = digests.get("certify"), digests.get("spark-certify")
    if certified is None or distributed is None:
        return
    if certified[1] == distributed[1]:
        print(f"  {input_name:8} {store:6} spark-certify's report equals certify's ({certified[1]})", flush=True)
        return
    spark_run = next(r for r in runs if (r.input, r.store, r.side) == (input_name, store, "spark-certify"))
    spark_run.error = f"its report ({distributed[1]}) differs from certify's ({certified[1]})"
    print(f"  {input_name:8} {store:6} FAILED: spark-certify's {spark_run.error}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, help="where the inputs are written once and kept (required)")
    parser.add_argument("--fragments", type=int, default=1_000_000)
    parser.add_argument("--versions", type=int, default=10_000)
    parser.add_argument("--only", choices=("wide", "history"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--sides", help="only these sides, comma-separated (e.g. 'certify manifest,inspect')")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds one run may take")
    parser.add_argument("--spark", action="store_true", help="also spark-certify on local[2]")
    parser.add_argument("--s3", action="store_true", help="also through the embedded S3 server and the proxy")
    parser.add_argument("--s3-only", action="store_true", help="with --s3: leave out the local-disk runs")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--side", nargs=3, metavar=("NAME", "URI", "OPTIONS"), help=argparse.SUPPRESS)
    parser.add_argument("--history", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        child_main(args.side[0], args.side[1], args.side[2], args.history)
        return 0
    if args.workdir is None:
        parser.error("--workdir is required")
    inputs = local_inputs(args.workdir, args.fragments, args.versions, args.only)
    runs: list[Run] = []
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}; best of {args.repeat}")
    for name, uri in inputs.items() if not args.s3_only else ():
        measure(runs, name, "local", uri, {}, args)
    if args.s3 or args.s3_only:
        sys.path.insert(0, str(BENCH_DIR))
        from bench_s3 import ProxyProcess

        from simulator.s3 import EmbeddedS3Server

        with EmbeddedS3Server() as server:
            base = server.storage_options()
            proxy = ProxyProcess(server.endpoint, 1, args.latency_ms)
            try:
                for name, uri in inputs.items():
                    server_uri = server.create_bucket(f"scale-{name}") + "/ds"
                    keep = (lambda p: "_versions" in p.parts) if name == "wide" else (lambda p: True)
                    started = time.perf_counter()
                    copied = upload(server.client(), f"scale-{name}", Path(uri), "ds", keep)
                    print(f"{name}: {copied:,} objects copied to the server in {time.perf_counter() - started:.0f} s",
                          flush=True)
                    measure(runs, name, "s3", server_uri, proxy.storage_options(0, base), args)
            finally:
                proxy.close()
    if args.json:
        args.json.write_text(json.dumps({"fragments": args.fragments, "versions": args.versions,
                                         "latency_ms": args.latency_ms, "runs": [asdict(r) for r in runs]}, indent=2))
    return 1 if any(r.error for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
