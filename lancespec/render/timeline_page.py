"""``lancespec simulate --html FILE`` (and ``lancespec simulate --from-report FILE --html OUT`` for a saved run):
the run as a timeline, drawn from the simulate JSON report (``lancespec.simulate/2``) alone.

One lane per writer process; each operation a bar from its invocation to its completion, coloured by its
outcome (ok, failed, unknown); the manifest PUTs and deletions the fault proxy answered with a fault marked
on the writer's lane at the time they arrived; the operations an anomaly names outlined in red, and each
anomaly listed with its history excerpt. Below: latency percentiles per operation kind and the replay
command. The time axis is the run's own (seconds from its start), so the chart is a plot of the history,
not a layout problem: coordinates are computed here, in the SVG's own units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.history import History

from .html import Facet, esc, filter_attr, page, table

OUTCOME_COLOURS = {"ok": "#3c9d4f", "failed": "#9aa3ad", "unknown": "#e08a00"}
LANE, BAR, LEFT, WIDTH = 26, 14, 60, 1100  # lane height, bar height, label margin, plot width (SVG units)


def operations(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each operation of the saved history (``History.records`` pairs invocations with completions): writer,
    kind, dataset, start, end (None when the run was cut before it completed), outcome, its events' indices."""
    return [{"writer": r.op.writer, "kind": r.op.kind, "dataset": r.op.dataset, "start": r.start,
             "end": r.completion.time if r.completion is not None else None, "outcome": r.outcome,
             "events": [e.index for e in r.events()]}
            for r in History.from_json(history).records()]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ascending values by the nearest-rank rule: the value at rank ceil(q n)
    (at least 1), no interpolation."""
    rank = max(1, min(len(sorted_values), math.ceil(q * len(sorted_values))))
    return sorted_values[rank - 1]


def latency_table(ops: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | int]]:
    """Per operation kind, over the operations that completed: count, p50, p90, p99 and max (seconds)."""
    by_kind: dict[str, list[float]] = {}
    for op in ops:
        if op["end"] is not None:
            by_kind.setdefault(op["kind"], []).append(op["end"] - op["start"])
    out: dict[str, dict[str, float | int]] = {}
    for kind, values in sorted(by_kind.items()):
        values.sort()
        out[kind] = {"count": len(values), "p50": percentile(values, 0.5), "p90": percentile(values, 0.9),
                     "p99": percentile(values, 0.99), "max": values[-1]}
    return out


def _svg(ops: Sequence[Mapping[str, Any]], writers: int, faults: Sequence[Mapping[str, Any]], end: float,
         marked: set[int]) -> str:
    scale = WIDTH / end if end > 0 else 1.0
    height = LANE * writers + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{LEFT + WIDTH + 20}" '
           f'height="{height}" viewBox="0 0 {LEFT + WIDTH + 20} {height}" font-size="11">']
    for w in range(writers):
        y = w * LANE
        out.append(f'<text x="4" y="{y + LANE / 2 + 4}">w{w}</text>'
                   f'<line x1="{LEFT}" x2="{LEFT + WIDTH}" y1="{y + LANE}" y2="{y + LANE}" stroke="#eef1f4"/>')
    for op in ops:
        x = LEFT + op["start"] * scale
        stop = op["end"] if op["end"] is not None else end
        bar = max(1.5, (stop - op["start"]) * scale)
        anomalous = any(e in marked for e in op["events"])
        stroke = ' stroke="#d0021b" stroke-width="2"' if anomalous else ' stroke="#fff" stroke-width="0.5"'
        lasted = f"{stop - op['start']:.3f}s" if op["end"] is not None else "did not complete"
        tip = f"w{op['writer']} {op['kind']} {op['dataset']}: {op['outcome']}, {lasted} (events {op['events']})"
        classes = "op counted anomalous" if anomalous else "op counted"
        out.append(f'<rect class="{classes}" x="{x:.1f}" y="{op["writer"] * LANE + (LANE - BAR) / 2:.1f}" '
                   f'width="{bar:.1f}" height="{BAR}" fill="{OUTCOME_COLOURS.get(op["outcome"], "#777")}"{stroke}'
                   f'{filter_attr(outcome=[op["outcome"]], kind=[op["kind"]])}><title>{esc(tip)}</title></rect>')
    for fault in faults:
        x = LEFT + fault["t"] * scale
        y = fault["client"] * LANE
        out.append(f'<path class="fault" d="M{x:.1f} {y + 1} l-4 -0 l4 6 l4 -6 z" fill="#d0021b">'
                   f'<title>{esc(fault["fault"])} on a {esc(fault["kind"])} of {esc(fault["key"])}</title></path>')
    for second in range(int(end) + 1):
        x = LEFT + second * scale
        out.append(f'<text x="{x:.1f}" y="{height - 8}" fill="#6b7685">{second}s</text>')
    out.append("</svg>")
    return "".join(out)


def timeline_page(report: Mapping[str, Any]) -> str:
    """The page for a simulate JSON ``report``."""
    config = report["config"]
    ops = operations(report["history"])
    faults = [w for w in report.get("wire", []) if w.get("fault")]
    end = max([o["end"] or o["start"] for o in ops] + [f["t"] for f in faults] + [0.001])
    marked = {e for a in report["anomalies"] for e in a["events"]}
    word = "no anomaly" if report["ok"] else f"{len(report['anomalies'])} anomalies"
    header = (f'<h1 class="{"verdict-ok" if report["ok"] else "verdict-bad"}">{esc(word)}</h1>'
              f"<div>{esc(config['writers'])} writers ({esc(config['writer'])}), {len(ops)} operations, seed "
              f"{esc(config['seed'])}, faults '{esc(config['faults'])}'; {esc(report['commits'])} versions committed, "
              f"{esc(report['commits_per_s'])} per second</div><div>replay: <code>{esc(report['replay'])}</code></div>")
    legend = " ".join(f'<span style="color:{c}">&#9632;</span> {esc(o)}' for o, c in OUTCOME_COLOURS.items())
    chart = _svg(ops, config["writers"], faults, end, marked)
    body = [f'<section id="timeline"><h2>Timeline</h2><div class="muted">{legend}; '
            '<span style="color:#d0021b">&#9660;</span> a fault on a manifest PUT or deletion; red outline: '
            f'an operation an anomaly names</div><div class="diagram">{chart}</div></section>']
    anomalies = [f'<div class="requirement"><h3>{esc(a["kind"])} ({esc(a["invariant"])})</h3>'
                 f"<div>{esc(a['message'])}</div><pre>{esc(chr(10).join(a.get('excerpt', [])), 20000)}</pre></div>"
                 for a in report["anomalies"]]
    body.append(f'<section id="anomalies"><h2>Anomalies</h2>{"".join(anomalies) or "<p>none</p>"}</section>')
    rows = [f"<tr><td>{esc(kind)}</td><td>{row['count']}</td>"
            + "".join(f"<td>{row[k]:.3f}</td>" for k in ("p50", "p90", "p99", "max")) + "</tr>"
            for kind, row in latency_table(ops).items()]
    body.append('<section id="latency"><h2>Latency per operation kind (s)</h2>'
                f'{table(["kind", "completed", "p50", "p90", "p99", "max"], rows)}</section>')
    kinds = sorted({o["kind"] for o in ops})
    facets = [Facet("outcome", "outcome", [(o, o) for o in OUTCOME_COLOURS]),
              Facet("kind", "operation", [(k, k) for k in kinds])]
    return page(f"lancespec simulate: {word}", header, "".join(body), facets)
