"""Deterministic runs (``simulate --deterministic``): the proxy schedules every request, so one seed gives one run.

* the scheduler alone (pure logic, threads standing in for writers): the same seed releases the same order;
  a preemption bound of 0 runs each writer until it finishes; a held request (a delay fault) is overtaken;
* whole runs on the embedded server: two runs with one seed give byte-identical histories, anomalies, fault
  logs and schedules (the default tier runs a small one; the slow tier the mutation battery's size, and
  ``--replay`` of a saved report through the command line).
"""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import pytest

from lancespec.cli import main
from simulator.schedule import Scheduler
from simulator.simulate import RunConfig, RunReport, replay_command, simulate


def schedule_of(seed: int, clients: int = 3, requests: int = 6, preemptions: int | None = None,
                holds: dict[tuple[int, int], int] | None = None) -> list[int]:
    """The release order of ``clients`` threads, each sending ``requests`` requests one after another (the next
    once the last is answered), as writers do through the proxy."""
    scheduler = Scheduler(seed, range(clients), preemptions=preemptions, wait_s=30.0)
    scheduler.activate()

    def client(c: int) -> None:
        for i in range(requests):
            scheduler.leave(scheduler.enter(c, (holds or {}).get((c, i), 0)))
        scheduler.retire(c)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    scheduler.stop()
    assert scheduler.timeouts == 0
    return scheduler.order


def test_one_seed_releases_one_order_and_another_seed_another() -> None:
    first = schedule_of(7)
    assert sorted(first) == [c for c in range(3) for _ in range(6)]
    assert schedule_of(7) == first
    assert any(schedule_of(seed) != first for seed in (8, 9, 10))


def test_no_preemption_runs_each_writer_until_it_is_done() -> None:
    order = schedule_of(3, preemptions=0)
    switches = sum(a != b for a, b in itertools.pairwise(order))
    assert switches == 2, order  # three writers, each run to its end: two switches


def test_a_held_request_is_overtaken() -> None:
    # client 0's first request is held 5 steps: the others' requests go first, whatever the seed
    order = schedule_of(1, clients=2, requests=8, holds={(0, 0): 5})
    assert order[:5] == [1] * 5, order


def deterministic(**kwargs: object) -> RunReport:
    config = RunConfig(**{"preflight_rounds": 0, "datasets": 1, "deterministic": True, "time_limit_s": 120.0,
                          **kwargs})  # type: ignore[arg-type]
    report = simulate(config)
    assert not report.writer_errors, report.writer_errors
    assert report.schedule_timeouts == 0  # every release waited for every live writer: the run is the seed's
    return report


def reproducible_bytes(report: RunReport) -> bytes:
    return json.dumps(report.reproducible_part(), sort_keys=True).encode()


@pytest.mark.s3
def test_two_runs_with_one_seed_are_byte_identical() -> None:
    first = deterministic(writers=3, ops=15, seed=4, faults="heavy")
    second = deterministic(writers=3, ops=15, seed=4, faults="heavy")
    assert sum(first.faults.values()) > 0 and first.result.commits > 3
    assert first.schedule and len(first.schedule) > 50
    assert reproducible_bytes(first) == reproducible_bytes(second)
    # what the bytes hold: the history with its outcomes and versions, the anomalies, the fault log
    assert first.history.to_json() == second.history.to_json()
    assert [a.to_json(first.history) for a in first.result.anomalies] == \
        [a.to_json(second.history) for a in second.result.anomalies]
    assert "--deterministic" in replay_command(first.config)


@pytest.mark.slow
@pytest.mark.s3
def test_battery_sized_runs_repeat_and_replay_reproduces_a_report(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = {"writers": 6, "ops": 90, "seed": 1, "faults": "lost-ack-bursts"}
    first = deterministic(**config)
    second = deterministic(**config)
    assert reproducible_bytes(first) == reproducible_bytes(second)
    report = tmp_path / "run.json"
    args = ["simulate", "--writers", "3", "--ops", "21", "--seed", "5", "--datasets", "1", "--preflight-rounds", "0",
            "--deterministic", "--format", "json", "--output", str(report)]
    assert main(args) in (0, 1)
    capsys.readouterr()
    main(["simulate", "--replay", str(report), "--format", "json", "--output", str(tmp_path / "again.json")])
    assert "replay: identical to the report" in capsys.readouterr().err


def test_shrinking_a_deterministic_run_bounds_its_preemptions() -> None:
    from simulator.shrink import PREEMPTION_START, candidates

    def bounds(config: RunConfig) -> list[int | None]:
        return [c.preemptions for what, c in candidates(config) if "preemptions" in what]

    assert bounds(RunConfig(faults="none")) == []  # an interleaving of the machine's has no schedule to shrink
    assert bounds(RunConfig(faults="none", deterministic=True)) == [0, PREEMPTION_START]
    assert bounds(RunConfig(faults="none", deterministic=True, preemptions=10)) == [0, 5]
    assert bounds(RunConfig(faults="none", deterministic=True, preemptions=0)) == []


def test_a_request_still_held_when_the_run_stops_is_cancelled() -> None:
    scheduler = Scheduler(0, range(2), wait_s=30.0)
    scheduler.activate()
    tickets: list[object] = []
    thread = threading.Thread(target=lambda: tickets.append(scheduler.enter(0)))
    thread.start()  # writer 1 never sends anything: writer 0's request stays held
    for _ in range(100):
        if scheduler.held:
            break
        threading.Event().wait(0.01)
    scheduler.stop()
    thread.join(timeout=10)
    assert len(tickets) == 1 and getattr(tickets[0], "cancelled", False) and scheduler.order == []
