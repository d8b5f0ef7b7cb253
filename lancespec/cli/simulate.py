"""``lancespec simulate``: concurrent writers, a real S3 server, injected faults, a checker
(docs/simulator.md). Exit 0 no anomaly, 1 anomalies found. The run's rendering (``--format``): text, the
verdict line then rich tables; json, the full report; html, the timeline (one self-contained page, to
``--output``), which also draws a report saved earlier (``--from-report``). ``--report FILE`` and
``--html FILE`` are the deprecated spellings of ``--format json|html --output FILE``."""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from reference.errors import InvalidOption
from reference.printable import printable
from simulator.checker import INVARIANTS
from simulator.faults import FAULTS, PROFILES
from simulator.history import OUTCOMES
from simulator.proxy import PERSONALITIES
from simulator.simulate import REPORT_FORMAT, STORES, RunConfig, RunReport, replay_command, simulate

from ..destination import write_text
from .options import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNREADABLE,
    DeprecatedSpelling,
    add_report_options,
    check_report_options,
    exits,
    parse_storage_options,
    report_targets,
)

DEFAULT = RunConfig()


def weights(text: str) -> dict[str, float]:
    """An argparse type: ``KIND=WEIGHT,...``, the operation mix (``simulator.workload.DEFAULT_WEIGHTS``)."""
    out = {}
    for item in text.split(","):
        kind, _, value = item.partition("=")
        try:
            weight = float(value)
        except ValueError:
            kind = ""
        if not kind.strip():
            raise argparse.ArgumentTypeError(f"expected KIND=WEIGHT,... (such as append=40,delete=9), not {text!r}")
        out[kind.strip()] = weight
    return out


