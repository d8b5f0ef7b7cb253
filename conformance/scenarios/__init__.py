"""Writer scenarios: abstract operation histories with the expected state after each step
(docs/scenario-format.md), and the runner behind ``lancespec certify-writer``."""

from __future__ import annotations

from reference.errors import ERROR_KINDS

from .format import (
    BUCKETS,
    FORMAT,
    HARNESS_OPS,
    WRITER_OPS,
    Location,
    Refusal,
    Scenario,
    ScenarioError,
    Step,
    builtin_dir,
    builtin_scenarios,
    load_scenario,
    load_scenarios,
    parse_scenario,
)

__all__ = [
    "BUCKETS",
    "ERROR_KINDS",
    "FORMAT",
    "HARNESS_OPS",
    "WRITER_OPS",
    "Location",
    "Refusal",
    "Scenario",
    "ScenarioError",
    "Step",
    "builtin_dir",
    "builtin_scenarios",
    "load_scenario",
    "load_scenarios",
    "parse_scenario",
]
