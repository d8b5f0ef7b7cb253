"""tools/sim_mutation_check.py stays usable: at least twelve mutants, each patching exactly one site (two for
a bug of two parts) of the current reference into code that still compiles (a refactoring that moves a site
fails here, not silently in the tool), the bugs issue 16 names among them, and (slow tier) one mutant run end
to end is killed without touching the working tree."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from tool_kit import ROOT, load_tool

TOOL = load_tool("sim_mutation_check")


def test_at_least_twelve_mutants_with_unique_names_covering_the_named_bugs() -> None:
    names = [m.name for m in TOOL.MUTANTS]
    assert len(names) >= 12 and len(set(names)) == len(names)
    assert {"unconditional-put", "no-conflict-check", "retry-keeps-version", "unknown-outcome-retried",
            "delete-stale-read-version", "cleanup-young-unverified", "cleanup-ignores-tags", "tag-by-plain-put",
            "latest-from-hint"} <= set(names)


@pytest.mark.parametrize("mutant", TOOL.MUTANTS, ids=lambda m: m.name)
def test_each_mutant_patches_exactly_one_site_into_code_that_compiles(mutant: Any) -> None:
    path = ROOT / "reference" / mutant.file
    text = path.read_text()
    for patch in mutant.patches():  # a bug of two parts patches two sites, each exactly once
        assert text.count(patch.old) == 1, f"{mutant.name}: the patch site {patch.old!r} is gone or ambiguous"
        assert patch.old != patch.new
        text = text.replace(patch.old, patch.new)
    compile(text, str(path), "exec")


def _tree_state() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.slow
@pytest.mark.s3
def test_one_mutant_is_killed_and_the_working_tree_is_untouched() -> None:
    before = _tree_state()
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "sim_mutation_check.py"), "--only",
                           "lost-race-taken-as-won", "--jobs", "1"], cwd=ROOT, capture_output=True,
                          text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "simulator mutation score: 1/1 killed" in done.stdout
    assert _tree_state() == before


def test_the_rate_table_gives_each_mutant_its_kill_rate_time_and_killing_runs() -> None:
    from collections import Counter

    verdicts = [TOOL.Verdict("a-mutant", "killed", "", 612.4, 9, 10, Counter({"default": 7, "none/contended": 2})),
                TOOL.Verdict("another", "survived", "", 80.0, 0, 10)]
    lines = TOOL.rate_table(verdicts).splitlines()
    assert lines[2].split() == ["a-mutant", "9/10", "612", "default", "7,", "none/contended", "2"]
    assert lines[3].split() == ["another", "0/10", "80", "-"]


def test_the_battery_has_a_deterministic_run_and_every_run_names_its_mix_and_writers() -> None:
    assert [step.deterministic for step in TOOL.BATTERY] == [False, False, False, True, False]
    assert TOOL.BATTERY[3].label(4) == "faults=default seed=4 mix=broad deterministic"
    assert TOOL.BATTERY[4].label(5) == "faults=none seed=5 mix=staged writers=3"
    assert TOOL.BATTERY[0].label(1) == "faults=default seed=1"


def test_runs_picks_a_part_of_the_battery_and_refuses_positions_it_lacks(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("0", "6", "1,x"):
        with pytest.raises(SystemExit) as stopped:
            TOOL.main(["--runs", bad, "--only", "no-conflict-check"])
        assert stopped.value.code == 2
        assert "--runs takes positions 1-5" in capsys.readouterr().err
