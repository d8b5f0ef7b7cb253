"""The shrinker's search (simulator/shrink.py) on a stand-in for the simulator whose failure condition is
known, so the smallest failing configuration is known too: pure logic, no server."""

from __future__ import annotations

import ast
from types import SimpleNamespace
from typing import Any

import pytest

from simulator.shrink import candidates, regression_source, shrink
from simulator.simulate import RunConfig
from simulator.workload import DEFAULT_WEIGHTS


def fake_run(config: RunConfig) -> Any:
    """Fails ("rows" invariant) when two writers run at least three operations each with tags enabled."""
    weights = DEFAULT_WEIGHTS if config.weights is None else config.weights
    per_writer = config.ops // config.writers
    fails = config.writers >= 2 and per_writer >= 3 and weights.get("tag", 0) > 0
    anomalies = [SimpleNamespace(invariant="rows", message="lost rows")] if fails else []
    return SimpleNamespace(result=SimpleNamespace(anomalies=anomalies))


def test_shrinks_to_the_smallest_failing_configuration() -> None:
    original = RunConfig(writers=8, ops=400, seed=7, faults="default", datasets=2)
    result = shrink(original, fake_run(original), max_runs=200, run=fake_run)
    shrunk = result.shrunk
    assert (shrunk.writers, shrunk.ops // shrunk.writers, shrunk.faults, shrunk.datasets) == (2, 3, "none", 1)
    assert shrunk.seed == 7
    assert shrunk.weights is not None and {k for k, w in shrunk.weights.items() if w > 0} == {"append", "tag"}
    assert result.invariants == ("rows",) and result.steps[0] == "no faults"
    assert fake_run(shrunk).result.anomalies  # still fails
    assert all(not fake_run(c).result.anomalies for _, c in candidates(shrunk))  # and is locally minimal


def test_the_budget_bounds_the_runs() -> None:
    original = RunConfig(writers=8, ops=400, faults="default")
    calls = []

    def counting(config: RunConfig) -> Any:
        calls.append(config)
        return fake_run(config)

    result = shrink(original, fake_run(original), max_runs=3, run=counting)
    assert len(calls) == result.runs == 3


def test_a_passing_run_cannot_be_shrunk() -> None:
    config = RunConfig(writers=1, ops=1)
    with pytest.raises(ValueError, match="no anomaly"):
        shrink(config, fake_run(config), run=fake_run)


def test_the_regression_source_is_python_that_replays_the_shrunk_run() -> None:
    original = RunConfig(writers=8, ops=400, seed=7, faults="default")
    result = shrink(original, fake_run(original), max_runs=200, run=fake_run)
    source = regression_source(result, "test_shrunk_rows")
    tree = ast.parse(source)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "RunConfig")
    given = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    rebuilt = RunConfig(**given)
    assert rebuilt == result.shrunk
    assert "lancespec simulate" in source and "--seed 7" in source
