"""LanceDB as a writer under certification (certify-writer), in a reduced form: a handful of scenarios on each
store for LanceDB for Python (``--writer lancedb``, conformance/adapters/lancedb.py + lancedb.toml) and for Node
(``cmd:node tests/thirdparty/node/writer.mjs`` + writer.capabilities.toml). Every applicable step passes or is an
expected divergence naming its finding; a step needing a feature LanceDB lacks is skipped, not failed. The full
runs: ``lancespec certify-writer --writer lancedb`` and the Node command in tests/thirdparty/node/writer.mjs.

The Python tests skip, with the reason, when LanceDB for Python is not installed; the Node tests when node or
@lancedb/lancedb is not (``npm install --prefix tests/thirdparty/node``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from compat_kit import assert_writes_current
from tool_kit import load_tool

from conformance.adapters import registry
from conformance.adapters.base import Capabilities
from conformance.scenarios import builtin_scenarios
from conformance.scenarios.certify_writer import (
    WriterReport,
    certify_writer,
    make_writer,
    render_text,
    to_json,
)
from conformance.scenarios.runner import FAIL, PASS, SKIP, XFAIL, XPASS, ScenarioRun
from lancespec.cli import main
from simulator.s3 import EmbeddedS3Server

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = Path(__file__).resolve().parent / "node"
NODE_CAPS = NODE_DIR / "writer.capabilities.toml"
PY_CAPS = ROOT / "conformance" / "adapters" / "lancedb.toml"
FINDINGS = (ROOT / "spec" / "findings.md").read_text(encoding="utf-8")

#: A handful per store: plain writes, refs on branches, refusals, a skipped feature, and expected divergences.
LOCAL = ["tags-lifecycle", "v1-manifest-names", "refs-across-branches", "branch-unusual-names",
         "delete-matching-nothing", "bases-round-robin", "clone-of-clone"]
S3 = ["tags-lifecycle", "refs-across-branches", "clone-after-branch", "delete-matching-nothing"]


def _lancedb() -> None:
    pytest.importorskip("lancedb", reason="LanceDB for Python is not installed (pip install 'lancespec[lancedb]')")


def _node_command() -> str:
    node, why_not = load_tool("thirdparty_writers").supported_node()  # LanceDB for Node 0.39 needs node >= 22
    if node is None:
        pytest.skip(why_not)
    if not (NODE_DIR / "node_modules" / "@lancedb" / "lancedb").is_dir():
        pytest.skip("@lancedb/lancedb is not installed: run npm install --prefix tests/thirdparty/node")
    return f"cmd:{node} {NODE_DIR / 'writer.mjs'}"


def _scenarios(names: list[str]) -> list:  # type: ignore[type-arg]
    chosen = [s for s in builtin_scenarios() if s.name in names]
    assert sorted(s.name for s in chosen) == sorted(names)
    return chosen


def _runs(report: WriterReport) -> dict[str, ScenarioRun]:
    assert report.exit_code == 0, render_text(report)
    assert not any(r.outcome in (FAIL, XPASS) for run in report.runs for r in run.results), render_text(report)
    return {run.scenario: run for run in report.runs}


def _xfails(run: ScenarioRun) -> list[tuple[int, str | None]]:
    return [(r.index, r.finding) for r in run.results if r.outcome == XFAIL]


def _branch_refs_until_the_clone(run: ScenarioRun) -> bool:
    """refs-across-branches: tags and branches on branches pass; the clone of a branch's version (step 9) needs
    ``clone_from_branch``, which LanceDB's clone API lacks."""
    return ([s.outcome for s in run.steps[:8]] == [PASS] * 8 and run.steps[8].unsupported == "clone_from_branch"
            and run.steps[9].outcome == SKIP)


def _fell_back_and_passed(run: ScenarioRun) -> bool:
    """clone-of-clone: its create's rows per file (a shaping step LanceDB cannot express) fell back, and the run
    completed and compares equal with the reference's run of the same fallen-back steps."""
    return run.fell_back == ("max_rows_per_file",) and not run.skipped_for() and _completed_and_compared(run)


def _completed_and_compared(run: ScenarioRun) -> bool:
    return (run.completed and run.certify is not None and run.certify.outcome == PASS
            and run.compare is not None and run.compare.outcome == PASS)


