"""One command-line grammar: ``--format``/``--output``/``--quiet`` on the commands that report, old spellings
kept with a one-line deprecation note, ``lancespec --version``, one list of ``--only`` areas (the registered
checks'), exit statuses in every command's help, and the small things a person would expect to be told.
The expected words come from the docs (README.md, docs/reports.md), the areas from the check registry."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conformance.checks import all_checks
from conformance.corpus.portable import materialize
from lancespec.cli import build_parser, main
from lancespec.render.certify_page import areas_of, certify_page
from reference import __version__

ROOT = Path(__file__).resolve().parents[2]
def _materialized() -> str:
    """The corpus case py-branches (branches of branches, findings of MAN-013 at SHOULD), its portable base
    paths rewritten into a temporary copy (docs/fixtures.md), made once per module."""
    target = Path(tempfile.mkdtemp(prefix="lancespec-grammar-"))
    return str(materialize(ROOT / "fixtures" / "cases" / "py-branches" / "data", target) / "ds")


DATASET = _materialized()


def _leaf_parsers(parser: argparse.ArgumentParser, name: str = "lancespec") -> dict[str, argparse.ArgumentParser]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {name: parser}
    out: dict[str, argparse.ArgumentParser] = {}
    for action in subs:
        for child_name, child in action.choices.items():
            out.update(_leaf_parsers(child, f"{name} {child_name}"))
    return out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out == f"lancespec {__version__}\n"


def test_every_command_takes_quiet_and_states_its_exit_statuses() -> None:
    leaves = _leaf_parsers(build_parser())
    assert {"lancespec certify", "lancespec simulate", "lancespec fixtures verify", "lancespec check-scenarios",
            "lancespec certify-store", "lancespec inspect", "lancespec spark-certify"} <= set(leaves)
    for name, parser in leaves.items():
        assert any("--quiet" in a.option_strings for a in parser._actions), name
        description = parser.description or ""
        # what Ctrl-C gives is said too: 130 interrupted, or for serve, which Ctrl-C stops, exit 0
        stops = "130 interrupted" in description or (name == "lancespec serve" and "Exit 0 stopped by Ctrl-C"
                                                     in description)
        assert "Exit 0" in description and stops, name


def test_commands_that_report_take_format_and_output() -> None:
    leaves = _leaf_parsers(build_parser())
    for name in ("certify", "spark-certify", "certify-writer", "simulate", "certify-store", "inspect",
                 "fixtures verify"):
        options = {o for a in leaves[f"lancespec {name}"]._actions for o in a.option_strings}
        assert {"--format", "--output"} <= options, name


def test_spark_certify_takes_certify_options() -> None:
    leaves = _leaf_parsers(build_parser())

    def options(name: str) -> set[str]:
        return {o for a in leaves[name]._actions for o in a.option_strings}

    assert options("lancespec certify") <= options("lancespec spark-certify")
    spark_format = next(a for a in leaves["lancespec spark-certify"]._actions if "--format" in a.option_strings)
    assert "html" in (spark_format.choices or ())


def test_one_list_of_areas(capsys: pytest.CaptureFixture[str]) -> None:
    areas = sorted({c.area for c in all_checks().values()})
    helped = " ".join(build_parser()._subparsers._group_actions[0].choices["certify"].format_help().split())
    assert f"run only this area's checks: {', '.join(areas)}; repeat" in helped
    for command in ("certify", "spark-certify"):
        with pytest.raises(SystemExit) as info:
            main([command, DATASET, "--only", "nowhere"])
        err = capsys.readouterr().err
        assert info.value.code == 2 and len(err.splitlines()) == 1
        assert ", ".join(repr(a) for a in areas) in err
    report = json.loads(_certify_json(capsys))
    page = certify_page(report, None, "no lineage here")
    assert re.findall(r'data-facet="area" value="([^"]+)"', page) == areas
    tagged = re.findall(r'<section class="requirement" id="req-([^"]+)" data-filter="([^"]+)"', page)
    assert tagged and all({p.split(":", 1)[1] for p in tags.split() if p.startswith("area:")}
                          == set(areas_of(rid)) for rid, tags in tagged)


def _certify_json(capsys: pytest.CaptureFixture[str]) -> str:
    main(["certify", DATASET, "--all-versions", "--format", "json"])
    return capsys.readouterr().out


def test_check_scenarios_without_files_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["check-scenarios"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.splitlines()) == 1 and "FILE" in err


def test_quiet_prints_the_verdict_line_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", DATASET]) in (0, 1)
    full = capsys.readouterr().out
    assert len(full.splitlines()) > 1
    out = tmp_path / "r.json"
    code = main(["certify", DATASET, "--quiet", "--format", "json", "--output", str(out)])
    printed = capsys.readouterr()
    assert printed.out == full.splitlines()[0] + "\n" and printed.err == ""
    assert json.loads(out.read_text())["exit_code"] == code
    with pytest.raises(SystemExit) as info:
        main(["certify", DATASET, "--quiet", "--format", "json"])  # where would the report go?
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.splitlines()) == 1 and "--output" in err


def test_certify_writer_quiet_is_its_verdict_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify-writer", "--writer", "reference", "--store", "local", "--scenarios", "tags-lifecycle",
                 "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines() == ["CERTIFIED: reference (lancespec " + __version__
                                                    + "): its one run applied every step"]


def test_an_old_spelling_works_and_says_the_new_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", DATASET, "--format", "json"]) == 0
    new = capsys.readouterr()
    assert main(["inspect", DATASET, "--json"]) == 0
    old = capsys.readouterr()
    assert old.out == new.out and json.loads(old.out)["uri"]
    assert old.err == "lancespec inspect: warning: --json is deprecated; use --format json\n"


def test_inspect_graph_says_what_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "lineage.dot"
    assert main(["inspect", DATASET, "--graph", str(graph)]) == 0
    err = capsys.readouterr().err
    assert graph.read_text().startswith("digraph") and err == f"lancespec: wrote the lineage diagram to {graph}\n"


def test_spark_certify_reads_its_input_before_starting_spark(tmp_path: Path) -> None:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "lancespec", "spark-certify", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "does not exist" in done.stderr
    assert "Spark" not in done.stderr and "log4j" not in done.stderr
    assert time.monotonic() - started < 20  # Spark's start alone takes longer


@pytest.mark.s3
def test_simulate_speaks_the_same_grammar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = ["simulate", "--writers", "2", "--ops", "12", "--seed", "4", "--datasets", "1", "--preflight-rounds", "0",
           "--faults", "none"]
    report = tmp_path / "sim.json"
    assert main([*run, "--quiet", "--format", "json", "--output", str(report)]) == 0
    printed = capsys.readouterr()
    assert printed.err == "" and len(printed.out.splitlines()) == 1
    assert printed.out.startswith("NO ANOMALIES: 0 anomalies, 0 writer errors (seed 4; honest: ")
    assert json.loads(report.read_text())["format"] == "lancespec.simulate/2"
    page = tmp_path / "sim.html"
    assert main(["simulate", "--from-report", str(report), "--html", str(page)]) == 0  # the former spelling
    err = capsys.readouterr().err
    assert err == "lancespec simulate: warning: --html is deprecated; use --format html --output FILE\n"
    assert page.read_text().startswith("<!DOCTYPE html>")
