"""certify-writer states its coverage: runs in full, in part and not supported, by the feature that skipped
steps; CERTIFIED only when every run applied every step (docs/writer-contract.md "Coverage and verdict").
Pure logic on hand-built runs, the counts written out by hand."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from conformance.scenarios.certify_writer import WriterReport, render_json, render_junit, render_text
from conformance.scenarios.runner import FAIL, PASS, SKIP, ScenarioRun, StepResult, plain, step_name
from lancespec.render.writer_page import writer_page


def _full(name: str) -> ScenarioRun:
    run = ScenarioRun(name, "local", "w", [StepResult(1, "create", PASS), StepResult(2, "append", PASS)])
    run.writer_steps = 2
    run.certify = StepResult(-1, "certify", PASS)
    return run


def _cut_short(name: str) -> ScenarioRun:
    """Step 1 applied, step 2 needs branches and stops the run, steps 3-4 skipped after it."""
    run = ScenarioRun(name, "local", "w", [
        StepResult(1, "create", PASS),
        StepResult(2, "create_branch", SKIP, "unsupported by w: branches", unsupported="branches"),
        StepResult(3, "append", SKIP, "after unsupported step 2"),
        StepResult(4, "tag", SKIP, "after unsupported step 2")], halted=True, writer_steps=1, stopped_by="branches")
    return run


def _not_supported(name: str, feature: str) -> ScenarioRun:
    return ScenarioRun(name, "s3", "w", [
        StepResult(1, "create", SKIP, f"unsupported by w: {feature}", unsupported=feature),
        StepResult(2, "append", SKIP, "after unsupported step 1")], halted=True, stopped_by=feature)


def _report(*runs: ScenarioRun) -> WriterReport:
    return WriterReport("w", "w 1.0", ["local", "s3"], list(runs))


def test_every_run_in_full_is_certified() -> None:
    report = _report(_full("a"), _full("b"))
    assert report.verdict == "CERTIFIED"
    assert render_text(report).splitlines()[0] == "CERTIFIED: w (w 1.0): all 2 runs applied every step"
    doc = json.loads(render_json(report))
    assert doc["verdict"] == "certified" and doc["certified"] is True
    assert doc["coverage"] == {"runs": 2, "full": 2, "partial": 0, "not supported": 0, "steps_skipped": 0,
                               "by_feature": []}


def test_runs_in_part_make_the_verdict_partial_with_counts_by_feature() -> None:
    report = _report(_full("a"), _cut_short("b"), _not_supported("c", "bases"), _not_supported("d", "bases"))
    assert report.exit_code == 0 and report.verdict == "PARTIAL"
    first = render_text(report).splitlines()[0]
    assert first == ("PARTIAL: w (w 1.0): 1 of 4 runs applied in full, 1 in part, 2 not supported "
                     "(7 steps skipped for want of: bases (2 runs), branches (1 run))")
    doc = json.loads(render_json(report))
    assert doc["verdict"] == "partial" and doc["certified"] is False and doc["exit_code"] == 0
    assert doc["coverage"]["by_feature"] == [{"feature": "bases", "runs": 2, "steps": 4},
                                             {"feature": "branches", "runs": 1, "steps": 3}]
    assert [r["coverage"] for r in doc["runs"]] == ["full", "partial", "not supported", "not supported"]
    page = writer_page(doc)
    assert page.index("PARTIAL") < page.index("Scenarios x stores")
    assert '<h1 class="verdict-warn">PARTIAL</h1>' in page
    assert "CERTIFIED" not in page.split("<h1", 1)[1].split("</h1>")[0]


def test_a_failure_is_not_certified_and_still_states_the_coverage() -> None:
    bad = _full("a")
    bad.steps[1] = StepResult(2, "append", FAIL, "3 rows, expected 4")
    report = _report(bad, _cut_short("b"))
    assert report.exit_code == 1
    assert render_text(report).splitlines()[0] == (
        "NOT CERTIFIED: w (w 1.0): 1 of 2 runs failed; 1 of 2 runs applied in full, 1 in part, 0 not supported "
        "(3 steps skipped for want of: branches (1 run))")


def test_reports_name_steps_in_words_not_indexes() -> None:
    assert step_name(3, "tag") == "step 3 (tag)"
    assert step_name(-1, "certify") == "certification of the datasets it left"
    assert step_name(0, "compare") == "comparison with the reference writer"
    run = _full("a")
    run.compare = StepResult(0, "compare", FAIL, "ds rows: 3, the reference's 4")
    report = _report(run)
    for text in (render_text(report), render_junit(report), writer_page(json.loads(render_json(report)))):
        assert "step -1" not in text and "step 0" not in text
        assert "comparison with the reference writer" in text
    suite = ET.fromstring(render_junit(report))
    assert suite.find("properties/property[@name='verdict']").get("value").startswith("NOT CERTIFIED")  # type: ignore[union-attr]


def test_values_in_details_read_as_written_not_as_python() -> None:
    assert plain({"b1": "bucket:p", "b2": None}) == "{b1: bucket:p, b2: none}"
    assert plain([1, 2]) == "[1, 2]" and plain({}) == "none" and plain(None) == "none"
