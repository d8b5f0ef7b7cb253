"""Whole simulation runs on the embedded server: small ones in the default tier, the issue's default run
(8 writers, 400 operations, faults on) in the slow tier.

* honest S3 with faults: no anomaly, reference and pylance writers (for pylance, none but F-037's: a version
  whose manifest DELETE by a cleanup was faulted and never took effect, after its data files were deleted);
* the personality that ignores If-None-Match: lost commits (proof that the checker can fail);
* replay by seed: the same operations per process and the same fault decision for each process's n-th
  request of a class; with one writer (no interleaving) the whole history's outcomes and fault log too.
"""

from __future__ import annotations

import ast
import json
import shlex
from pathlib import Path

import pytest

from lancespec.cli import build_parser, main
from lancespec.cli.simulate import config_of
from simulator.attribution import Where, manifest_where
from simulator.checker import Anomaly
from simulator.simulate import RunConfig, RunReport, replay_command, simulate
from simulator.workload import plan


def run(**kwargs: object) -> RunReport:
    config = RunConfig(**{"preflight_rounds": 0, "time_limit_s": 90.0, **kwargs})  # type: ignore[arg-type]
    report = simulate(config)
    assert not report.writer_errors, report.writer_errors
    return report


def describe(report: RunReport) -> str:
    return "\n".join(f"{a.kind}: {a.message}\n  " + "\n  ".join(a.excerpt(report.history))
                     for a in report.result.anomalies[:10])


def test_reference_writers_under_faults_lose_nothing() -> None:
    report = run(writers=3, ops=30, seed=11, writer="reference", faults="default")
    assert sum(report.faults.values()) > 10
    assert report.result.commits > 10
    assert report.result.ok, describe(report)


def is_f037(report: RunReport, anomaly: Anomaly) -> bool:
    """Whether ``anomaly`` is F-037 (spec/findings.md): its version's manifest was sent DELETE requests (by a
    cleanup) and none took effect, so the version is still listed though its data files were deleted (certify
    reports the missing files of that version too: a ``format-breach`` of the same version)."""
    if anomaly.kind not in ("unreadable-version", "gc-deleted-reachable", "format-breach") or anomaly.dataset is None \
            or anomaly.version is None:
        return False
    where = Where(anomaly.dataset, anomaly.version)
    deletes = [w for w in report.wire if w.kind == "delete" and manifest_where(w.key) == where]
    return bool(deletes) and not any(w.applied for w in deletes)


def test_pylance_writers_under_faults_lose_nothing() -> None:
    report = run(writers=3, ops=36, seed=12, writer="pylance", faults="heavy")
    assert report.result.commits > 10
    assert all(is_f037(report, a) for a in report.result.anomalies), describe(report)


def test_an_endpoint_ignoring_if_none_match_loses_commits() -> None:
    report = run(writers=4, ops=48, seed=2, writer="reference", faults="none", personality="no-conditional",
                 preflight_rounds=3)
    kinds = {a.kind for a in report.result.anomalies}
    assert "lost-commit" in kinds and "duplicate-version" in kinds, describe(report)
    assert report.preflight is not None and not report.preflight.vouched
    assert report.result.by_invariant()["acknowledged-commits-kept"] > 0


def _faults_agree(a: RunReport, b: RunReport) -> None:
    """For every process, the fault decision of its n-th request of a class is the same in both runs
    (for every n both runs reached)."""
    compared = 0
    for client in a.fault_log:
        for (owner, request_class), count in a.request_counts.items():
            if owner != client:
                continue
            reached = min(count, b.request_counts.get((client, request_class), 0))
            pick_a = [f for f in a.fault_log[client] if f[0] == request_class and f[1] < reached]
            pick_b = [f for f in b.fault_log[client] if f[0] == request_class and f[1] < reached]
            assert pick_a == pick_b, f"process {client} {request_class}: {pick_a} != {pick_b}"
            compared += len(pick_a)
    assert compared > 0