def register(sub: Any) -> None:
    """Add ``simulate`` to the ``lancespec`` subcommands ``sub``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "simulate", help="concurrent writers, a real S3 server, injected faults, a checker",
        description="The verdict line (NO ANOMALIES, ANOMALIES, or NOTHING COMMITTED when a run without anomalies "
        "committed no operation, so that nothing was checked; with the runs' counts) ends the text (it opens a text "
        "--output; --quiet prints it alone); docs/simulator.md. "
        + exits("0 no anomaly, 1 anomalies found (2 also when a run committed nothing)"))
    parser.add_argument("--writers", type=int, default=DEFAULT.writers, help="writer processes (default 8)")
    parser.add_argument("--ops", type=int, default=DEFAULT.ops, help="operations in all, spread over the writers "
                        "(default 400)")
    parser.add_argument("--seed", type=int, default=DEFAULT.seed, help="fixes the operations and the fault schedule")
    parser.add_argument("--writer", choices=("reference", "pylance", "mixed"), default=DEFAULT.writer,
                        help="who writes: lancespec's reference writer, pylance, or both (even writers reference)")
    parser.add_argument("--faults", choices=sorted(PROFILES), default=DEFAULT.faults, metavar="PROFILE",
                        help=f"fault profile: {', '.join(sorted(PROFILES))} (default: default)")
    parser.add_argument("--personality", choices=(*PERSONALITIES, "all"), default=DEFAULT.personality,
                        help="storage personality: honest S3, no-conditional (If-None-Match ignored), "
                        "lagging-list (listings hide keys younger than --list-lag seconds), unlocked (the embedded "
                        "server without its write lock); 'all' runs each and prints which invariants break")
    parser.add_argument("--store", choices=STORES, default=DEFAULT.store,
                        help="s3: the embedded S3 server (or --endpoint); az: Azurite, started for the run "
                             "(personality honest only; docs/stores.md)")
    parser.add_argument("--endpoint", metavar="URL", help="an S3 endpoint (MinIO, a cloud bucket) instead of the "
                        "embedded server; also $LANCESPEC_S3_ENDPOINT")
    parser.add_argument("--bucket", help="bucket to use (created if missing); default a fresh one")
    parser.add_argument("--datasets", type=int, default=DEFAULT.datasets, help="datasets the writers share (default 2)")
    parser.add_argument("--list-lag", type=float, default=DEFAULT.list_lag_s, metavar="SECONDS",
                        help="how far listings lag behind writes under lagging-list (default 2)")
    parser.add_argument("--preflight-rounds", type=int, default=DEFAULT.preflight_rounds, metavar="N",
                        help="rounds of the conditional-write contention check (0 skips it; default 100)")
    parser.add_argument("--time-limit", type=float, default=DEFAULT.time_limit_s, metavar="SECONDS",
                        help="writers start no operation after this (default 150)")
    parser.add_argument("--weights", type=weights, metavar="KIND=W,...",
                        help="the operation mix, relative weights of append, delete, overwrite, tag, clone, cleanup, "
                        "stage, and the contended shared-delete, shared-tag (default append=40,delete=9,overwrite=3,"
                        "tag=6,clone=2,cleanup=6,stage=10)")
    add_report_options(parser, ("text", "json", "html"),
                       "json: the full report, history included; html: the run's timeline, one lane per writer, "
                       "faults and anomalies marked, latency percentiles (needs --output; with --personality all, "
                       "one page per personality: FILE-NAME.html)",
                       "write the report here (the text tables then go to stderr for json and html)")
    parser.add_argument("--report", action=DeprecatedSpelling, fmt="json", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--html", action=DeprecatedSpelling, fmt="html", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--from-report", metavar="FILE",
                        help="with --format html: draw a report saved by --format json instead of running")
    parser.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a storage option for --endpoint (credentials, region); repeat")
    parser.add_argument("--deterministic", action="store_true",
                        help="the proxy also schedules: it holds every request and releases one at a time in an "
                        "order drawn from the seed, so the same seed gives the same history and anomalies (slower)")
    parser.add_argument("--preemptions", type=int, metavar="N",
                        help="with --deterministic: switch away from a writer that could go on at most N times")
    parser.add_argument("--replay", metavar="REPORT",
                        help="run again the configuration a JSON report records (other run options are ignored) "
                        "and, for a deterministic run, say whether its history and anomalies are the same")
    parser.add_argument("--shrink", action="store_true",
                        help="when the run finds an anomaly, reduce it to a small run that still does and print "
                        "its replay command (docs/simulator.md)")
    parser.add_argument("--shrink-runs", type=int, default=20, metavar="N",
                        help="at most this many runs while shrinking (default 20)")
    parser.add_argument("--write-regression", metavar="FILE",
                        help="with --shrink: write the shrunk run as a pytest regression here")
    parser.set_defaults(func=run)


def config_of(args: argparse.Namespace, personality: str) -> RunConfig:
    """The run ``args`` ask for under ``personality`` (``--personality all`` makes one per personality)."""
    return RunConfig(writers=args.writers, ops=args.ops, seed=args.seed, writer=args.writer, faults=args.faults,
                     personality=personality, store=args.store, endpoint=args.endpoint,
                     storage_options=parse_storage_options(args.storage_option), bucket=args.bucket,
                     datasets=args.datasets, list_lag_s=args.list_lag, preflight_rounds=args.preflight_rounds,
                     time_limit_s=args.time_limit, weights=args.weights, deterministic=args.deterministic,
                     preemptions=args.preemptions)


def replayed(path: str) -> tuple[RunConfig, dict[str, Any]]:
    """The configuration a saved report records (its first run), and the report."""
    recorded = saved_runs(path)[0]
    try:
        config = RunConfig.from_json(recorded["config"])
    except (KeyError, TypeError) as exc:
        raise InvalidOption(f"{printable(path, 200)} records no run configuration ({exc})") from None
    return config, recorded


def replay_verdict(report: RunReport, recorded: dict[str, Any]) -> str:
    """Whether a replay reproduced the report it replays: for a deterministic run, the parts that must agree
    byte for byte (``RunReport.reproducible_part``), naming those that differ."""
    if not report.config.deterministic:
        return ("replay: the same operations and fault decisions; the interleaving is the machine's "
                "(not --deterministic)")
    mine = report.reproducible_part()
    differ = [name for name, value in mine.items()
              if json.dumps(value, sort_keys=True) != json.dumps(recorded.get(name), sort_keys=True)]
    if not differ:
        return "replay: identical to the report (history, anomalies, faults, schedule)"
    return f"replay: DIFFERS from the report in {', '.join(differ)}"


def verdict_line(reports: Sequence[RunReport]) -> str:
    """NO ANOMALIES or ANOMALIES, with what the runs did; NOTHING COMMITTED for runs without anomalies of which
    one committed no operation (every write failed: the checker had no history to judge, so "no anomalies"
    would claim what was not checked)."""
    anomalies = sum(len(r.result.anomalies) for r in reports)
    errors = sum(len(r.writer_errors) for r in reports)
    word = ("ANOMALIES" if not all(r.ok for r in reports)
            else "NOTHING COMMITTED" if any(r.result.commits == 0 for r in reports) else "NO ANOMALIES")
    runs = "; ".join(f"{r.config.personality}: {len(r.history.records())} operations, {r.result.commits} commits, "
                     f"{len(r.result.anomalies)} anomalies" for r in reports)
    seed = reports[0].config.seed
    return f"{word}: {anomalies} anomalies, {errors} writer errors (seed {seed}; {runs})"


def _console(args: argparse.Namespace, targets: Sequence[tuple[str, str | None]]) -> Console:
    """Where the text goes (as ``options.emit_report`` sends it): nowhere with --quiet, a file for --format
    text --output, stdout for --format text, else (the report in another format) stderr."""
    if args.quiet:
        return Console(file=io.StringIO())
    if any(fmt == "text" and path is not None for fmt, path in targets):
        return Console(file=io.StringIO(), width=150, record=True)
    stream = sys.stdout if ("text", None) in targets else sys.stderr
    return Console(file=stream) if stream.isatty() else Console(file=stream, width=150)


def run(args: argparse.Namespace) -> int:
    """Run, render, write the report; exit 1 when an anomaly was found."""
    from lancespec.progress import progress_bar

    check_report_options(args)
    targets = report_targets(args)
    html = [path for fmt, path in targets if fmt == "html"]
    if any(path is None for path in html):
        raise InvalidOption("--format html writes one page per run: give --output FILE")
    console = _console(args, targets)
    if args.from_report:
        if not html:
            raise InvalidOption("--from-report draws a saved report: give --format html --output FILE")
        write_timelines(saved_runs(args.from_report), str(html[0]), console)
        return EXIT_OK
    recorded: dict[str, Any] | None = None
    if args.replay:
        replay_config, recorded = replayed(args.replay)
        personalities = [replay_config.personality]
    else:
        personalities = list(PERSONALITIES) if args.personality == "all" else [args.personality]
    if args.endpoint and "unlocked" in personalities and args.personality == "all":
        personalities.remove("unlocked")
    reports: list[RunReport] = []
    for personality in personalities:
        config = replay_config if recorded is not None else config_of(args, personality)
        config.validate()
        with progress_bar(f"simulate [{personality}]", quiet=args.quiet) as update:
            report = simulate(config, update)
        reports.append(report)
        render(report, console)
    if len(reports) > 1:
        render_matrix(reports, console)
    if recorded is not None:
        console.print(replay_verdict(reports[0], recorded), highlight=False, markup=False, soft_wrap=True)
    failing = next((r for r in reports if not r.result.ok), None)
    if args.shrink and failing is not None:
        shrink_and_report(failing, args, console)
    line = verdict_line(reports)
    for fmt, path in targets:
        if fmt == "json":
            payload: dict[str, Any] = reports[0].to_json() if len(reports) == 1 else {
                "format": "lancespec.simulate-matrix/1", "runs": [r.to_json() for r in reports]}
            text = json.dumps(payload, indent=1) + "\n"
            if path is None:
                sys.stdout.write(text)
            else:
                write_text(path, text)
                console.print(f"report written to {path}", highlight=False, markup=False)
        elif fmt == "html" and path is not None:
            write_timelines([r.to_json() for r in reports], path, console)
        elif fmt == "text" and path is not None:
            write_text(path, line + "\n" + console.export_text())
    if args.quiet:
        sys.stdout.write(line + "\n")
    elif not any(fmt == "text" and path is not None for fmt, path in targets):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if not all(r.ok for r in reports):
        return EXIT_FAILED
    return EXIT_UNREADABLE if any(r.result.commits == 0 for r in reports) else EXIT_OK


def saved_runs(path: str) -> list[dict[str, Any]]:
    """The runs of a report written by ``--report`` (one run, or the runs of ``--personality all``)."""
    try:
        with open(path, encoding="utf-8") as fh:
            document = json.load(fh)
    except OSError as exc:
        raise InvalidOption(f"cannot read {printable(path, 200)}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidOption(f"{printable(path, 200)} is not a simulate report (not JSON: {exc})") from None
    runs = document.get("runs", [document]) if isinstance(document, dict) else []
    if runs and all(isinstance(r, dict) and r.get("format") == "lancespec.simulate/1" for r in runs):
        raise InvalidOption(f"{printable(path, 200)} is a lancespec.simulate/1 report, from before the simulator "
                            f"planned in the operation language: run its replay command again for a {REPORT_FORMAT} "
                            "report")
    if not runs or not all(isinstance(r, dict) and r.get("format") == REPORT_FORMAT for r in runs):
        raise InvalidOption(f"{printable(path, 200)} is not a report written by lancespec simulate --report")
    return list(runs)


def write_timelines(runs: Sequence[dict[str, Any]], path: str, console: Console) -> None:
    """The timeline page of each run: ``path`` for one run, ``{stem}-{personality}.html`` for several."""
    from pathlib import Path

    from lancespec.render.timeline_page import timeline_page

    target = Path(path)
    for run in runs:
        out = target if len(runs) == 1 else target.with_name(f"{target.stem}-{run['config']['personality']}.html")
        out.write_text(timeline_page(run), encoding="utf-8")
        console.print(f"timeline written to {out}")


def shrink_and_report(report: RunReport, args: argparse.Namespace, console: Console) -> None:
    """Shrink ``report``'s run, print the replay command of the result, write the regression if asked."""
    from simulator.shrink import regression_source, shrink

    console.print(f"shrinking (at most {args.shrink_runs} runs) ...")
    result = shrink(report.config, report, max_runs=args.shrink_runs,
                    run=simulate, note=console.print)
    shrunk = result.shrunk
    console.print(f"shrunk in {result.runs} runs ({result.seconds:.0f} s): {', '.join(result.steps) or 'nothing'}; "
                  f"{shrunk.writers} writer(s), {shrunk.ops} operations, faults '{shrunk.faults}' still break "
                  f"{', '.join(result.invariants)}")
    console.print(f"replay: {replay_command(shrunk)}", soft_wrap=True)
    if args.write_regression:
        name = f"test_shrunk_seed_{shrunk.seed}_{'_'.join(i.replace('-', '_') for i in result.invariants)}"
        with open(args.write_regression, "w", encoding="utf-8") as fh:
            fh.write(regression_source(result, name))
        console.print(f"regression written to {args.write_regression}")


