"""The store-answer fuzzer (``python -m lancespec.fuzz --answers``, lancespec/fuzz_answers.py,
docs/security.md): the world on the embedded S3 server, certify reading it through the proxy that damages
answers. A bounded run in the default suite, many cases in the ``slow`` tier (``LANCESPEC_FUZZ_CASES``), and
proof that each rule of a case can fail: a hang, a followed redirect (a defect of object_store, expected
here until it is fixed) and damage that reaches the verdict."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lancespec.fuzz_answers import KINDS, LISTING_KINDS, AnswerRig, case_plan, fuzz_answers

pytest.importorskip("moto", reason="the embedded S3 server needs moto (pip install 'lancespec[s3]')")

#: Every kind but ``redirect``: object_store follows redirects (docs/security.md, "What a hostile store can
#: still do"), so a case that draws it fails; test_a_followed_redirect_is_caught expects that.
FIXED_KINDS = sorted(set(KINDS) - {"redirect"})


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnswerRig]:
    with AnswerRig(tmp_path_factory.mktemp("answers")) as made:
        yield made


def test_a_bounded_answers_run_finds_nothing(tmp_path: Path) -> None:
    result = fuzz_answers(24, seed=0, workdir=tmp_path, kinds=FIXED_KINDS)
    assert result.cases == 24
    assert result.failures == {}, result.failures
    assert sum(result.damage.values()) > 0, "no answer was damaged"
    assert len(result.exit_codes) > 1, result.exit_codes  # the damage changes verdicts


def test_an_undamaged_case_is_conformant_and_a_case_replays(rig: AnswerRig) -> None:
    """Through the proxy with no damage the world is CONFORMANT (the premise of every verdict); a seed meets
    the same damage and ends the same way each time it runs."""
    clean = rig.run_case(1, rate=0.0)
    assert (clean.damaged, clean.codes, clean.problem) == ((), (0, 0), None)
    seed = next(s for s in range(100) if case_plan(s)[0] >= 0.25)
    first, again = rig.run_case(seed), rig.run_case(seed)
    assert first.damaged and first.problem is None, first
    assert (again.damaged, again.codes) == (first.damaged, first.codes)


def test_answers_that_keep_their_bytes_are_conformant(rig: AnswerRig) -> None:
    record = rig.run_case(3, kinds=["slow"], rate=0.3)
    assert record.damaged and all(d.startswith("slow: ") for d in record.damaged), record
    assert record.codes == (0, 0) and record.problem is None, record


def test_damage_reaches_the_verdict(rig: AnswerRig) -> None:
    """Every object answered with another object's body: certify is not CONFORMANT (the bytes it relies on
    changed), and the case passes (no crash, the same verdict twice)."""
    record = rig.run_case(4, kinds=["other-body"], rate=1.0)
    assert len(record.damaged) > 5 and record.codes[0] in (1, 2) and record.problem is None, record


def test_a_hang_is_caught(rig: AnswerRig) -> None:
    """Every answer sent slowly takes the run past a case time of 1 s: the case fails as a hang."""
    rig.case_seconds = 1
    try:
        record = rig.run_case(5, kinds=["slow"], rate=1.0)
    finally:
        rig.case_seconds = 30
    assert record.problem is not None and "ran over 1 s" in record.problem, record


def test_a_followed_redirect_is_caught(rig: AnswerRig) -> None:
    """A known defect, recorded in docs/security.md: object_store (reqwest's default policy) follows a 3xx
    answer's Location, so a store can send lancespec's reads elsewhere. The fuzzer sees the request for the
    place it names; when the defect is fixed this test fails and is turned around."""
    record = rig.run_case(6, kinds=["redirect"], rate=1.0)
    assert record.problem is not None and record.problem.startswith("followed a redirect"), record


def test_a_listing_of_keys_outside_its_prefix_is_not_followed(rig: AnswerRig) -> None:
    """Found by the first run (seed 1018): a branch's ``_versions/`` listing answered with
    ``world-other/ds/_versions/1.manifest`` made certify read that key as the branch's manifest. A listing
    holding a key outside the prefix asked is now refused; every listing damaged so here."""
    record = rig.run_case(7, kinds=["keys-outside"], rate=1.0)
    assert record.damaged and record.problem is None and record.codes[0] != 0, record


@pytest.mark.parametrize("kind", sorted(LISTING_KINDS))
def test_each_listing_damage_ends_in_time(rig: AnswerRig, kind: str) -> None:
    record = rig.run_case(8, kinds=[kind], rate=1.0)
    assert record.damaged and record.problem is None and record.codes[0] != 0, record


def test_the_command_line_runs_and_names_the_kinds(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "lancespec.fuzz", "--answers", "--cases", "2", "--seed", "9",
                           "--answer-kinds", "slow,truncated", "--workdir", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 cases in" in done.stdout and "; 0 failed;" in done.stdout, done.stdout
    assert "damage done (cases; of them CONFORMANT): slow" in done.stdout, done.stdout
    wrong = subprocess.run([sys.executable, "-m", "lancespec.fuzz", "--answers", "--answer-kinds", "bogus"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "bogus" in wrong.stderr, wrong.stderr


@pytest.mark.slow
def test_many_answer_cases_find_nothing(tmp_path: Path) -> None:
    cases = int(os.environ.get("LANCESPEC_FUZZ_CASES", "2000"))
    seed = int(os.environ.get("LANCESPEC_FUZZ_SEED", "0"))
    result = fuzz_answers(cases, seed=seed, workdir=tmp_path, kinds=FIXED_KINDS)
    assert result.failures == {}, result.summary()
