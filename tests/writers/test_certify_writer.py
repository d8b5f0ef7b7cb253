"""certify-writer with the reference (the oracle) and pylance (with its listed divergences): every scenario on
the local disk and on the loopback S3 server, so that no writer x scenario x store the command runs fails
unseen (on S3 without the comparison with the reference's run: the summaries compared are store-independent,
and the comparison is made locally; the ``slow`` matrix compares on both), reports in text, JSON and JUnit,
and the command line."""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from compat_kit import assert_writes_current

from conformance.adapters import registry
from conformance.adapters.base import Capabilities
from conformance.scenarios import builtin_scenarios, load_scenario
from conformance.scenarios.certify_writer import (
    WriterReport,
    certify_writer,
    make_writer,
    render_json,
    render_junit,
    render_text,
    to_json,
)
from conformance.scenarios.runner import FAIL, PASS, SKIP, XFAIL, XPASS
from lancespec.cli import main
from reference.errors import InvalidOption
from simulator.s3 import EmbeddedS3Server, S3ServerError

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = (ROOT / "spec" / "findings.md").read_text(encoding="utf-8")

S3_SCENARIOS = [s for s in builtin_scenarios() if "s3" in s.stores]


def _problems(report: WriterReport) -> str:
    return render_text(report)


def test_reference_is_certified_on_every_scenario_locally(tmp_path: Path) -> None:
    report = certify_writer(make_writer("reference"), builtin_scenarios(), stores=["local"], workdir=str(tmp_path))
    assert report.exit_code == 0, _problems(report)
    counts = report.counts()
    assert counts[FAIL] == counts[XFAIL] == counts[XPASS] == counts[SKIP] == 0
    assert all(r.completed and r.certify and r.certify.outcome == PASS for r in report.runs)
    assert_writes_current("reference", to_json(report))


@pytest.mark.s3
def test_reference_is_certified_on_s3_across_buckets(s3_server: EmbeddedS3Server) -> None:
    report = certify_writer(make_writer("reference"), S3_SCENARIOS, stores=["s3"],
                            s3_options=s3_server.storage_options(), create_bucket=s3_server.create_bucket)
    assert report.exit_code == 0, _problems(report)
    assert len(report.runs) == len(S3_SCENARIOS) >= 45
    assert all(r.completed and r.certify and r.certify.outcome == PASS for r in report.runs)
    assert_writes_current("reference", to_json(report))


@pytest.mark.interop
def test_pylance_is_certified_locally_with_its_listed_divergences(tmp_path: Path) -> None:
    report = certify_writer(make_writer("pylance"), builtin_scenarios(), stores=["local"], workdir=str(tmp_path))
    assert report.exit_code == 0, _problems(report)
    xfails = [r for run in report.runs for r in run.results if r.outcome == XFAIL]
    assert {r.finding for r in xfails} >= {"F-006", "F-011", "F-012", "F-019", "F-020", "F-021", "F-022",
                                           "F-023", "F-024"}
    # Completed scenarios are compared with the reference's run and match it.
    compared = [run for run in report.runs if run.compare is not None and run.compare.outcome == PASS]
    assert len(compared) >= 20
    assert_writes_current("pylance-14", to_json(report))


@pytest.mark.interop
@pytest.mark.s3
def test_pylance_on_s3_every_scenario(s3_server: EmbeddedS3Server) -> None:
    """The README's ``certify-writer --writer pylance`` on its S3 half."""
    report = certify_writer(make_writer("pylance"), S3_SCENARIOS, stores=["s3"], compare=False,
                            s3_options=s3_server.storage_options(), create_bucket=s3_server.create_bucket)
    assert report.exit_code == 0, _problems(report)
    by_name = {r.scenario: r for r in report.runs}
    assert len(by_name) == len(S3_SCENARIOS)
    assert by_name["clone-within-one-bucket"].completed
    assert any(r.finding == "F-025" and r.outcome == XFAIL for r in by_name["clone-after-tag"].results)
    assert any(r.finding == "F-030" and r.outcome == XFAIL
               for r in by_name["machine-deep-clone-file-uri-root-base"].results)
    assert_writes_current("pylance-14", to_json(report))


def test_every_listed_divergence_names_a_recorded_finding_and_a_real_step() -> None:
    scenarios = {s.name: s for s in builtin_scenarios()}
    for caps in (registry.get("pylance").capabilities, registry.get("reference").capabilities,
                 Capabilities.load(ROOT / "examples" / "external_writer.capabilities.toml")):
        for d in caps.divergences:
            assert f"## {d.finding}:" in FINDINGS, d
            matching = [s for name, s in scenarios.items() if re.fullmatch(d.scenario.replace("*", ".*"), name)]
            assert matching, d
            for s in matching:
                assert d.step in (0, -1) or any(st.index == d.step for st in s.steps), d
    assert not registry.get("reference").capabilities.divergences


def test_a_divergence_that_stops_diverging_is_a_failure(tmp_path: Path) -> None:
    caps = tomllib.loads('writer = "reference"\n[[divergence]]\nscenario = "tags-lifecycle"\nstep = 4\n'
                        'finding = "F-000"\nreason = "pretend"\n')
    writer = make_writer("reference")
    writer.capabilities = Capabilities.parse(caps, "test.toml")  # type: ignore[misc]
    report = certify_writer(writer, builtin_scenarios("tags-lifecycle"), stores=["local"], workdir=str(tmp_path))
    assert report.exit_code == 1
    assert any(r.outcome == XPASS for r in report.runs[0].results)


