"""Certify --all-versions every dataset shape pylance 14.0.2 writes and compare the MUST findings with
the expected failures (tests/conformance/expected_failures.toml): the (shape, requirement) pairs found
must be exactly the listed ones, so a listed failure that stops failing breaks the test, and so does a
new one. A new pair is either a false positive of a check (fix the check) or a real divergence of
pylance from the seeds (list it, with a reason and its spec/findings.md entry).

The divergence shapes (``DIVERGENCE_SHAPES``) are pylance datasets built to show a recorded finding; their
expected failures must keep failing.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from conformance_kit import certify_both_ways

from conformance.catalogue import load_catalogue
from conformance.findings import Finding
from conformance.shapes import DIVERGENCE_SHAPES, SHAPES

ALL_SHAPES = {**SHAPES, **DIVERGENCE_SHAPES}

pytestmark = pytest.mark.interop

AREAS = None  # every area

HERE = Path(__file__).resolve().parent
EXPECTED_FILE = HERE / "expected_failures.toml"
FINDINGS_FILE = HERE.parents[1] / "spec" / "findings.md"


def expected_entries() -> list[dict[str, str]]:
    entries: list[dict[str, str]] = tomllib.loads(EXPECTED_FILE.read_text()).get("expected", [])
    return entries


def expected_pairs(shape: str) -> set[tuple[str, str]]:
    return {(e["shape"], e["requirement"]) for e in expected_entries() if e["shape"] == shape}


def test_expected_failures_are_well_formed() -> None:
    catalogue = load_catalogue()
    known_findings = set(re.findall(r"^## (F-\d{3}):", FINDINGS_FILE.read_text(), flags=re.MULTILINE))
    problems = []
    seen: set[tuple[str, str]] = set()
    for entry in expected_entries():
        label = f"{entry.get('shape')}/{entry.get('requirement')}"
        if set(entry) != {"shape", "requirement", "reason", "finding"}:
            problems.append(f"{label}: keys are {sorted(entry)}, expected shape, requirement, reason, finding")
            continue
        if entry["shape"] not in ALL_SHAPES:
            problems.append(f"{label}: no such shape")
        requirement = catalogue.get(entry["requirement"])
        if requirement is None or requirement.severity != "MUST":
            problems.append(f"{label}: not a MUST requirement of the catalogue")
        if not entry["reason"].strip():
            problems.append(f"{label}: no reason")
        if entry["finding"] != "new" and entry["finding"] not in known_findings:
            problems.append(f"{label}: finding {entry['finding']} is not in spec/findings.md")
        if (entry["shape"], entry["requirement"]) in seen:
            problems.append(f"{label}: listed twice")
        seen.add((entry["shape"], entry["requirement"]))
    assert problems == []


@pytest.mark.parametrize("name", sorted(ALL_SHAPES))
def test_must_findings_are_the_expected_ones(name: str, tmp_path: Path) -> None:
    shape = ALL_SHAPES[name](tmp_path / name)
    report = certify_both_ways(shape.uri, all_versions=True, areas=AREAS)
    found: dict[tuple[str, str], list[Finding]] = {}
    for finding in report.must_findings:
        found.setdefault((name, finding.requirement), []).append(finding)
    expected = expected_pairs(name)
    known = {(e["shape"], e["requirement"]): e["finding"] for e in expected_entries()}
    for pair in set(found) & expected:  # certify names the finding each expected failure is (divergences.toml)
        assert {f.known for f in found[pair]} == {known[pair]}, pair
    unexpected = {pair: found[pair][:3] for pair in sorted(set(found) - expected)}
    assert unexpected == {}, "new MUST findings (fix the check, or list a real pylance divergence)"
    assert sorted(expected - set(found)) == [], "listed failures that no longer fail: remove them"
    assert report.readable