def test_replay_by_seed_reproduces_operations_and_fault_decisions() -> None:
    first = run(writers=2, ops=16, seed=21, writer="reference", faults="default")
    second = run(writers=2, ops=16, seed=21, writer="reference", faults="default")
    assert first.history.signature() == second.history.signature()
    assert first.history.signature() == {w: [(op.index, op.kind, op.dataset) for op in ops]
                                          for w, ops in enumerate(plan(21, 2, 16))}
    assert plan(22, 2, 16) != plan(21, 2, 16)
    _faults_agree(first, second)


def test_replay_of_one_writer_reproduces_the_whole_history() -> None:
    """One reference writer: no interleaving, so outcomes, told versions and the fault log repeat exactly."""
    first = run(writers=1, ops=10, seed=5, writer="reference", faults="default")
    second = run(writers=1, ops=10, seed=5, writer="reference", faults="default")

    def outline(report: RunReport) -> list[tuple[int, str, str, object]]:
        return [(e.op.index, e.op.kind, e.type, e.value.get("version")) for e in report.history]

    assert outline(first) == outline(second)
    assert first.fault_log == second.fault_log and first.fault_log[0]
    assert first.result.ok and second.result.ok


def test_cli_reports_anomalies_with_the_replay_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    code = main(["simulate", "--writers", "3", "--ops", "24", "--seed", "3", "--faults", "none",
                 "--personality", "no-conditional", "--preflight-rounds", "2", "--format", "json",
                 "--output", str(out)])
    printed = capsys.readouterr().err  # the text goes to stderr when the report is written in json
    assert code == 1
    report = json.loads(out.read_text())
    assert report["format"] == "lancespec.simulate/2" and not report["ok"]
    assert report["replay"] in printed and "--seed 3" in report["replay"]
    assert report["anomalies"] and all(a["excerpt"] for a in report["anomalies"] if a["events"])
    assert report["invariants"]["acknowledged-commits-kept"]["holds"] is False
    assert "pre-flight" in printed and "NOT vouched" in printed
    assert {e["type"] for e in report["history"]} >= {"invoke", "ok"}