def test_reports_json_and_junit(tmp_path: Path) -> None:
    report = certify_writer(make_writer("reference"), builtin_scenarios("tag*"), stores=["local"],
                            workdir=str(tmp_path))
    doc = json.loads(render_json(report))
    assert doc["format"] == "lancespec.certify-writer/1" and doc["certified"] is True
    assert {r["scenario"] for r in doc["runs"]} == {"tag-unusual-names", "tags-lifecycle"}
    suite = ET.fromstring(render_junit(report))
    assert suite.get("tests") == "2" and suite.get("failures") == "0"
    assert "CERTIFIED: reference" in render_text(report)


def test_cli_certify_writer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "w.xml"
    code = main(["certify-writer", "--writer", "reference", "--store", "local", "--scenarios", "clone-of-clone",
                 "--scenarios", str(ROOT / "conformance" / "scenarios" / "data" / "tags-lifecycle.json"),
                 "--format", "junit", "--output", str(out)])
    assert code == 0
    assert ET.parse(out).getroot().get("tests") == "2"
    assert "CERTIFIED" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["certify-writer", "--writer", "nonsense", "--store", "local"])
    assert info.value.code == 2


@pytest.mark.slow
@pytest.mark.interop
@pytest.mark.s3
@pytest.mark.parametrize("writer", ["reference", "pylance", "external"])
def test_full_matrix(writer: str, s3_server: EmbeddedS3Server, tmp_path: Path) -> None:
    """Every scenario on both stores for every writer (minutes; run with -m slow)."""
    if writer == "external":
        w = make_writer(f"cmd:python {ROOT / 'examples' / 'external_writer.py'}",
                        str(ROOT / "examples" / "external_writer.capabilities.toml"))
    else:
        w = make_writer(writer)
    report = certify_writer(w, builtin_scenarios(), stores=["local", "s3"], workdir=str(tmp_path),
                            s3_options=s3_server.storage_options(), create_bucket=s3_server.create_bucket)
    assert report.exit_code == 0, _problems(report)


def test_divergences_can_be_limited_to_stores_and_writer_versions() -> None:
    caps = Capabilities.parse(tomllib.loads(
        'writer = "w"\n[[divergence]]\nscenario = "x-*"\nstep = 2\nfinding = "F-1"\nreason = "r"\n'
        'stores = ["s3"]\nversions = ["13.*"]\n'), "t.toml")
    assert caps.divergence("x-a", 2, "s3") is None  # no version set: a versioned entry does not apply
    versioned = Capabilities(caps.writer, divergences=caps.divergences, version="13.0.0")
    assert versioned.divergence("x-a", 2, "s3") is not None
    assert versioned.divergence("x-a", 2, "local") is None
    assert versioned.divergence("y", 2, "s3") is None
    assert Capabilities(caps.writer, divergences=caps.divergences, version="14.0.2").divergence("x-a", 2, "s3") is None


def test_a_result_that_cannot_be_read_is_a_failed_step_not_a_crash(tmp_path: Path) -> None:
    """pylance's cleanup deletes a file a child branch still reads (F-031): the step that reads the child fails
    with "cannot read the result", and the run goes on to its report."""
    scenario = load_scenario(ROOT / "tests" / "properties" / "regressions" /
                             "machine-cleanup-keeps-child-branch-files.json")
    report = certify_writer(make_writer("pylance"), [scenario], stores=["local"], workdir=str(tmp_path))
    (run,) = report.runs
    failed = [r for r in run.results if r.outcome == FAIL]
    assert failed and "cannot read the result" in failed[0].detail and "/tree/f1/data/" in failed[0].detail
    assert report.exit_code == 1


def test_clone_from_branch_and_root_suffix_in_a_capability_file() -> None:
    """A clone named by (branch, version) needs ``clone_from_branch`` (LanceDB's clone API names no branch); one
    from a tag or a main version does not. ``root_suffix`` is a name ending, never a path."""
    from conformance import operations as lang
    from conformance.adapters.base import needs

    assert "clone_from_branch" in needs(lang.ShallowClone("main:ds", None, "cold:c", branch="feat", version=2))
    assert "clone_from_branch" not in needs(lang.ShallowClone("main:ds", "t1", "cold:c"))
    assert "clone_from_branch" not in needs(lang.DeepClone("main:ds", None, 1, "cold:c"))
    assert Capabilities.parse({"writer": "w", "root_suffix": ".lance"}).root_suffix == ".lance"
    for bad in ("a/b.lance", "..", 3):
        with pytest.raises(ValueError, match="root_suffix"):
            Capabilities.parse({"writer": "w", "root_suffix": bad})


@pytest.mark.s3
def test_an_s3_run_starts_the_server_it_is_given_on_first_need(tmp_path: Path) -> None:
    """``start_s3`` (what the command line passes: the simulator's server; the judge does not import it) is
    started once, for the first S3 run only, and stopped at the end; with neither it nor options an S3 run is
    refused before any step."""
    started: list[EmbeddedS3Server] = []

    def start() -> EmbeddedS3Server:
        started.append(EmbeddedS3Server().start())
        return started[-1]

    scenarios = [s for s in S3_SCENARIOS if s.name.startswith("tag")][:2]
    assert len(scenarios) == 2
    report = certify_writer(make_writer("reference"), scenarios, stores=["local", "s3"], workdir=str(tmp_path),
                            start_s3=start)
    assert report.exit_code == 0, _problems(report)
    assert len(started) == 1 and {r.store for r in report.runs} == {"local", "s3"}
    with pytest.raises(S3ServerError, match="not running"):
        _ = started[0].endpoint  # stopped with the run
    with pytest.raises(InvalidOption, match="start_s3"):
        certify_writer(make_writer("reference"), scenarios, stores=["s3"], workdir=str(tmp_path / "none"))
