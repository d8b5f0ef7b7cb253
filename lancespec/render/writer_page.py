"""``lancespec certify-writer --format html``: the scenario x store grid of a writer's results, built from
the certify-writer JSON report (``lancespec.certify-writer/1``) alone. Each cell opens the run's steps, its
certification (the findings on the dataset it left) and its comparison with the reference writer; rows
filter by outcome. The verdict and the coverage come first: how many runs applied every step, some, or none,
and the features whose absence skipped steps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.scenarios.runner import step_name

from .html import Cell, Facet, esc, grid, page, table

#: Run outcomes (``ScenarioRun.to_json``) and step outcomes, in the order the filter lists them.
RUN_OUTCOMES = ("fail", "partial", "pass")


def _result_row(result: Mapping[str, Any]) -> str:
    finding = f" ({esc(result['finding'])})" if result.get("finding") else ""
    unsupported = f" (needs {esc(result['unsupported'])})" if result.get("unsupported") else ""
    return (f'<tr class="outcome-{esc(result["outcome"])}"><td>{esc(step_name(result["step"], result["op"]))}</td>'
            f"<td>{esc(result['outcome'])}{finding}{unsupported}</td><td>{esc(result['detail'])}</td></tr>")


def _cell(run: Mapping[str, Any]) -> Cell:
    steps = run["steps"]
    passed = sum(s["outcome"] == "pass" for s in steps)
    extras = [(name, run[name]) for name in ("certify", "compare") if run.get(name) is not None]
    divergences = sorted({r["finding"] for r in [*steps, *(r for _, r in extras)]
                          if r["outcome"] == "xfail" and r.get("finding")})
    summary = f"{esc(run['outcome'].upper())} {passed}/{len(steps)} steps" + "".join(
        f"; {esc(name)} {esc(r['outcome'])}" for name, r in extras)
    if divergences:
        summary += f"; expected divergence {esc(', '.join(divergences))}"
    if run.get("coverage", "full") != "full":
        summary += f"; {esc(run['coverage'])}: needs {esc(', '.join(run.get('skipped_for', {})))}"
    head = ["step", "outcome", "detail"]
    detail = f"<h4>steps</h4>{table(head, map(_result_row, steps))}"
    for _, result in extras:
        detail += f"<h4>{esc(step_name(result['step'], result['op']))}</h4>{table(head, [_result_row(result)])}"
    return Cell(run["outcome"], summary, detail)


def _coverage(coverage: Mapping[str, Any]) -> str:
    """Runs by coverage, and the features whose absence skipped steps."""
    rows = [f"<tr><td>{esc(what)}</td><td>{coverage[key]}</td></tr>"
            for what, key in (("applied every step", "full"), ("applied some steps", "partial"),
                              ("applied no step (not supported)", "not supported"))]
    features = [f"<tr><td>{esc(f['feature'])}</td><td>{f['runs']}</td><td>{f['steps']}</td></tr>"
                for f in coverage["by_feature"]]
    out = f'<section id="coverage"><h2>Coverage</h2>{table(["runs", str(coverage["runs"])], rows)}'
    if features:
        out += (f"<h3>Steps skipped for want of a feature ({coverage['steps_skipped']})</h3>"
                f"{table(['feature', 'runs', 'steps skipped'], features)}")
    return out + "</section>"


def writer_page(report: Mapping[str, Any]) -> str:
    """The page for a certify-writer JSON ``report``."""
    word = report["verdict"].upper()
    tone = {"certified": "verdict-ok", "partial": "verdict-warn"}.get(report["verdict"], "verdict-bad")
    counts = ", ".join(f"{v} {k}" for k, v in report["summary"].items())
    scenarios = list(dict.fromkeys(run["scenario"] for run in report["runs"]))
    header = (f'<h1 class="{tone}">{esc(word)}</h1><p class="{tone}">{esc(report["verdict_line"])}</p>'
              f"<div>writer {esc(report['writer'])} ({esc(report['writer_version'])}); {len(scenarios)} scenarios x "
              f"stores {esc(', '.join(report['stores']))}: {len(report['runs'])} runs; steps, certifications "
              f"and comparisons: {esc(counts)}; "
              f"lancespec {esc(report.get('lancespec_version', ''))}</div>")
    cells = {(run["scenario"], run["store"]): _cell(run) for run in report["runs"]}
    body = (f"{_coverage(report['coverage'])}<section id=\"grid\"><h2>Scenarios x stores</h2>"
            f'{grid("scenario", scenarios, report["stores"], cells)}</section>')
    facets = [Facet("outcome", "run outcome", [(o, o) for o in RUN_OUTCOMES])]
    return page(f"lancespec certify-writer: {word}", header, body, facets)