def test_every_listed_divergence_and_feature_is_recorded() -> None:
    """Both capability files load without LanceDB installed, name recorded findings and real steps."""
    scenarios = {s.name: s for s in builtin_scenarios()}
    for path in (PY_CAPS, NODE_CAPS):
        caps = Capabilities.load(path)
        assert caps.root_suffix == ".lance"
        assert {"bases", "max_rows_per_file", "deep_clone", "relocate", "cleanup", "clone_from_branch"} <= set(
            caps.unsupported)
        assert "branches" not in caps.unsupported and "tags" not in caps.unsupported
        for d in caps.divergences:
            assert f"## {d.finding}:" in FINDINGS, d
            matching = [s for name, s in scenarios.items() if re.fullmatch(d.scenario.replace("*", ".*"), name)]
            assert matching and all(any(st.index == d.step for st in s.steps) for s in matching), d


def test_lancedb_python_certified_on_a_few_scenarios_locally(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    _lancedb()
    writer = make_writer("lancedb")
    assert writer.version().startswith("lancedb ") and registry.origin("lancedb").endswith("adapters.lancedb")
    report = certify_writer(writer, _scenarios(LOCAL), stores=["local"], workdir=str(tmp_path))
    runs = _runs(report)
    for name in ("tags-lifecycle", "v1-manifest-names"):
        assert _completed_and_compared(runs[name]), render_text(report)
    assert _branch_refs_until_the_clone(runs["refs-across-branches"]), render_text(report)
    assert _xfails(runs["delete-matching-nothing"]) == [(2, "F-022")]
    assert _xfails(runs["branch-unusual-names"]) == [(13, "F-035")]
    skipped = runs["bases-round-robin"]
    assert skipped.steps[0].outcome == SKIP and skipped.steps[0].unsupported == "bases"  # the feature it tests
    assert _fell_back_and_passed(runs["clone-of-clone"]), render_text(report)
    assert report.applied == 5  # every run but the one needing bases and the one needing a branch clone
    # the tables live at {database}/{name}.lance (the reference's runs beside them keep the plain roots)
    assert list(tmp_path.glob("run*/main/ds.lance/_versions"))
    assert_writes_current("lancedb", to_json(report))
    # and by name on the command line
    assert main(["certify-writer", "--writer", "lancedb", "--store", "local", "--scenarios", "tags-lifecycle"]) == 0
    assert "CERTIFIED: lancedb (lancedb " in capsys.readouterr().out


@pytest.mark.s3
def test_lancedb_python_certified_on_a_few_scenarios_on_s3(s3_server: EmbeddedS3Server) -> None:
    _lancedb()
    report = certify_writer(make_writer("lancedb"), _scenarios(S3), stores=["s3"],
                            s3_options=s3_server.storage_options(), create_bucket=s3_server.create_bucket)
    runs = _runs(report)
    assert _completed_and_compared(runs["tags-lifecycle"]), render_text(report)
    assert _branch_refs_until_the_clone(runs["refs-across-branches"]), render_text(report)
    assert _xfails(runs["clone-after-branch"]) == [(6, "F-036")]
    assert _xfails(runs["delete-matching-nothing"]) == [(2, "F-022")]
    assert_writes_current("lancedb", to_json(report))


def test_lancedb_node_certified_on_a_few_scenarios_locally(tmp_path: Path) -> None:
    writer = make_writer(_node_command(), str(NODE_CAPS))
    assert writer.version().startswith("lancedb-node ")
    report = certify_writer(writer, _scenarios(LOCAL), stores=["local"], workdir=str(tmp_path))
    runs = _runs(report)
    for name in ("tags-lifecycle", "v1-manifest-names"):
        assert _completed_and_compared(runs[name]), render_text(report)
    assert _branch_refs_until_the_clone(runs["refs-across-branches"]), render_text(report)
    assert _xfails(runs["delete-matching-nothing"]) == [(2, "F-022")]
    assert _xfails(runs["branch-unusual-names"]) == [(7, "F-020")]
    assert runs["bases-round-robin"].steps[0].outcome == SKIP
    assert _fell_back_and_passed(runs["clone-of-clone"]), render_text(report)
    assert list(tmp_path.glob("run*/main/ds.lance/_versions"))
    assert_writes_current("lancedb-node", to_json(report))


@pytest.mark.s3
def test_lancedb_node_certified_on_a_few_scenarios_on_s3(s3_server: EmbeddedS3Server) -> None:
    writer = make_writer(_node_command(), str(NODE_CAPS))
    report = certify_writer(writer, _scenarios(S3), stores=["s3"], s3_options=s3_server.storage_options(),
                            create_bucket=s3_server.create_bucket)
    runs = _runs(report)
    assert _completed_and_compared(runs["tags-lifecycle"]), render_text(report)
    assert _branch_refs_until_the_clone(runs["refs-across-branches"]), render_text(report)
    assert _xfails(runs["delete-matching-nothing"]) == [(2, "F-022")]
    assert _xfails(runs["clone-after-branch"]) == [(6, "F-036")]
    assert_writes_current("lancedb-node", to_json(report))
