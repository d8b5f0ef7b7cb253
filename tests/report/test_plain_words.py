"""The certify page says a finding's other keys as a person would: no ``None``, no Python key names."""

from __future__ import annotations

from lancespec.render.certify_page import certify_page


def _report() -> dict[str, object]:
    plain = {"requirement": "CLONE-001", "code": "CLONE-001", "severity": "MUST", "version": 1, "branch": None,
             "path": "/t/ds/x", "message": "plain", "known_divergence": None, "set_aside_by": None}
    set_aside = {**plain, "message": "set aside", "set_aside_by": "CLONE-001"}
    return {"format": "lancespec.certify/1", "lancespec_version": "0", "uri": "/t/ds", "outcome": "breach",
            "conformant": False, "cannot_read": None,
            "readable": True, "exit_code": 1, "cannot_judge": [], "internal_error": None, "versions": [1],
            "checks": ["clones.lineage"], "requirements_checked": ["CLONE-001"],
            "summary": {"must": 2, "should": 0}, "findings": [plain, set_aside]}


def test_findings_notes_have_no_none_and_no_key_names() -> None:
    page = certify_page(_report(), None, "x")
    assert "None" not in page and "set_aside_by" not in page and "known_divergence:" not in page
    assert "<td>set aside by CLONE-001</td>" in page
