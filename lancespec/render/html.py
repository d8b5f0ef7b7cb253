"""The shell of every lancespec HTML page: one self-contained document (styles, script and diagram
inline; a Content-Security-Policy that lets it load nothing), escaping, tables and the filter.

The filter: a page declares facets (``Facet``: severity, area, outcome, ...) and marks each element it may
hide with ``data-filter="facet:value facet:value"``; an element stays visible while, for every facet it
names, one of its values is checked. Diagram nodes marked by findings (``dot``'s ``mark-{SEVERITY}-{AREA}``
classes) lose their mark while every finding kind they carry is filtered out.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from reference.printable import printable

#: Nothing is loaded from anywhere: no network, no other file (only inline styles and script).
_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#1d2430}
header{padding:16px 24px;border-bottom:1px solid #d6dce4;background:#f7f9fb}
header h1{margin:0 0 4px;font-size:22px}
.verdict-ok{color:#17692c}.verdict-bad{color:#b00020}.verdict-warn{color:#a05a00}
main{padding:8px 24px 40px}
section{margin:18px 0}
h2{font-size:17px;margin:18px 0 8px;border-bottom:1px solid #e3e7ec;padding-bottom:4px}
h3{font-size:15px;margin:10px 0 4px}
code,.path{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;word-break:break-all}
table{border-collapse:collapse;margin:6px 0;width:100%}
th,td{border:1px solid #dfe4ea;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f4f7;font-weight:600}
.filters{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid #e3e7ec;padding:8px 24px}
.filters fieldset{display:inline-block;border:1px solid #d6dce4;border-radius:6px;margin:0 8px 4px 0;padding:2px 8px}
.filters legend{font-size:12px;color:#5a6575}
.filters label{margin-right:10px;white-space:nowrap}
.shown{color:#5a6575;font-size:12.5px}
.diagram{overflow:auto;border:1px solid #e3e7ec;border-radius:6px;padding:8px;max-height:80vh}
.requirement{border:1px solid #e3e7ec;border-radius:6px;padding:6px 12px;margin:10px 0}
.sev{display:inline-block;border-radius:4px;padding:0 6px;font-size:12px;font-weight:600;color:#fff}
.sev-MUST{background:#b00020}.sev-SHOULD{background:#b86e00}
.outcome-pass{background:#e8f5ea}.outcome-fail{background:#fbe3e6}.outcome-partial{background:#fff4d6}
.outcome-xfail{background:#eef0ff}.outcome-xpass{background:#fbe3e6}.outcome-skip{background:#f3f3f3}
details>summary{cursor:pointer}
svg [hidden]{display:none}
.muted{color:#6b7685}
svg .marked.filtered polygon,svg .marked.filtered path,svg .marked.filtered ellipse{stroke:#555;stroke-width:1px}
"""

_JS = """
(function(){
  const boxes = Array.from(document.querySelectorAll('input[data-facet]'));
  function checked(){
    const on = {};
    for (const b of boxes){
      on[b.dataset.facet] = on[b.dataset.facet] || new Set();
      if (b.checked) on[b.dataset.facet].add(b.value);
    }
    return on;
  }
  function apply(){
    const on = checked();
    let shown = 0, total = 0;
    for (const el of document.querySelectorAll('[data-filter]')){
      const by = {};
      for (const pair of el.dataset.filter.split(' ')){
        const i = pair.indexOf(':');
        (by[pair.slice(0, i)] = by[pair.slice(0, i)] || []).push(pair.slice(i + 1));
      }
      el.hidden = !Object.entries(by).every(([f, vs]) => !on[f] || vs.some(v => on[f].has(v)));
      el.toggleAttribute('hidden', el.hidden);  // an SVG element has no hidden property of its own
      if (el.classList.contains('counted')){
        const n = Number(el.dataset.count || 1);
        total += n; if (!el.hidden) shown += n;
      }
    }
    for (const node of document.querySelectorAll('svg .marked')){
      const live = Array.from(node.classList).some(c => {
        const m = /^mark-([A-Z]+)-([a-z]+)$/.exec(c);
        return m && (!on.severity || on.severity.has(m[1])) && (!on.area || on.area.has(m[2]));
      });
      node.classList.toggle('filtered', !live);
    }
    const out = document.getElementById('shown');
    if (out) out.textContent = shown + ' of ' + total + ' shown';
  }
  for (const b of boxes) b.addEventListener('change', apply);
  apply();
})();
"""


def esc(value: object, limit: int = 1024) -> str:
    """A value (possibly the dataset's) as HTML text: printable, cut, escaped."""
    return html.escape(printable(value, limit), quote=True)


@dataclass(frozen=True)
class Facet:
    """A filter dimension: its name (the ``data-filter`` key), a label, and its values (value, label)."""

    name: str
    label: str
    values: Sequence[tuple[str, str]]


def filter_attr(**facets: Iterable[str]) -> str:
    """``data-filter`` for an element belonging to the given facet values."""
    pairs = [f"{name}:{value}" for name, values in facets.items() for value in values]
    return f' data-filter="{esc(" ".join(pairs))}"'


def _filters(facets: Sequence[Facet]) -> str:
    if not facets:
        return ""
    out = ['<nav class="filters" aria-label="filters">']
    for facet in facets:
        out.append(f"<fieldset><legend>{esc(facet.label)}</legend>")
        out += [f'<label><input type="checkbox" checked data-facet="{esc(facet.name)}" value="{esc(value)}"> '
                f"{esc(label)}</label>" for value, label in facet.values]
        out.append("</fieldset>")
    out.append('<span id="shown" class="shown"></span></nav>')
    return "".join(out)


def table(head: Sequence[str], rows: Iterable[str]) -> str:
    """A table with header cells ``head`` (already HTML) and rows (each a ``<tr>``)."""
    return "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>" + \
        "".join(rows) + "</tbody></table>"


@dataclass(frozen=True)
class Cell:
    """One cell of a grid: its outcome (a ``data-filter`` value and a colour), what it shows closed, and
    what opens under it (HTML)."""

    outcome: str
    summary: str
    detail: str


def grid(corner: str, rows: Sequence[str], columns: Sequence[str], cells: Mapping[tuple[str, str], Cell]) -> str:
    """A rows x columns grid (scenario x store, writer x scenario, ...); each cell opens its detail, each
    row filters by the outcomes of its cells. A missing cell is shown as not run."""
    out = []
    for row in rows:
        here = [cells.get((row, col)) for col in columns]
        outcomes = sorted({c.outcome for c in here if c is not None})
        tds = "".join('<td class="muted">not run</td>' if c is None else
                      f'<td class="cell outcome-{esc(c.outcome)}"><details><summary>{c.summary}</summary>'
                      f"{c.detail}</details></td>" for c in here)
        out.append(f'<tr class="row counted"{filter_attr(outcome=outcomes)}><th>{esc(row)}</th>{tds}</tr>')
    return table([esc(corner), *map(esc, columns)], out)


_SVG_PROLOGUE = re.compile(r"<\?xml.*?\?>|<!DOCTYPE.*?>|<!--.*?-->", re.DOTALL)


def inline_svg(svg: str) -> str:
    """Graphviz's SVG document as an element of the page (no XML prologue, doctype or comments)."""
    return _SVG_PROLOGUE.sub("", svg).strip()


def page(title: str, header: str, body: str, facets: Sequence[Facet] = ()) -> str:
    """The whole document: ``header`` and ``body`` are HTML the caller built with ``esc``."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<header>{header}</header>{_filters(facets)}<main>{body}</main>"
        f"<script>{_JS}</script></body></html>\n"
    )
