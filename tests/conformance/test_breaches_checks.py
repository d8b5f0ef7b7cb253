"""Each breach of breach_kit_checks.py, certified: exit 1 (a MUST breached), the breach's requirement at
MUST, and no other MUST; certified both through the I/O plan and lazily (``certify_findings``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from breach_kit_checks import BREACHES
from conformance_kit import assert_only, certify_findings

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
