"""The requirement catalogue is well formed, its README is current, and checks and requirements cover each
other: every MUST names at least one check or test, every named check exists and declares that
requirement, every check's requirements exist, every named test file exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from lancespec.conformance.catalogue import (
    CatalogueError,
    load_catalogue,
    parse_catalogue,
    readme_path,
    render_markdown,
)
from lancespec.conformance.checks import all_checks

ROOT = Path(__file__).resolve().parents[2]


def test_readme_is_generated_from_the_catalogue() -> None:
    assert readme_path().read_text() == render_markdown(load_catalogue()), (
        "spec/README.md is stale: run python -m lancespec.conformance.catalogue --write"
    )


def test_every_must_is_covered() -> None:
    uncovered = [r.id for r in load_catalogue().values() if r.severity == "MUST" and not (r.checks or r.tests)]
    assert uncovered == []


def test_named_checks_exist_and_declare_the_requirement() -> None:
    checks = all_checks()
    problems = []
    for req in load_catalogue().values():
        for name in req.checks:
            if name not in checks:
                problems.append(f"{req.id} names check {name}, which does not exist")
            elif req.id not in checks[name].requirements:
                problems.append(f"{req.id} names check {name}, which does not declare it")
    assert problems == []


def test_every_check_names_existing_requirements_that_name_it() -> None:
    catalogue = load_catalogue()
    problems = []
    for check in all_checks().values():
        for rid in check.requirements:
            if rid not in catalogue:
                problems.append(f"{check.name} declares unknown requirement {rid}")
            elif check.name not in catalogue[rid].checks:
                problems.append(f"{check.name} declares {rid}, whose catalogue entry does not list it")
    assert problems == []


def test_named_tests_exist() -> None:
    missing = [t for r in load_catalogue().values() for t in r.tests if not (ROOT / t.split("::")[0]).exists()]
    assert missing == []


_VALID = (
    '[[requirement]]\nid = "A-001"\nseverity = "MUST"\nrule = "r"\n'
    'source = {document = "implicit", section = "s"}\n'
)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[[requirement]]\nid = "bad"\n', "AREA-NNN"),
        ('[[requirement]]\nid = "A-001"\nseverity = "MAY"\n', "severity"),
        ('[[requirement]]\nid = "A-001"\nseverity = "MUST"\nrule = "r"\nsource = {document = "x", section = "s"}\n',
         "source"),
        (_VALID * 2, "twice"),
    ],
)
def test_malformed_catalogues_are_refused(text: str, problem: str) -> None:
    with pytest.raises(CatalogueError, match=problem):
        parse_catalogue(text)
