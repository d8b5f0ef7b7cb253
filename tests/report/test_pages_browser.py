"""Each kind of page in a real headless Chromium (system package, driven by Playwright): the lineage SVG of
``inspect --graph``, the ``certify --format html`` page and the ``certify-writer --format html`` grid.
Every page: no console error and no request leaving it; the diagram has one node per version, branch, tag
and base as ``inspect --format json`` counts them; filtering hides what it should. Skipped, saying why, without
Playwright, Chromium or Graphviz."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from report_kit import assert_self_contained, inspected_lineage, opened, run_cli

from lancespec.render.certify_page import areas_of
from lancespec.render.dot import graphviz_available
from simulator.workload import Planned

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not graphviz_available(),
                                reason="Graphviz's dot is not installed (apt-get install graphviz)")


def node_counts(page: Any) -> dict[str, int]:
    return {kind: page.locator(f"svg g.node.{kind}").count()
            for kind in ("version", "collapsed", "branch", "tag", "base", "missing")}


def tooltips(page: Any, selector: str) -> set[str]:
    """The tooltips (``xlink:title``, which Graphviz writes for a node's ``tooltip``) of the nodes selected."""
    script = "els => els.map(e => e.querySelector('a').getAttribute('xlink:title'))"
    return set(page.eval_on_selector_all(selector, script))


def test_the_harness_sees_console_errors_and_outside_requests(browser: Any, tmp_path: Path) -> None:
    """The negative control: a page that logs an error and loads an image from elsewhere is caught."""
    page = tmp_path / "leaky.html"
    page.write_text('<html><body><img src="http://127.0.0.1:9/x.png"><script>console.error("boom")</script>'
                    "</body></html>")
    with opened(browser, page) as seen:
        pass
    assert "boom" in seen.errors
    assert seen.outside == ["http://127.0.0.1:9/x.png"]


def test_inspect_graph_svg(browser: Any, corpus: Callable[[str], Path], tmp_path: Path) -> None:
    """ref-refs-across-branches from its clone: two datasets, branches, a tag on a branch, a shallow clone
    of a branch version, roots in two buckets."""
    uri = str(corpus("ref-refs-across-branches") / "cold" / "clone")
    svg = tmp_path / "lineage.svg"
    assert run_cli("inspect", uri, "--graph", str(svg)) == (0, "")
    expected = inspected_lineage(uri)
    assert expected.unreadable == 0 and len(expected.lanes) == 2
    with opened(browser, svg) as seen:
        assert node_counts(seen.page) == {
            "version": expected.versions, "collapsed": 0,
            "branch": sum(len(lanes) for lanes in expected.lanes.values()),
            "tag": sum(len(tags) for tags in expected.tags.values()),
            "base": len(expected.locations), "missing": 0}
        assert seen.page.locator("svg g.edge.clone.shallow").count() == 1
        assert seen.page.locator("svg g.edge.fork").count() == sum(len(lanes) - 1 for lanes in expected.lanes.values())
        assert tooltips(seen.page, "svg g.node.base") == expected.locations
    assert_self_contained(seen)
    dot = tmp_path / "lineage.dot"
    assert run_cli("inspect", uri, "--graph", str(dot)) == (0, "")
    assert dot.read_text().startswith("digraph lineage {")


def _where(f: dict[str, Any]) -> str:
    return f"version {f['version']} of {'branch ' + f['branch'] if f['branch'] else 'main'}"


def _findings_in(page: Any, selector: str) -> int:
    """How many findings the rows ``selector`` finds stand for (a row holds the findings that say one thing)."""
    return sum(map(int, page.locator(selector).evaluate_all("rows => rows.map(r => r.dataset.count)")))


def test_certify_page(browser: Any, corpus: Callable[[str], Path], tmp_path: Path) -> None:
    """py-copied-root-with-branch (must reject: CLONE-001): MUST and SHOULD findings on main and on a branch."""
    uri = str(corpus("py-copied-root-with-branch") / "new")
    html = tmp_path / "certify.html"
    assert run_cli("certify", uri, "--all-versions", "--format", "html", "--output", str(html))[0] == 1
    rc, out = run_cli("certify", uri, "--all-versions", "--format", "json")
    report = json.loads(out)
    findings = report["findings"]
    assert rc == 1 and {f["severity"] for f in findings} == {"MUST", "SHOULD"}
    expected = inspected_lineage(uri)
    with opened(browser, html) as seen:
        page = seen.page
        assert page.locator("h1").inner_text() == "NOT CONFORMANT"
        counts = node_counts(page)
        assert counts["version"] == expected.versions and counts["collapsed"] == 0
        assert counts["branch"] == sum(len(lanes) for lanes in expected.lanes.values())
        assert counts["tag"] == sum(len(tags) for tags in expected.tags.values())
        assert counts["base"] >= len(expected.locations)
        assert _findings_in(page, "tr.finding") == len(findings)
        assert page.locator("tr.finding").count() == len({(f["requirement"], f["message"]) for f in findings})
        assert page.locator("section.requirement").count() == len({f["requirement"] for f in findings})
        assert page.locator("tr.coverage").count() > len(report["requirements_checked"]) > 0
        marked = {_where(f) for f in findings if f["version"] is not None}
        assert tooltips(page, "svg g.node.version.marked") == marked

        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")  # unfold all
        page.uncheck('input[data-facet="severity"][value="MUST"]')
        should = [f for f in findings if f["severity"] == "SHOULD"]
        assert _findings_in(page, "tr.finding:visible") == len(should)
        assert page.locator("#shown").inner_text() == f"{len(should)} of {len(findings)} shown"
        assert tooltips(page, "svg g.node.version.marked:not(.filtered)") == {
            _where(f) for f in should if f["version"] is not None}
        assert set(page.locator("tr.coverage:visible td:nth-child(2)").all_inner_texts()) == {"SHOULD"}

        # the areas are the checks' (certify --only): a requirement stays shown while one of its areas is
        page.uncheck('input[data-facet="area"][value="manifest"]')
        only_manifest = {rid for rid in {f["requirement"] for f in findings} if areas_of(rid) == ["manifest"]}
        rest = [f for f in should if f["requirement"] not in only_manifest]
        assert len(rest) < len(should) and _findings_in(page, "tr.finding:visible") == len(rest)
        visible = page.locator("tr.coverage:visible td:first-child").all_inner_texts()
        assert visible and not any(areas_of(rid) == ["manifest"] for rid in visible)

        page.check('input[data-facet="severity"][value="MUST"]')
        page.check('input[data-facet="area"][value="manifest"]')
        assert _findings_in(page, "tr.finding:visible") == len(findings)
        assert page.locator("svg g.node.marked.filtered").count() == 0
    assert_self_contained(seen)


@pytest.mark.interop
def test_certify_writer_grid(browser: Any, tmp_path: Path) -> None:
    """pylance on a scenario it passes and one it only partly completes (F-022), on local disk."""
    args = ["certify-writer", "--writer", "pylance", "--scenarios", "tags-lifecycle", "--scenarios",
            "refuse-empty-operations", "--store", "local", "--no-compare"]
    html = tmp_path / "writer.html"
    assert run_cli(*args, "--format", "html", "--output", str(html))[0] == 0
    report = json.loads(run_cli(*args, "--format", "json")[1])
    runs = report["runs"]
    assert {r["outcome"] for r in runs} == {"pass", "partial"}
    with opened(browser, html) as seen:
        page = seen.page
        assert page.locator("td.cell").count() == len(runs)
        assert page.locator("tr.row").count() == len({r["scenario"] for r in runs})
        for run in runs:
            row = page.locator("tr.row", has=page.locator(f"th:text-is('{run['scenario']}')"))
            cell = row.locator("td.cell")
            assert cell.locator("summary").inner_text().startswith(run["outcome"].upper())
            assert not cell.locator("table").first.is_visible()
            cell.locator("summary").click()
            steps = cell.locator("table").first
            assert steps.is_visible() and steps.locator("tbody tr").count() == len(run["steps"])
            assert cell.locator("table").count() == 1 + (run["certify"] is not None) + (run["compare"] is not None)
        page.uncheck('input[data-facet="outcome"][value="pass"]')
        assert page.locator("tr.row:visible > th").all_inner_texts() == [
            r["scenario"] for r in runs if r["outcome"] != "pass"]
    assert_self_contained(seen)


def _grid_cells(page: Any, section: str) -> dict[tuple[str, str], dict[str, str]]:
    """Every cell of a grid as the page shows it: (row, column header) -> its class, summary and detail text."""
    script = """table => {
        const heads = [...table.querySelectorAll('thead th')].map(th => th.textContent);
        const out = [];
        for (const tr of table.querySelectorAll('tbody tr.row')) {
            const row = tr.querySelector('th').textContent;
            [...tr.querySelectorAll('td')].forEach((td, i) => out.push({row, column: heads[i + 1],
                cls: td.className, summary: td.querySelector('summary')?.textContent ?? '',
                detail: td.querySelector('details > p')?.textContent ?? ''}));
        }
        return out;
    }"""
    cells = page.locator(f"{section} table").first.evaluate(script)
    return {(c["row"], c["column"]): c for c in cells}


def _committed_marks(cell: dict[str, Any], titles: dict[str, str]) -> tuple[str, str, list[str]]:
    """What the page must show for a committed cell: its outcome class, its summary and the words of its
    detail (each finding's title as spec/findings.md heads it, each feature not declared)."""
    outcome = cell["outcome"]
    shown_as = {"pass": "pass", "fail": "fail", "divergence": "xfail", "unsupported": "skip"}[outcome]
    summary = {"pass": "✓", "fail": "FAIL"}.get(outcome) or (
        " ".join(cell["findings"]) if outcome == "divergence" else "n/s")
    words = [f"{f}: {titles[f]}" for f in cell.get("findings", [])] + cell.get("features", [])
    if cell.get("fell_back"):
        summary += "†"
        words += cell["fell_back"]
    return shown_as, summary, words


def test_compatibility_matrix_page(browser: Any) -> None:
    """docs/compatibility.html, the certify-writer grid over the committed cells: every cell of
    docs/compatibility.json at its scenario and column, with its outcome, its summary and, opened on click,
    each finding by its title in spec/findings.md; the outcome filter hides the rows with no divergence or
    failure."""
    data = json.loads((ROOT / "docs" / "compatibility.json").read_text(encoding="utf-8"))
    findings_md = (ROOT / "spec" / "findings.md").read_text(encoding="utf-8")
    titles = dict(re.findall(r"^## (F-\d+): (.*)$", findings_md, flags=re.MULTILINE))
    label = {e["key"]: "reference" if e["writer"] == "reference" else e["version"] for e in data["columns"]}
    writes = {(scenario, f"{label[e['key']]} · {store}"): cell for e in data["columns"]
              for store, cells in e["writes"].items() for scenario, cell in cells.items()}
    reads = {(case, label[e["key"]]): cell for e in data["columns"] for case, cell in e.get("reads", {}).items()}
    with opened(browser, ROOT / "docs" / "compatibility.html") as seen:
        page = seen.page
        for section, committed in (("#writers", writes), ("#readers", reads)):
            shown = _grid_cells(page, section)
            assert {k for k, c in shown.items() if "cell" in c["cls"].split()} == set(committed), section
            for key, cell in committed.items():
                shown_as, summary, words = _committed_marks(cell, titles)
                assert f"outcome-{shown_as}" in shown[key]["cls"].split(), (key, shown[key])
                assert shown[key]["summary"] == summary, (key, shown[key])
                assert all(w in shown[key]["detail"] for w in words), (key, shown[key]["detail"], words)
        assert len(writes) > 900 and any(c["outcome"] == "divergence" for c in writes.values())
        first = page.locator("#writers td.cell.outcome-xfail").first  # a finding's title opens on click
        assert not first.locator("details > p").is_visible()
        first.locator("summary").click()
        assert first.locator("details > p").is_visible() and "spec/findings.md" in first.locator("p").inner_text()
        page.uncheck('input[data-facet="outcome"][value="pass"]')
        page.uncheck('input[data-facet="outcome"][value="skip"]')
        rows = page.locator("#writers tr.row:visible")
        assert 0 < rows.count() < page.locator("#writers tr.row").count()
        assert rows.locator("td.cell.outcome-xfail, td.cell.outcome-fail").count() >= rows.count()
    assert_self_contained(seen)


@pytest.mark.s3
def test_simulate_timeline(browser: Any, tmp_path: Path) -> None:
    """A real run (3 reference writers, faults on) drawn by ``simulate --html``, and the same page drawn again
    from its saved report: one lane per writer, one bar per operation of the history, filters that hide."""
    report, html = tmp_path / "sim.json", tmp_path / "sim.html"
    args = ["simulate", "--writers", "3", "--ops", "24", "--seed", "11", "--datasets", "1", "--preflight-rounds", "0"]
    assert run_cli(*args, "--report", str(report), "--html", str(html))[0] == 0
    again = tmp_path / "again.html"
    assert run_cli("simulate", "--from-report", str(report), "--format", "html", "--output", str(again))[0] == 0
    assert again.read_text() == html.read_text()
    history = json.loads(report.read_text())["history"]
    invoked = [e for e in history if e["type"] == "invoke"]
    outcome = {(e["op"]["writer"], e["op"]["index"]): e["type"] for e in history if e["type"] != "invoke"}
    not_ok = [e for e in invoked if outcome.get((e["op"]["writer"], e["op"]["index"]), "unknown") != "ok"]
    with opened(browser, html) as seen:
        page = seen.page
        assert page.locator("svg.timeline rect.op").count() == len(invoked) == 24
        assert page.locator("svg.timeline text", has_text=re.compile(r"^w\d$")).count() == 3
        assert page.locator("#shown").inner_text() == f"{len(invoked)} of {len(invoked)} shown"
        page.uncheck('input[data-facet="outcome"][value="ok"]')
        assert page.locator("svg.timeline rect.op:visible").count() == len(not_ok)
        completed = {Planned.from_json(e["op"]).kind for e in history if e["type"] != "invoke"}
        assert page.locator("#latency tbody tr").count() == len(completed)
    assert_self_contained(seen)
