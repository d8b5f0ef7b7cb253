"""Adding a writer is one module plus one capability file (tests/writers/toy_writer.py, toy_writer.toml): once
its module is imported, the toy is found by name in certify-writer, fixtures verify and the simulator, and
the steps that need a feature it declares it lacks are skipped, not failed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import toy_writer

from conformance.adapters import registry
from conformance.corpus.corpus import default_corpus, verify_corpus
from conformance.scenarios import builtin_scenarios
from conformance.scenarios.certify_writer import certify_writer, make_writer, render_text
from conformance.scenarios.runner import PASS, SKIP
from lancespec.cli import main
from simulator.simulate import RunConfig, simulate


def test_the_toy_is_registered_under_its_name_with_its_capability_file() -> None:
    toy = registry.get("toy")
    assert isinstance(toy, toy_writer.ToyImplementation)
    assert "toy" in registry.names() and registry.origin("toy") == "toy_writer"
    assert toy.capabilities.source.endswith("toy_writer.toml")
    assert set(toy.capabilities.unsupported) == {"relocate", "blobs", "max_rows_per_file", "refuses.invalid_ref_name"}


def test_the_toy_in_certify_writer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = certify_writer(make_writer("toy"), builtin_scenarios(), stores=["local"], workdir=str(tmp_path))
    assert report.exit_code == 0, render_text(report)
    runs = {r.scenario: r for r in report.runs}
    # A step that needs a missing feature is skipped with the rest of its scenario ...
    relocate = runs["relocate-copied-root"]
    assert [s.unsupported for s in relocate.steps if s.unsupported] == ["relocate"]
    assert not relocate.completed and relocate.steps[-1].outcome == SKIP
    assert {s.unsupported for s in runs["blobs-all-kinds"].steps if s.unsupported} == {"blobs"}
    assert {s.unsupported for s in runs["bases-round-robin"].steps if s.unsupported} == {"max_rows_per_file"}
    # ... a refusal step alone: the run goes on, is certified and matches the reference's.
    names = runs["tag-unusual-names"]
    assert {s.unsupported for s in names.steps if s.unsupported} == {"refuses.invalid_ref_name"}
    assert names.completed and names.compare is not None and names.compare.outcome == PASS
    assert 0 < report.applied < len(report.runs)
    assert runs["tags-lifecycle"].applied and runs["tags-lifecycle"].completed
    assert f"{report.applied} of {len(report.runs)} runs applied in full" in render_text(report)
    # and by name on the command line
    assert main(["certify-writer", "--writer", "toy", "--store", "local", "--scenarios", "tags-lifecycle"]) == 0
    assert "CERTIFIED: toy (toy 0.1)" in capsys.readouterr().out


def test_the_toy_in_fixtures_verify() -> None:
    report = verify_corpus(default_corpus(), "toy", only=["ref-tags", "ref-several-bases", "py-branches"])
    assert {r.case: r.outcome for r in report.results} == dict.fromkeys(["ref-tags", "ref-several-bases",
                                                                         "py-branches"], "pass")
    assert all(r.passed == r.targets > 0 for r in report.results)


@pytest.mark.s3
def test_the_toy_in_the_simulator() -> None:
    """Two toy writer processes (spawned: each imports toy_writer again, by the registry's origin)."""
    report = simulate(RunConfig(writers=2, ops=12, seed=4, writer="toy", faults="none", preflight_rounds=0,
                                time_limit_s=60.0))
    assert not report.writer_errors, report.writer_errors
    assert report.result.ok and report.result.commits > 3
    assert {e.type for e in report.history} >= {"invoke", "ok"}


@pytest.mark.parametrize("store", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_a_writer_whose_roots_end_in_a_suffix(tmp_path: Path, store: str, request: pytest.FixtureRequest) -> None:
    """``root_suffix = ".lance"`` (LanceDB keeps a table at ``{database}/{name}.lance``): every dataset root of a
    scenario is stored with the suffix, what lies under it moves with it, and expectations, certification and
    the comparison with the reference read the scenario's own locations."""
    from conformance.adapters.base import Capabilities
    from conformance.scenarios.stores import LocalRun

    toy = registry.get("toy")
    toy.capabilities = Capabilities("toy", root_suffix=".lance")  # every feature, roots named {name}.lance
    chosen = ["relocate-copied-root", "refs-across-branches", "clone-of-clone", "deep-clone"]
    options: dict[str, Any] = {}
    if store == "s3":
        server = request.getfixturevalue("s3_server")
        options = {"s3_options": server.storage_options(), "create_bucket": server.create_bucket}
    report = certify_writer(toy, [s for s in builtin_scenarios() if s.name in chosen], stores=[store],
                            workdir=str(tmp_path), compare=True, **options)
    assert report.exit_code == 0, render_text(report)
    assert all(r.compare is not None and r.compare.outcome == PASS for r in report.runs), render_text(report)
    if store == "local":
        roots = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.glob("run*/*/*.lance"))
        assert roots and all(p.split("/", 1)[0] in {r.name for r in tmp_path.iterdir()} for p in roots)
        assert any(p.endswith("main/ds.lance") for p in roots) and not list(tmp_path.glob("run1/main/ds/_versions"))
    run = LocalRun(tmp_path / "mapped")
    run.name_roots(["main:ds", "cold:c"], ".lance")
    assert run.locate("main:ds/tree/feat").endswith("/main/ds.lance/tree/feat")  # type: ignore[union-attr]
    assert run.locate("main:dsx").endswith("/main/dsx")  # type: ignore[union-attr]
    assert run.location_of(str(tmp_path / "mapped/cold/c.lance/data/x.lance")) == "cold:c/data/x.lance"
    assert run.location_of(str(tmp_path / "mapped/cold/c.lancer")) == "cold:c.lancer"
