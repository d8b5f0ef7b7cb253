"""A tiny benchmark framework: every benchmark times lancespec against pylance in the same run.

A benchmark is a :class:`Benchmark` record registered with the :func:`benchmark` decorator, which is put
on the benchmark's *setup* function::

    @benchmark("open-10k", measures="...", lancespec=ls_side, pylance=pl_side, check=same_files)
    def setup(ctx: Context) -> Inputs:
        uri = ctx.cached(f"open-{n}", build)      # built once into the work directory, then reused
        return Inputs(uri)

``setup`` builds (or reuses) the inputs; ``lancespec(inputs)`` and ``pylance(inputs)`` are the two timed
callables and return a result; ``check(inputs, lancespec_result, pylance_result)`` compares the results,
raises :class:`CheckFailed` when they disagree and otherwise returns a short note for the table.

Timing (:func:`measure_pair`): one warm-up call of each side, then ``repeat`` rounds that call lancespec
then pylance alternately (so drift of the machine hits both sides alike), each call timed with
``time.perf_counter`` after a ``gc.collect()``; best-of-N and median-of-N are reported per side, and the
ratio is lancespec / pylance (below 1: lancespec is faster).

Performance is measured here and only here, never in the test suite. ``bench/run.py`` is the command.
"""

from __future__ import annotations

import argparse
import fnmatch
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from rich.console import Console
from rich.table import Table

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_REPEAT = 5
_MARKER = ".bench-complete.json"


class CheckFailed(AssertionError):
    """The two sides of a benchmark disagree: the timings compare different work and mean nothing."""


# --- records ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Benchmark(Generic[T, R]):
    """One comparison: ``setup`` builds or reuses inputs, the two callables do the same work on them."""

    name: str
    measures: str
    setup: Callable[[Context], T]
    lancespec: Callable[[T], R]
    pylance: Callable[[T], R]
    check: Callable[[T, R, R], str] | None = None


REGISTRY: dict[str, Benchmark[Any, Any]] = {}


def benchmark(
    name: str,
    *,
    measures: str,
    lancespec: Callable[[T], R],
    pylance: Callable[[T], R],
    check: Callable[[T, R, R], str] | None = None,
) -> Callable[[Callable[[Context], T]], Callable[[Context], T]]:
    """Register the decorated setup function as benchmark ``name``."""

    def register(setup: Callable[[Context], T]) -> Callable[[Context], T]:
        if name in REGISTRY:
            raise ValueError(f"benchmark {name!r} is registered twice")
        REGISTRY[name] = Benchmark(name, measures, setup, lancespec, pylance, check)
        return setup

    return register


@dataclass(frozen=True)
class SetupRecord:
    """One cached input: built now (``built``) or reused, and how long its build took."""

    key: str
    path: str
    built: bool
    build_s: float


@dataclass
class Context:
    """What a setup function gets: the work directory, the size switch and a console for progress."""

    workdir: Path
    quick: bool
    console: Console
    records: list[SetupRecord] = field(default_factory=list)

    def size(self, default: int, quick: int) -> int:
        """``quick`` under ``--quick``, else ``default``."""
        return quick if self.quick else default

    def cached(self, key: str, build: Callable[[Path], None]) -> Path:
        """The directory ``workdir/key``, built by ``build(directory)`` unless a complete one exists.

        A directory counts as complete once ``build`` has returned (a marker file records it and the
        build time); a half-built directory left by an interrupted run is deleted and built again.
        """
        directory = self.workdir / key
        marker = directory / _MARKER
        if marker.is_file():
            build_s = float(json.loads(marker.read_text())["build_s"])
            self.records.append(SetupRecord(key, str(directory), False, build_s))
            self.console.print(f"  [dim]reusing {directory} (built in {build_s:.2f} s)[/dim]")
            return directory
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        self.console.print(f"  building {directory} ...")
        start = time.perf_counter()
        build(directory)
        build_s = time.perf_counter() - start
        marker.write_text(json.dumps({"key": key, "build_s": build_s, "built_at": time.time()}))
        self.records.append(SetupRecord(key, str(directory), True, build_s))
        self.console.print(f"  built in {build_s:.2f} s")
        return directory


