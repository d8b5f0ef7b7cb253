"""A scenario as a writer without its shaping features runs it (docs/scenario-format.md "Tested features and
fallbacks").

A scenario names the features it tests (``Scenario.tests``). A writing step's argument that takes another
feature only shapes the data: rows per file, extra bases registered at create, target bases. For a writer
whose capability file declares such a feature unsupported, the argument is dropped (each write then lands as
one file in the dataset's root) and so are the expectations it shaped (``SHAPING``). The
reference writer runs the same fallen-back steps and the run is compared with it, so what the scenario
expects stays derived from the reference, never written for the fallback. A refusal step never falls back:
without its argument it would be another step. A step whose operation itself is a feature the writer lacks
is skipped as before, and ``untested_needs`` keeps that feature among the ones the scenario tests, so that a
"not supported" names what the scenario is about, never a step that only sets the data up.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from conformance.adapters.base import Capabilities, needs

from .format import Scenario, Step, parse_scenario

_BASES = ("bases", "target_bases", "target_all_bases")
_BASE_EXPECTATIONS = ("files", "bases", "unnamed_bases")

#: Shaping features: the step keys that take one (dropping ``bases`` drops the targets naming them) and the
#: expectations it shapes (how many files land where, which bases a dataset has).
SHAPING: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "max_rows_per_file": (("max_rows_per_file",), ("files",)),
    "target_bases": (("target_bases",), ("files",)),
    "target_all_bases": (("target_all_bases",), ("files",)),
    "bases": (_BASES, _BASE_EXPECTATIONS),
    "base_ids": (_BASES, _BASE_EXPECTATIONS),
}

#: The operations whose shaping arguments may fall back.
WRITING_OPS = frozenset({"create", "append", "overwrite"})


def step_needs(step: Step) -> list[str]:
    """The features a writer step takes (none for a harness step)."""
    if step.operation is None:
        return []
    return needs(step.operation, step.refuse.kind if step.refuse else None)


def features_tested(scenario: Scenario) -> frozenset[str]:
    """The features ``scenario`` tests: as it declares, else every feature its steps take."""
    if scenario.tests is not None:
        return frozenset(scenario.tests)
    return frozenset(f for step in scenario.steps for f in step_needs(step))


def _droppable(step: Step) -> frozenset[str]:
    """The shaping features that may fall back in ``step``."""
    if step.refuse is not None or step.op not in WRITING_OPS:
        return frozenset()
    return frozenset(f for f, (keys, _) in SHAPING.items() if any(k in step.args for k in keys))


def untested_needs(scenario: Scenario) -> dict[int, list[str]]:
    """Step index -> the features the step takes that the scenario neither tests nor can let fall back
    (empty for a well-declared scenario)."""
    declared = features_tested(scenario)
    out = {}
    for step in scenario.steps:
        missing = [f for f in step_needs(step) if f not in declared and f not in _droppable(step)]
        if missing:
            out[step.index] = missing
    return out


@dataclass(frozen=True)
class Fallback:
    """``scenario`` as ``writer`` runs it, and the shaping features that fell back (none: unchanged)."""

    scenario: Scenario
    dropped: tuple[str, ...] = ()


def _strip(raw: dict[str, Any], keys: Iterable[str]) -> bool:
    removed = [k for k in keys if k in raw]
    for k in removed:
        del raw[k]
    return bool(removed)


def fall_back(scenario: Scenario, capabilities: Capabilities) -> Fallback:
    """``scenario`` with the shaping arguments ``capabilities`` declares unsupported and the scenario does not
    test dropped from its writing steps, and the expectations they shaped dropped from every step."""
    declared = features_tested(scenario)
    candidates = [f for f in SHAPING if f in capabilities.unsupported and f not in declared]
    if "bases" in candidates:  # a target names a base: without the bases, no writing step targets one
        candidates += [f for f in ("target_bases", "target_all_bases") if f not in candidates]
    if not candidates or not scenario.document:
        return Fallback(scenario)
    document: dict[str, Any] = copy.deepcopy(dict(scenario.document))
    dropped = set()
    for step, raw in zip(scenario.steps, document["steps"], strict=True):
        for feature in candidates:
            if feature in _droppable(step) and feature in step_needs(step) and _strip(raw, SHAPING[feature][0]):
                dropped.add(feature)
    if not dropped:
        return Fallback(scenario)
    shaped = {key for feature in dropped for key in SHAPING[feature][1]}
    for raw in document["steps"]:
        expect = raw.get("expect")
        if isinstance(expect, dict) and _strip(expect, shaped) and not set(expect) - {"dataset"}:
            del raw["expect"]
    return Fallback(parse_scenario(document, scenario.source), tuple(sorted(dropped)))