def test_cli_shrinks_a_failing_run_and_writes_its_regression(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """An endpoint ignoring If-None-Match loses commits with two writers; ``--shrink`` finds a smaller run that
    still does, prints its replay command and writes a regression that builds exactly that run."""
    regression = tmp_path / "test_regression.py"
    code = main(["simulate", "--writers", "3", "--ops", "12", "--seed", "3", "--faults", "none", "--datasets", "1",
                 "--personality", "no-conditional", "--preflight-rounds", "0", "--shrink", "--shrink-runs", "3",
                 "--write-regression", str(regression)])
    printed = capsys.readouterr().out
    assert code == 1
    replay = next(line for line in printed.splitlines() if line.startswith("replay: "))[len("replay: "):]
    shrunk = config_of(build_parser().parse_args(shlex.split(replay)[1:]), "no-conditional")
    assert shrunk.writers * max(1, shrunk.ops // shrunk.writers) < 12 and shrunk.seed == 3
    source = regression.read_text()
    assert replay in source
    call = next(n for n in ast.walk(ast.parse(source))
                if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "RunConfig")
    built = RunConfig(**{k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg})
    assert (built.writers, built.ops, built.seed, built.personality) == (shrunk.writers, shrunk.ops, 3,
                                                                         "no-conditional")


def test_replay_command_round_trips() -> None:
    config = RunConfig(writers=5, ops=50, seed=9, writer="mixed", faults="heavy", personality="lagging-list")
    assert replay_command(config) == ("lancespec simulate --writers 5 --ops 50 --seed 9 --writer mixed --faults heavy "
                                      "--personality lagging-list")


def replayed(config: RunConfig) -> RunConfig:
    """The run the printed replay command asks for, read by the real command-line parser."""
    argv = shlex.split(replay_command(config))
    assert argv[:2] == ["lancespec", "simulate"]
    args = build_parser().parse_args(argv[1:])
    return config_of(args, args.personality)


def test_the_replay_command_carries_every_setting_of_the_run() -> None:
    every = RunConfig(writers=3, ops=17, seed=5, writer="mixed", faults="heavy", personality="lagging-list",
                      endpoint="http://127.0.0.1:9", storage_options={"aws_region": "eu-west-1", "allow_http": "true"},
                      datasets=3, list_lag_s=0.25, preflight_rounds=7, time_limit_s=42.5,
                      weights={"append": 2.0, "tag": 0.5, "clone": 1e-3})
    assert replayed(every) == every
    assert replayed(RunConfig()) == RunConfig()
    assert replayed(RunConfig(seed=3, store="az")) == RunConfig(seed=3, store="az")
    assert "--store az" in replay_command(RunConfig(store="az"))
    assert replayed(RunConfig(seed=2, list_lag_s=0.1, time_limit_s=1.0)) == RunConfig(seed=2, list_lag_s=0.1,
                                                                                        time_limit_s=1.0)


def test_the_replay_command_prints_no_credentials_and_asks_for_a_fresh_bucket() -> None:
    secret = {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "s3cr3t-value", "aws_session_token": "tok"}
    config = RunConfig(endpoint="http://127.0.0.1:9", bucket="mine", storage_options={**secret, "aws_region": "x"})
    printed = replay_command(config)
    assert not any(value in printed for value in secret.values())
    assert replayed(config) == RunConfig(endpoint="http://127.0.0.1:9", storage_options={"aws_region": "x"})


def test_a_printed_replay_runs_the_same_operations() -> None:
    original = run(writers=1, ops=5, seed=13, faults="none", datasets=1, list_lag_s=0.5, time_limit_s=60.0,
                   weights={"append": 1.0, "tag": 1.0})
    replay = simulate(replayed(original.config))
    assert replay.config == original.config
    assert replay.history.signature() == original.history.signature()
    kinds = {kind for ops in original.history.signature().values() for _, kind, _ in ops}
    assert kinds <= {"append", "tag_create", "tag_delete"}


F026_KINDS = {"version-reused", "lost-commit", "lost-rows", "phantom-rows"}
"""What F-026 (a delayed commit takes a version number cleanup freed) shows as: the reuse, the commit it
loses, and the rows of that commit missing from (or left over in) later versions."""


@pytest.mark.slow
@pytest.mark.parametrize("writer", ["reference", "pylance"])
def test_default_run(writer: str) -> None:
    """The issue's default run: 8 writers, 400 operations, faults on, under 3 minutes. No anomaly for the
    reference writer; for pylance none, or only F-026's (pylance cleanups really delete manifests, so a
    paused commit can land on a freed name; reference cleanups mostly refuse their stale plans)."""
    report = simulate(RunConfig(writer=writer))
    print(f"\n{writer}: {report.seconds_total:.1f} s total, {report.seconds_writing:.1f} s writing, "
          f"{report.result.commits} commits ({report.commits_per_s:.2f}/s), faults {dict(report.faults)}, "
          f"operations {report.op_table()}")
    assert report.preflight is not None and report.preflight.vouched
    assert not report.writer_errors
    kinds = {a.kind for a in report.result.anomalies}
    if writer == "pylance" and "version-reused" in kinds:
        assert kinds <= F026_KINDS, describe(report)
    else:
        assert report.result.ok, describe(report)
    assert report.seconds_total < 180


def test_a_run_that_committed_nothing_is_no_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    """A store that refuses every write (the ``outage`` profile: every writer request answered 503) leaves the
    checker no history to judge: the verdict says NOTHING COMMITTED and exits 2, never NO ANOMALIES (which
    would claim a check that did not happen)."""
    code = main(["simulate", "--writers", "2", "--ops", "4", "--seed", "1", "--datasets", "1",
                 "--preflight-rounds", "0", "--faults", "outage", "--quiet"])
    line = capsys.readouterr().out.strip()
    assert code == 2
    assert line.startswith("NOTHING COMMITTED: 0 anomalies") and "0 commits" in line, line
    healthy = main(["simulate", "--writers", "2", "--ops", "4", "--seed", "1", "--datasets", "1",
                    "--preflight-rounds", "0", "--faults", "none", "--quiet"])
    assert healthy == 0 and capsys.readouterr().out.startswith("NO ANOMALIES")
