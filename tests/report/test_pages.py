"""The pages and commands without a browser: what the certify page folds, escapes and says when it has no
diagram; the commands' one-line refusal (exit 2) without Graphviz, and DOT output without it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from report_kit import case_json, run_cli

from conformance.catalogue import load_catalogue
from conformance.certify import certify
from conformance.fetch import RunStorage
from lancespec.render.certify_page import DIVERGENCE_KEY, certify_page
from lancespec.render.commands import certify_html
from lancespec.render.dot import graphviz_available
from reference.store.local import LocalStore


def _report(findings: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": "lancespec.certify/1", "lancespec_version": "0", "uri": "/t/ds", "conformant": False,
            "readable": True, "exit_code": 1, "outcome": "breach", "cannot_judge": [], "internal_error": None,
            "versions": [1],
            "checks": ["clones.lineage"], "requirements_checked": ["CLONE-001", "CLONE-002"],
            "summary": {"must": len(findings), "should": 0}, "findings": findings}


def _finding(message: str, **extra: Any) -> dict[str, Any]:
    return {"requirement": "CLONE-001", "severity": "MUST", "version": 1, "branch": None, "path": "/t/ds/x",
            "message": message, **extra}


def test_known_divergences_fold_under_their_requirement_with_their_label() -> None:
    page = certify_page(_report([_finding("plain"), _finding("known", **{DIVERGENCE_KEY: "F-010"})]), None, "x")
    section = page[page.index('id="req-CLONE-001"'):]
    plain, folded = section.index(">plain<"), section.index('<details class="divergence">')
    assert plain < folded < section.index(">known<")
    assert "<summary>known divergence F-010: 1 finding</summary>" in section
    assert "Lance blog post" in section and "2 findings" in section
    statements = load_catalogue()["CLONE-001"].statements
    assert statements and f"the statements it comes from ({len(statements)})" in section
    assert all(f"<b>{sid}</b>" in section for sid in statements)


def test_findings_that_say_one_thing_share_a_row_with_their_version_ranges() -> None:
    same = [{**_finding("leans on v3"), "version": v, "path": f"/t/ds/_versions/{v}.manifest"} for v in (1, 2, 3, 7)]
    on_branch = {**_finding("leans on v3"), "version": 4, "branch": "feat", "path": "/t/ds/tree/feat/4.manifest"}
    page = certify_page(_report([*same, on_branch, _finding("other")]), None, "x")
    rows = page.split('<tr class="finding counted"')[1:]
    assert len(rows) == 2
    assert rows[0].startswith(' data-count="5"') and "<td>v1-3, 7; feat@v4 (5 findings)</td>" in rows[0]
    assert "<summary>5 files</summary>" in rows[0] and "/t/ds/tree/feat/4.manifest" in rows[0]
    assert rows[1].startswith(' data-count="1"') and '<td class="path">/t/ds/x</td>' in rows[1]


def test_what_the_dataset_controls_is_escaped() -> None:
    page = certify_page(_report([_finding("<script>alert(1)</script>\x1b[2J")]), None, "no lineage <b>")
    assert page.count("<script>") == 1  # the page's own
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[2J" in page
    assert "No diagram: the lineage could not be read (no lineage &lt;b&gt;)" in page


def test_coverage_says_checked_clean_with_findings_and_not_applicable() -> None:
    page = certify_page(_report([_finding("m")]), None, "x")
    rows = {row.split("</td>")[0].rsplit(">", 1)[-1]: row for row in page.split('<tr class="coverage"')[1:]}
    assert '<a href="#req-CLONE-001">1 finding</a>' in rows["CLONE-001"]
    assert "checked, no finding" in rows["CLONE-002"]
    assert "not applicable: its checks did not run" in rows["CLONE-003"]


def test_without_graphviz_svg_and_html_refuse_in_one_line_and_dot_still_works(
        corpus: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from lancespec.cli import main

    uri = str(corpus("ref-tags") / "main" / "ds")
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot on it
    for argv in (["inspect", uri, "--graph", str(tmp_path / "g.svg")],
                 ["certify", uri, "--format", "html", "--output", str(tmp_path / "c.html")]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and "needs Graphviz's dot program" in err
    assert not (tmp_path / "g.svg").exists() and not (tmp_path / "c.html").exists()
    assert run_cli("inspect", uri, "--graph", str(tmp_path / "g.dot")) == (0, "")
    tags = [e for e in case_json("ref-tags")["expected"] if e["tag"] is not None]
    assert tags and (tmp_path / "g.dot").read_text().count('class="tag"') == len(tags)


def test_graph_refuses_other_names_and_version_selectors(corpus: Callable[[str], Path], tmp_path: Path) -> None:
    uri = str(corpus("ref-tags") / "main" / "ds")
    assert run_cli("inspect", uri, "--graph", str(tmp_path / "g.png"))[0] == 2
    assert run_cli("inspect", uri, "--graph", str(tmp_path / "g.dot"), "--version", "1")[0] == 2
    assert not list(tmp_path.iterdir())


def test_an_unreadable_dataset_still_gets_its_page(tmp_path: Path) -> None:
    """A manifest that is no manifest is a breach of the format (HIST-001), not a setup problem: exit 1."""
    versions = tmp_path / "garbled" / "_versions"
    versions.mkdir(parents=True)
    (versions / "18446744073709551614.manifest").write_bytes(b"not a manifest")
    page = tmp_path / "c.html"
    assert run_cli("certify", str(tmp_path / "garbled"), "--format", "html", "--output", str(page))[0] == 1
    text = page.read_text()
    assert ">NOT CONFORMANT</h1>" in text and "HIST-001" in text and "No diagram: the lineage could not be read" in text


def test_a_cannot_read_report_shows_its_cause_and_no_requirement() -> None:
    report = {**_report([]), "outcome": "cannot_read", "exit_code": 2, "readable": True,
              "cannot_read": "s3://b/ds/_versions: get refused: S3 error AccessDenied (HTTP 403): check credentials"}
    page = certify_page(report, None, "not read")
    assert ">CANNOT READ</h1>" in page and "HTTP 403" in page and "No findings." in page


class _CountingStore(LocalStore):
    """The local store, counting each whole-object read by URI (the reads a page could repeat)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: Counter[str] = Counter()

    def get(self, uri: str) -> bytes:
        self.reads[uri] += 1
        return super().get(uri)


def test_one_certify_run_feeds_the_html_page(corpus: Callable[[str], Path]) -> None:
    """``certify --format html`` draws the lineage through the store certify read through: no manifest is
    read a second time for the page (the page still shows every version)."""
    if not graphviz_available():
        pytest.skip("Graphviz's dot is not on PATH (apt-get install graphviz; setup.sh does where it can)")
    uri = str(corpus("ref-tags") / "main" / "ds")
    store = _CountingStore()
    storage = RunStorage(backends={"file": store})
    report = certify(uri, all_versions=True, storage=storage)
    manifests = {u: n for u, n in store.reads.items() if u.endswith(".manifest")}
    assert len(manifests) >= 2 and set(manifests.values()) == {1}
    page = certify_html(uri, storage, None)(report)
    assert {u: n for u, n in store.reads.items() if u.endswith(".manifest")} == manifests
    assert "<svg" in page and "No diagram" not in page
    certify_html(uri, RunStorage(backends={"file": store}), None)(report)  # the control: a store of its own
    assert all(store.reads[u] == 2 for u in manifests)  # reads them again, which the count would have caught
