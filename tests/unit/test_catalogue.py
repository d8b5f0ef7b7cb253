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
from lancespec.conformance.traceability import MatrixError, check_matrix, load_matrix, parse_matrix

ROOT = Path(__file__).resolve().parents[2]


def test_readme_is_generated_from_the_catalogue() -> None:
    assert readme_path().read_text() == render_markdown(load_catalogue(), load_matrix()), (
        "spec/README.md is stale: run python -m lancespec.cli.catalogue --write"
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


# --- the traceability matrix (spec/traceability.toml) ---------------------------------------------------


def test_matrix_and_catalogue_agree() -> None:
    """Every statement has one disposition, names only existing requirements, and each requirement cites
    exactly the statements naming it (check_matrix raises otherwise)."""
    check_matrix(load_matrix(), load_catalogue())


def test_matrix_covers_at_least_nine_in_ten_adoptable_statements() -> None:
    matrix = load_matrix()
    counts = matrix.counts()
    assert counts["statements"] >= 120
    assert matrix.covered_share() >= 0.9, counts


def test_every_sourced_requirement_cites_a_statement_of_its_document() -> None:
    matrix, problems = load_matrix(), []
    titles = {"multi-base": "MB", "storage-layout": "SL", "table-format": "TF", "clones": "CP", "blob-v2": "BV"}
    for req in load_catalogue().values():
        if req.document == "implicit":
            continue
        if not any(s.startswith(titles[req.document] + "-") for s in req.statements):
            problems.append(f"{req.id} ({req.document}) cites {req.statements}")
        problems += [f"{req.id} cites unknown {s}" for s in req.statements if s not in matrix.statements]
    assert problems == []


def test_matrix_text_never_names_seed_files() -> None:
    text = (ROOT / "spec" / "traceability.toml").read_text() + (ROOT / "spec" / "requirements.toml").read_text()
    assert ".txt" not in text and "seed 00" not in text


_STATEMENT = '[documents]\nTF = "t"\n[[statement]]\nid = "TF-001"\nsection = "s"\nsays = "x"\n'


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (_STATEMENT, "exactly one disposition"),
        (_STATEMENT + 'covered = ["A-001"]\nnot_adopted = "guidance"\nwhy = "w"\n', "exactly one disposition"),
        (_STATEMENT + 'not_adopted = "boring"\nwhy = "w"\n', "reason"),
        (_STATEMENT + 'not_adopted = "guidance"\n', "says why"),
        (_STATEMENT + 'partly = ["A-001"]\n', "gap"),
        (_STATEMENT + 'same_as = "TF-009"\n', "same_as"),
        (_STATEMENT.replace("TF-001", "XX-001") + 'covered = ["A-001"]\n', "XX-NNN"),
    ],
)
def test_malformed_matrices_are_refused(text: str, problem: str) -> None:
    with pytest.raises(MatrixError, match=problem):
        parse_matrix(text)


def test_a_statement_naming_a_missing_requirement_is_refused() -> None:
    matrix = parse_matrix(_STATEMENT + 'covered = ["NOPE-001"]\n')
    with pytest.raises(MatrixError, match="NOPE-001, which does not exist"):
        check_matrix(matrix, load_catalogue())


def test_a_requirement_citing_a_statement_that_does_not_name_it_is_refused() -> None:
    catalogue = parse_catalogue(_VALID.replace('document = "implicit"', 'document = "table-format"')
                                + 'statements = ["TF-001"]\n')
    with pytest.raises(MatrixError, match="A-001 cites statements"):
        check_matrix(parse_matrix(_STATEMENT + 'not_adopted = "guidance"\nwhy = "w"\n'), catalogue)