@dataclass(frozen=True)
class Timing:
    best: float
    median: float
    runs: tuple[float, ...]


class BestAndMedian:
    """``best`` and ``median`` of a ``runs`` list of seconds, for the scripts that time things themselves."""

    runs: list[float]

    @property
    def best(self) -> float:
        return min(self.runs)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)


@dataclass
class Result:
    name: str
    measures: str
    ok: bool
    setup_s: float | None = None
    setup: list[SetupRecord] = field(default_factory=list)
    lancespec: Timing | None = None
    pylance: Timing | None = None
    ratio_best: float | None = None
    ratio_median: float | None = None
    note: str = ""
    error: str | None = None


# --- timing -----------------------------------------------------------------------------------------


def _timed(fn: Callable[[T], R], inputs: T) -> tuple[float, R]:
    gc.collect()
    start = time.perf_counter()
    out = fn(inputs)
    return time.perf_counter() - start, out


def measure_pair(bench: Benchmark[T, R], inputs: T, repeat: int) -> tuple[Timing, Timing, R, R]:
    """Warm up each side once, then time ``repeat`` alternating rounds; return both timings and the
    results of the last round."""
    ls_out: R | None = bench.lancespec(inputs)
    pl_out: R | None = bench.pylance(inputs)
    ls_runs: list[float] = []
    pl_runs: list[float] = []
    for _ in range(repeat):
        ls_out = None  # drop the previous result before the next timed call
        elapsed, ls_result = _timed(bench.lancespec, inputs)
        ls_runs.append(elapsed)
        ls_out = ls_result
        pl_out = None
        elapsed, pl_result = _timed(bench.pylance, inputs)
        pl_runs.append(elapsed)
        pl_out = pl_result
    assert ls_out is not None and pl_out is not None
    return _timing(ls_runs), _timing(pl_runs), ls_out, pl_out


def _timing(runs: Sequence[float]) -> Timing:
    return Timing(min(runs), statistics.median(runs), tuple(runs))


# --- running ----------------------------------------------------------------------------------------


def select(only: Sequence[str] | None) -> list[Benchmark[Any, Any]]:
    """Registered benchmarks in registration order, filtered by ``--only`` names (exact or glob)."""
    if not only:
        return list(REGISTRY.values())
    chosen = [b for b in REGISTRY.values() if any(fnmatch.fnmatchcase(b.name, pat) for pat in only)]
    if not chosen:
        raise SystemExit(f"--only {' '.join(only)}: no such benchmark; known: {', '.join(REGISTRY)}")
    return chosen


def run_one(bench: Benchmark[Any, Any], ctx: Context, repeat: int) -> Result:
    result = Result(bench.name, bench.measures, ok=False)
    ctx.console.rule(f"[bold]{bench.name}[/bold]: {bench.measures}")
    try:
        start = time.perf_counter()
        inputs = bench.setup(ctx)
        result.setup_s = time.perf_counter() - start
        result.setup = list(ctx.records)
        ctx.console.print(f"  timing: warm-up 1, then {repeat} alternating rounds ...")
        ls, pl, ls_out, pl_out = measure_pair(bench, inputs, repeat)
        result.lancespec, result.pylance = ls, pl
        result.ratio_best = ls.best / pl.best if pl.best > 0 else None
        result.ratio_median = ls.median / pl.median if pl.median > 0 else None
        result.note = bench.check(inputs, ls_out, pl_out) if bench.check is not None else ""
        result.ok = True
    except Exception as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        ctx.console.print(f"[bold red]FAILED {bench.name}: {result.error}[/bold red]")
        ctx.console.print(traceback.format_exc(), markup=False, highlight=False)
    finally:
        ctx.records.clear()
    return result


