"""Each breach of breach_kit_checks.py, certified: exit 1 (a MUST breached), the breach's requirement at
MUST, and no other MUST; certified both through the I/O plan and lazily (``certify_findings``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from breach_kit_checks import BREACHES, stable_row_ids
from conformance_kit import assert_clean, assert_only, certify_findings

from lancespec.cli.main import main


@pytest.mark.parametrize("name", sorted(BREACHES))
def test_breach_is_reported_as_its_requirement(tmp_path: Path, name: str) -> None:
    breach = BREACHES[name](tmp_path)
    found = assert_only(certify_findings(breach.uri), breach.requirement)
    assert all(f.severity == "MUST" for f in found)


@pytest.mark.parametrize("name", sorted(BREACHES))
def test_breach_fails_certify(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    breach = BREACHES[name](tmp_path)
    assert main(["certify", breach.uri, "--all-versions"]) == 1
    assert breach.requirement in capsys.readouterr().out


def test_a_valid_external_row_id_sequence_is_judged_like_an_inline_one(tmp_path: Path) -> None:
    """The same sequence, moved from inline to a range of an external file: no ROW-001, no MUST."""
    findings = certify_findings(stable_row_ids(tmp_path, external=b"header!!trailer"))
    assert_clean(findings)
    assert not [f for f in findings if f.requirement == "ROW-001"]
