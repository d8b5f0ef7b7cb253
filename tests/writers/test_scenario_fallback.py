"""Scenarios name the features they test; the steps that only shape the data fall back for a writer without
them (conformance/scenarios/fallback.py, docs/scenario-format.md "Tested features and fallbacks"), and the
reference completes every fallen-back scenario, so that a comparison with it stands for what was dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.adapters import registry
from conformance.adapters.base import Capabilities
from conformance.scenarios.fallback import fall_back, features_tested, step_needs, untested_needs
from conformance.scenarios.format import builtin_scenarios, parse_scenario
from conformance.scenarios.runner import run_scenario
from conformance.scenarios.stores import LocalRun

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = builtin_scenarios()
LANCEDB = {"lancedb": ROOT / "conformance" / "adapters" / "lancedb.toml",
           "lancedb-node": ROOT / "tests" / "thirdparty" / "node" / "writer.capabilities.toml"}
WITHOUT_SHAPING = {**LANCEDB, "duckdb-lance": ROOT / "conformance" / "adapters" / "processes" / "duckdb_writer.toml"}


def test_every_shipped_scenario_declares_what_it_tests() -> None:
    """Every feature a step takes is tested, or may fall back (a shaping argument of a writing step)."""
    assert all(s.tests is not None for s in SCENARIOS), [s.name for s in SCENARIOS if s.tests is None]
    assert {s.name: untested_needs(s) for s in SCENARIOS if untested_needs(s)} == {}


@pytest.mark.parametrize("writer", sorted(LANCEDB))
def test_lancedb_skips_only_what_a_scenario_tests(writer: str) -> None:
    """For LanceDB (Python and Node) every step left unsupported after the fallback needs a feature its scenario
    tests: no "n/s" stands for rows per file or an extra base; and the fallback brings at least 20 scenarios
    within reach of every step."""
    caps = Capabilities.load(LANCEDB[writer])
    reachable = 0
    for scenario in SCENARIOS:
        ran = fall_back(scenario, caps).scenario
        missing = [(step.index, f) for step in ran.steps if (m := caps.missing(step_needs(step))) for f in [m[0]]]
        assert all(f in features_tested(scenario) for _, f in missing), (scenario.name, missing)
        reachable += not missing
    assert reachable >= 20


def _document(steps: list[dict[str, object]], tests: list[str]) -> dict[str, object]:
    return {"format": "lancespec.scenario/1", "name": "shaped", "description": "a test", "tests": tests,
            "steps": steps}


def test_a_shaping_argument_falls_back_with_the_expectations_it_shaped() -> None:
    caps = Capabilities("w", {"max_rows_per_file": "no", "bases": "no", "target_bases": "no"})
    scenario = parse_scenario(_document([
        {"op": "create", "dataset": "ds", "at": "main:ds", "data": {"rows": [0, 4]}, "max_rows_per_file": 2,
         "bases": [{"name": "b", "at": "cold:b"}], "target_bases": ["b"],
         "expect": {"version": 1, "files": {"cold:b": 2}, "bases": {"b": "cold:b"}}},
        {"op": "append", "dataset": "ds", "data": {"rows": [4, 1]}, "target_bases": ["b"],
         "expect": {"files": {"cold:b": 3}}},
        {"op": "append", "dataset": "ds", "data": {"rows": [5, 1]}, "target_bases": ["nope"],
         "refuse": {"kind": "unknown_target_base"}},
    ], ["create", "append", "target_bases", "refuses.unknown_target_base"]))
    fallback = fall_back(scenario, caps)
    assert fallback.dropped == ("bases", "max_rows_per_file", "target_bases")  # tested, but no base is left
    steps = fallback.scenario.document["steps"]
    assert steps[0] == {"op": "create", "dataset": "ds", "at": "main:ds", "data": {"rows": [0, 4]},
                        "expect": {"version": 1}}
    assert steps[1] == {"op": "append", "dataset": "ds", "data": {"rows": [4, 1]}}  # no base left to target
    assert steps[2] == scenario.document["steps"][2]  # a refusal never falls back
    assert scenario.document["steps"][0]["max_rows_per_file"] == 2  # the loaded scenario is untouched


def test_a_tested_or_supported_feature_never_falls_back() -> None:
    scenario = parse_scenario(_document([
        {"op": "create", "dataset": "ds", "at": "main:ds", "data": {"rows": [0, 4]}, "max_rows_per_file": 2}],
        ["create", "max_rows_per_file"]))
    assert fall_back(scenario, Capabilities("w", {"max_rows_per_file": "no"})).dropped == ()
    untested = parse_scenario({**scenario.document, "tests": ["create"]})
    assert fall_back(untested, Capabilities("w", {})).scenario is untested


def test_the_scenario_format_refuses_a_malformed_tests_key() -> None:
    from conformance.scenarios.format import ScenarioError

    with pytest.raises(ScenarioError, match="tests is a list"):
        parse_scenario(_document([{"op": "create", "dataset": "ds", "at": "main:ds", "data": {"rows": [0, 1]}}],
                                 "create"))  # type: ignore[arg-type]


@pytest.mark.parametrize("writer", sorted(WITHOUT_SHAPING))
def test_the_reference_completes_every_fallen_back_scenario(writer: str, tmp_path: Path) -> None:
    """The expectations left after a fallback hold for the reference writer running the same steps on local
    disk (what certify-writer compares the writer with): the fallback derives, never invents."""
    caps = Capabilities.load(WITHOUT_SHAPING[writer])
    reference = registry.get("reference")
    fallen = [f for f in (fall_back(s, caps) for s in SCENARIOS) if f.dropped and "local" in f.scenario.stores]
    assert len(fallen) >= 5
    for i, fallback in enumerate(fallen):
        result, _ = run_scenario(fallback.scenario, reference, LocalRun(tmp_path / str(i)))
        assert result.completed, (fallback.scenario.name, json.dumps([s.to_json() for s in result.steps]))