def render(report: RunReport, console: Console) -> None:
    """The operations, throughput, faults and anomalies of one run."""
    config = report.config
    console.print(f"[bold]lancespec simulate[/bold]: {config.writers} {config.writer} writer(s), "
                  f"{len(report.history.records())} operations (seed {config.seed}), faults '{config.faults}', "
                  f"personality '{config.personality}'")
    if report.preflight is not None:
        colour = "green" if report.preflight.vouched else "red"
        verdict = "commit-safe" if report.preflight.vouched else "NOT vouched for commit safety"
        console.print(f"pre-flight [{colour}]{verdict}[/{colour}]: {report.preflight.reason}")

    ops = Table(title="operations")
    ops.add_column("operation", style="bold")
    for outcome in OUTCOMES:
        ops.add_column(outcome, justify="right")
    ops.add_column("unknown -> committed", justify="right")
    totals = dict.fromkeys((*OUTCOMES, "unknown-committed"), 0)
    for kind, row in sorted(report.op_table().items()):
        ops.add_row(kind, *(str(row[o]) for o in OUTCOMES), str(row["unknown-committed"]))
        for name in totals:
            totals[name] += row[name]
    ops.add_row("all", *(str(totals[o]) for o in OUTCOMES), str(totals["unknown-committed"]), style="bold")
    console.print(ops)

    summary = Table(title="run")
    summary.add_column("measure", style="bold")
    summary.add_column("value", justify="right")
    summary.add_row("versions committed", str(report.result.commits))
    summary.add_row("commits per second", f"{report.commits_per_s:.2f}")
    summary.add_row("writing (s)", f"{report.seconds_writing:.1f}")
    summary.add_row("checking (s)", f"{report.seconds_checking:.1f}")
    summary.add_row("total (s)", f"{report.seconds_total:.1f}")
    summary.add_row("requests", str(sum(report.requests.values())))
    if report.cut_ops:
        summary.add_row("operations not started (time limit)", str(report.cut_ops))
    if report.schedule is not None:
        summary.add_row("scheduled releases (deterministic)", str(len(report.schedule)))
        summary.add_row("releases without every writer waiting", str(report.schedule_timeouts))
    for kind in FAULTS:
        summary.add_row(f"faults: {kind}", str(report.faults.get(kind, 0)))
    console.print(summary)

    invariants = Table(title="invariants")
    invariants.add_column("invariant", style="bold")
    invariants.add_column("anomalies", justify="right")
    for name, count in report.result.by_invariant().items():
        invariants.add_row(INVARIANTS[name], "[green]0[/green]" if not count else f"[red]{count}[/red]")
    console.print(invariants)

    for error in report.writer_errors:
        console.print(f"[red]writer error:[/red] {error.splitlines()[0]}")
    if report.result.anomalies:
        count = len(report.result.anomalies)
        console.print(f"[bold red]{count} anomal{'y' if count == 1 else 'ies'}[/bold red]")
        for anomaly in report.result.anomalies[:30]:
            console.print(f"[red]{anomaly.kind}[/red] ({anomaly.dataset} v{anomaly.version}): {anomaly.message}",
                          highlight=False)
            for line in anomaly.excerpt(report.history):
                console.print(f"    {line}", highlight=False, markup=False)
        if len(report.result.anomalies) > 30:
            console.print(f"... and {len(report.result.anomalies) - 30} more (see --report)")
        console.print(f"[bold]seed {config.seed}; replay:[/bold] {replay_command(config)}", highlight=False)
    else:
        console.print("[bold green]no anomalies[/bold green]")


def render_matrix(reports: Sequence[RunReport], console: Console) -> None:
    """Which invariants break under which personality."""
    table = Table(title="invariants by storage personality (anomalies)")
    table.add_column("invariant", style="bold")
    for report in reports:
        table.add_column(report.config.personality, justify="right")
    for name, text in INVARIANTS.items():
        cells = []
        for report in reports:
            n = report.result.by_invariant()[name]
            cells.append("[green]holds[/green]" if not n else f"[red]breaks ({n})[/red]")
        table.add_row(text, *cells)
    table.add_row("pre-flight vouches", *(
        ("[green]yes[/green]" if r.preflight.vouched else "[red]no[/red]") if r.preflight else "-" for r in reports))
    console.print(table)
