"""The simulator's timeline page (lancespec/render/timeline_page.py) on a hand-built report: operations paired
from their events, nearest-rank percentiles, one bar per operation, faults and anomalies marked, every value
escaped."""

from __future__ import annotations

import re
from typing import Any

from conformance.operations import Append, Delete, Operation, Tag
from lancespec.render.timeline_page import latency_table, operations, percentile, timeline_page
from simulator.workload import Planned

STEPS: dict[str, Operation] = {"append": Append("ds0", 0, 1), "delete": Delete("ds0", (0,)),
                               "tag_create": Tag("ds0", "t", None, None)}


def _event(index: int, time: float, writer: int, number: int, kind: str, type_: str, **value: Any) -> dict[str, Any]:
    return {"index": index, "time": time, "process": writer, "type": type_,
            "op": Planned(writer, number, (STEPS[kind],)).to_json(), "value": value}


HISTORY = [
    _event(0, 0.0, 0, 0, "append", "invoke"),
    _event(1, 0.1, 1, 0, "delete", "invoke"),
    _event(2, 0.5, 0, 0, "append", "ok", version=2),
    _event(3, 0.6, 0, 1, "append", "invoke"),
    _event(4, 0.9, 1, 0, "delete", "failed", error="<script>alert(1)</script>"),
    _event(5, 1.6, 0, 1, "append", "unknown"),
    _event(6, 1.7, 1, 1, "tag_create", "invoke"),  # the run was cut before it completed
]

REPORT: dict[str, Any] = {
    "format": "lancespec.simulate/2", "ok": False, "commits": 1, "commits_per_s": 0.6,
    "replay": "lancespec simulate --writers 2 --ops 4 --seed 3",
    "config": {"writers": 2, "writer": "reference", "seed": 3, "faults": "default", "personality": "honest"},
    "history": HISTORY,
    "wire": [{"client": 0, "t": 1.2, "kind": "manifest-put", "key": "ds0/_versions/x.manifest", "fault": "lost-ack"},
             {"client": 1, "t": 0.3, "kind": "delete", "key": "ds0/data/y.lance", "fault": None}],
    "anomalies": [{"kind": "lost-commit", "invariant": "acknowledged-commits-kept", "message": "version <2> gone",
                   "events": [0, 2], "excerpt": ["#0 +0.000s w0 invoke append", "#2 +0.500s w0 ok append"]}],
}


def test_operations_pair_invocations_with_completions() -> None:
    ops = operations(HISTORY)
    assert [(o["writer"], o["kind"], o["start"], o["end"], o["outcome"]) for o in ops] == [
        (0, "append", 0.0, 0.5, "ok"), (1, "delete", 0.1, 0.9, "failed"), (0, "append", 0.6, 1.6, "unknown"),
        (1, "tag_create", 1.7, None, "unknown")]
    assert ops[0]["events"] == [0, 2]


def test_percentiles_are_nearest_rank() -> None:
    assert [percentile([1.0, 2.0, 3.0, 4.0], q) for q in (0.25, 0.5, 0.9, 0.99, 1.0)] == [1.0, 2.0, 4.0, 4.0, 4.0]
    assert percentile([7.0], 0.5) == 7.0
    table = latency_table(operations(HISTORY))
    assert set(table) == {"append", "delete"}  # the cut tag never completed
    assert table["append"]["count"] == 2 and table["append"]["max"] == 1.0
    assert abs(table["delete"]["p50"] - 0.8) < 1e-9


def test_the_page_draws_every_operation_fault_and_anomaly_escaped() -> None:
    html = timeline_page(REPORT)
    assert len(re.findall(r'<rect class="op counted', html)) == 4
    assert len(re.findall(r'<rect class="op counted anomalous"', html)) == 1  # events 0 and 2: one operation
    assert html.count('<path class="fault"') == 1  # only the wire write that met a fault
    assert "<script>alert(1)" not in html and "version &lt;2&gt; gone" in html
    assert "#2 +0.500s w0 ok append" in html
    assert '<text x="4" y="' in html and ">w1</text>" in html and ">w2</text>" not in html


def test_a_report_of_the_former_format_is_refused_by_name(tmp_path: Any) -> None:
    """A ``lancespec.simulate/1`` report (operations with a string kind) cannot be drawn: the error names the
    format and what to do, rather than failing somewhere in the drawing."""
    import json

    import pytest

    from lancespec.cli.simulate import saved_runs
    from reference.errors import InvalidOption

    old = tmp_path / "old.json"
    old.write_text(json.dumps({**REPORT, "format": "lancespec.simulate/1"}))
    with pytest.raises(InvalidOption, match=r"lancespec\.simulate/1 report.*replay command"):
        saved_runs(str(old))
    new = tmp_path / "new.json"
    new.write_text(json.dumps(REPORT))
    assert saved_runs(str(new)) == [json.loads(json.dumps(REPORT))]
