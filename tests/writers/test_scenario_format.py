"""The scenario format: the shipped scenarios load, cover every operation and the combinations the issue
names, and invalid files are refused with a message naming the file, the step and the problem."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.catalogue import load_catalogue
from conformance.scenarios import (
    HARNESS_OPS,
    WRITER_OPS,
    ScenarioError,
    builtin_dir,
    builtin_scenarios,
    load_scenario,
    load_scenarios,
    parse_scenario,
)

SCENARIOS = builtin_scenarios()


def _ops_in_order(name: str) -> list[str]:
    (scenario,) = [s for s in SCENARIOS if s.name == name]
    return [s.op for s in scenario.steps]


def test_at_least_25_scenarios_with_unique_names_and_files_named_after_them() -> None:
    assert len(SCENARIOS) >= 25
    for s in SCENARIOS:
        assert Path(s.source).name == f"{s.name}.json"


def test_the_documented_list_of_shipped_scenarios_is_current() -> None:
    """docs/scenario-format.md lists exactly the shipped scenarios, each with its operations in order of first
    use and its refusal kinds, and says how many there are (the README names the same count)."""
    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "scenario-format.md").read_text()
    section = doc.split(f"## The shipped scenarios ({len(SCENARIOS)})\n", 1)[-1].split("\n## ", 1)[0]
    listed = [line for line in section.splitlines() if line.startswith("| `")]
    expected = []
    for s in SCENARIOS:
        ops = list(dict.fromkeys(step.op for step in s.steps))
        refusals = sorted({step.refuse.kind for step in s.steps if step.refuse}) or ["—"]
        expected.append(f"| `{s.name}` | {', '.join(ops)} | {', '.join(refusals)} |")
    assert sorted(listed) == sorted(expected), set(listed) ^ set(expected)
    assert f"replays {len(SCENARIOS)} scenarios" in (root / "README.md").read_text()


def test_every_operation_is_covered() -> None:
    used = set().union(*(s.operations for s in SCENARIOS))
    assert set(WRITER_OPS) <= used, set(WRITER_OPS) - used
    assert set(HARNESS_OPS) <= used, set(HARNESS_OPS) - used


def test_the_named_combinations_are_covered() -> None:
    def has(seq: list[str], *wanted: str) -> bool:
        it = iter(seq)
        return all(any(op == w for op in it) for w in wanted)

    combos = {
        "clone after tag": ("tag_create", "shallow_clone"),
        "cleanup after clone": ("shallow_clone", "cleanup"),
        "relocate after clone": ("shallow_clone", "relocate"),
        "deep clone after shallow clone": ("shallow_clone", "deep_clone"),
        "refs across branches": ("branch_create", "tag_create", "tag_update"),
        "branch of a branch": ("branch_create", "append", "branch_create"),
    }
    for label, ops in combos.items():
        assert any(has([s.op for s in sc.steps], *ops) for sc in SCENARIOS), label
    blob_clones = [s for s in SCENARIOS if any("blobs" in str(st.args.get("data", "")) for st in s.steps)
                   and {"shallow_clone", "deep_clone"} & s.operations]
    assert blob_clones, "blobs in clones"


def test_refusals_cover_what_a_writer_must_refuse() -> None:
    kinds = {st.refuse.kind for s in SCENARIOS for st in s.steps if st.refuse}
    assert {"invalid_base_path", "duplicate_base", "unknown_target_base", "invalid_ref_name", "ref_exists",
            "ref_not_found", "dataset_exists", "empty_operation"} <= kinds
    names = {st.args.get("tag") or st.args.get("branch") for s in SCENARIOS for st in s.steps
             if st.op in ("tag_create", "branch_create")}
    assert {"with space", "a/b", "é", "日本/枝"} <= names


def test_scenarios_spread_over_several_buckets_and_cite_known_requirements() -> None:
    catalogue = load_catalogue()
    for s in SCENARIOS:
        assert set(s.requirements) <= set(catalogue), s.name
    multi = [s for s in SCENARIOS if len({str(v).split(":")[0] for st in s.steps for v in st.args.values()
                                           if isinstance(v, str) and ":" in v}) >= 2]
    assert len(multi) >= 10


def _doc(**steps_override: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"format": "lancespec.scenario/1", "name": "x", "description": "d",
                           "steps": [{"op": "create", "dataset": "ds", "at": "main:ds", "data": {"rows": [0, 1]}}]}
    doc.update(steps_override)
    return doc


@pytest.mark.parametrize(("change", "message"), [
    ({"format": "other/1"}, "format must be"),
    ({"name": "Bad Name"}, "name must match"),
    ({"steps": []}, "non-empty"),
    ({"steps": [{"op": "explode", "dataset": "ds"}]}, "unknown op 'explode'"),
    ({"steps": [{"op": "append", "dataset": "nope", "data": {"rows": [0, 1]}}]}, "not introduced"),
    ({"steps": [{"op": "create", "dataset": "ds", "at": "attic:ds", "data": {"rows": [0, 1]}}]}, "unknown bucket"),
    ({"steps": [{"op": "create", "dataset": "ds", "at": "main:../x", "data": {"rows": [0, 1]}}]}, "relative"),
    ({"steps": [{"op": "create", "dataset": "ds", "at": "main:ds", "data": {"rows": [0, 1]},
                 "refuse": {"kind": "nonsense"}}]}, "refuse is"),
    ({"steps": [{"op": "create", "dataset": "ds", "at": "main:ds", "data": {"rows": [0, 1]},
                 "expect": {"colour": 1}}]}, "unknown expect key"),
    ({"steps": [{"op": "create", "dataset": "ds", "at": "main:ds", "data": {"rows": [0, 1]},
                 "bases": [{"name": "b", "at": "cold:b", "raw": "x"}]}]}, "exactly one of 'at' and 'raw'"),
])
def test_invalid_scenarios_are_refused_with_a_reason(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as info:
        parse_scenario(_doc(**change), "case.json")
    assert "case.json" in str(info.value)


def test_load_from_files_and_globs_and_reject_duplicate_names(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(_doc(name="a")))
    (tmp_path / "b.json").write_text(json.dumps(_doc(name="b")))
    assert [s.name for s in load_scenarios([str(tmp_path / "*.json")])] == ["a", "b"]
    (tmp_path / "c.json").write_text(json.dumps(_doc(name="a")))
    with pytest.raises(ScenarioError, match="also used"):
        load_scenarios([str(tmp_path / "*.json")])
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "bad.json")


def test_check_scenarios_command_validates_files(tmp_path: Path) -> None:
    good = builtin_dir() / "clone-after-tag.json"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_doc(format="nope")))
    done = subprocess.run([sys.executable, "-m", "lancespec", "check-scenarios", str(good), str(bad)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "ok:" in done.stdout and "invalid:" in done.stdout
