"""tools/mutation_check.py stays usable: every mutant patches exactly one site of the current reference (a
refactoring that moves a site fails here, not silently in the tool), the bugs the issue names are among
them, and (slow tier) one mutant run end to end is killed without touching the working tree."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from tool_kit import ROOT, load_tool

TOOL = load_tool("mutation_check")


def test_at_least_ten_mutants_with_unique_names() -> None:
    names = [m.name for m in TOOL.MUTANTS]
    assert len(names) >= 10 and len(set(names)) == len(names)
    assert {"round-robin-off-by-one", "root-base-without-data-dir", "cleanup-ignores-tags", "clone-drops-bases",
            "blob-inline-threshold-off-by-one"} <= set(names)


@pytest.mark.parametrize("mutant", TOOL.MUTANTS, ids=lambda m: m.name)
def test_each_mutant_patches_exactly_one_site_and_changes_it(mutant: Any) -> None:
    text = (ROOT / "reference" / mutant.file).read_text()
    assert text.count(mutant.old) == 1, f"{mutant.name}: the patch site is gone or ambiguous"
    assert mutant.old != mutant.new


def _tree_state() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.slow
@pytest.mark.interop
def test_one_mutant_is_killed_and_the_working_tree_is_untouched() -> None:
    before = _tree_state()
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "mutation_check.py"), "--only",
                           "blob-inline-threshold-off-by-one", "--jobs", "1"], cwd=ROOT, capture_output=True,
                          text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mutation score: 1/1 killed" in done.stdout
    assert _tree_state() == before