def _setup_note(result: Result) -> str:
    parts = []
    for rec in result.setup:
        parts.append(
            f"setup built {rec.build_s:.1f} s" if rec.built else f"setup reused (built {rec.build_s:.1f} s)"
        )
    return "; ".join(parts)


def render(results: Sequence[Result], console: Console, repeat: int) -> None:
    table = Table(
        title=f"lancespec vs pylance (best of {repeat}; median in parentheses)",
        show_lines=True,
    )
    table.add_column("benchmark", style="bold", no_wrap=True)
    table.add_column("lancespec (s)", justify="right")
    table.add_column("pylance (s)", justify="right")
    table.add_column("ratio lancespec/pylance\n(< 1: lancespec faster)", justify="right")
    table.add_column("notes")
    for r in results:
        if not r.ok or r.lancespec is None or r.pylance is None:
            table.add_row(r.name, "-", "-", "[red]FAILED[/red]", f"[red]{r.error}[/red]")
            continue
        ratio = "-" if r.ratio_best is None else f"{r.ratio_best:.2f}x"
        if r.ratio_median is not None:
            ratio += f"\n({r.ratio_median:.2f}x)"
        notes = "; ".join(x for x in (r.note, _setup_note(r)) if x)
        table.add_row(
            r.name,
            f"{r.lancespec.best:.4f}\n({r.lancespec.median:.4f})",
            f"{r.pylance.best:.4f}\n({r.pylance.median:.4f})",
            ratio,
            notes,
        )
    console.print(table)


def environment() -> dict[str, Any]:
    try:
        import lance

        pylance_version = str(lance.__version__)
    except Exception:  # pragma: no cover - pylance is a dependency
        pylance_version = "unknown"
    return {
        "python": sys.version.split()[0],
        "pylance": pylance_version,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Benchmark lancespec against pylance (both in the same run).")
    p.add_argument("--quick", action="store_true", help="smaller inputs, for a smoke run")
    p.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only this benchmark (exact name or glob; may be repeated)",
    )
    p.add_argument("--json", metavar="FILE", type=Path, help="also write the results as JSON to FILE")
    p.add_argument(
        "--workdir",
        metavar="DIR",
        type=Path,
        help="keep built inputs in DIR and reuse them between runs (default: a temp dir)",
    )
    p.add_argument(
        "--repeat",
        metavar="N",
        type=int,
        default=DEFAULT_REPEAT,
        help=f"timed runs per side after the warm-up (default {DEFAULT_REPEAT})",
    )
    p.add_argument("--list", action="store_true", help="list the registered benchmarks and exit")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Piped output (CI logs) gets a fixed width wide enough for the table instead of rich's 80 columns.
    console = Console() if sys.stdout.isatty() else Console(width=150)
    if args.list:
        for b in REGISTRY.values():
            console.print(f"[bold]{b.name}[/bold]: {b.measures}")
        return 0
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    chosen = select(args.only)
    temp = None
    if args.workdir is None:
        temp = tempfile.mkdtemp(prefix="lancespec-bench-")
        workdir = Path(temp)
    else:
        workdir = args.workdir.resolve()
        workdir.mkdir(parents=True, exist_ok=True)
    env = environment()
    console.print(
        f"python {env['python']}, pylance {env['pylance']}, {env['cpus']} cpu(s); "
        f"repeat {args.repeat}{', quick' if args.quick else ''}; workdir {workdir}"
    )
    ctx = Context(workdir, args.quick, console)
    try:
        results = [run_one(b, ctx, args.repeat) for b in chosen]
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    render(results, console, args.repeat)
    if args.json is not None:
        payload = {
            "environment": env,
            "quick": args.quick,
            "repeat": args.repeat,
            "ratio": "lancespec / pylance; below 1 means lancespec is faster",
            "results": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
        console.print(f"results written to {args.json}")
    failed = [r.name for r in results if not r.ok]
    if failed:
        console.print(f"[bold red]{len(failed)} benchmark(s) failed: {', '.join(failed)}[/bold red]")
        return 1
    return 0
