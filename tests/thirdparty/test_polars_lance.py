"""Polars with polars-lance 0.5.0 (Lance core 0.38.3; polars 2.1.0, the version pip resolves) as a writer:
``write_lance`` only, driven by the JSON-lines adapter conformance/adapters/processes/polars_writer.py in an
environment of its own (tools/thirdparty_writers.py makes it on first use; the tests skip, with the reason,
when it cannot be made).

What it writes is read back with lancespec's reference reader and compared with the frames written (the second
source of truth), and certifies with no MUST finding. Reading back with polars-lance itself panics under polars'
default engine and returns wrong rows for a pushed-down filter: F-051, expected here as observed."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from tool_kit import load_tool

from conformance.adapters.external import JsonLinesProcess, hello
from conformance.certify import certify
from conformance.scenarios import builtin_scenarios
from conformance.scenarios.certify_writer import certify_writer, make_writer, render_text
from conformance.scenarios.runner import FAIL, PASS, XPASS
from reference.read import read_snapshot
from reference.table import Dataset

Row = dict[str, Any]


def _rows(ids: range) -> list[Row]:
    return [{"id": i, "name": None if i % 5 == 4 else f"row-{i}", "value": i * 0.5} for i in ids]


def _data(rows: list[Row]) -> dict[str, Any]:
    return {"columns": [{"name": "id", "type": "int64", "values": [r["id"] for r in rows]},
                        {"name": "name", "type": "string", "values": [r["name"] for r in rows]},
                        {"name": "value", "type": "float64", "values": [r["value"] for r in rows]}]}


def _writer() -> Any:
    tool = load_tool("thirdparty_writers")
    problem = tool.install("polars-lance")
    if problem:
        pytest.skip(f"polars-lance's environment cannot be made: {problem}")
    return tool.WRITERS["polars-lance"]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Created with 10 rows (4 per file), then 10 appended: version 2, 5 fragments."""
    uri = tmp_path_factory.mktemp("polars-lance") / "t.lance"
    proc = JsonLinesProcess(_writer().command().removeprefix("cmd:"))
    try:
        assert hello(proc, {}, "writer")["writer"] == "polars-lance"
        proc.call({"op": "create", "uri": str(uri), "data": _data(_rows(range(10))), "max_rows_per_file": 4})
        proc.call({"op": "append", "uri": str(uri), "data": _data(_rows(range(10, 20)))})
    finally:
        proc.close()
    return uri


def test_the_reference_reads_what_was_written_and_it_certifies(written: Path) -> None:
    dataset = Dataset.open(str(written))
    assert sorted(read_snapshot(dataset.snapshot(), dataset.storage).to_pylist(), key=lambda r: r["id"]) \
        == _rows(range(20))
    assert len(dataset.snapshot().manifest.fragments) == 4  # ceil(10 / 4) + 1
    report = certify(str(written), all_versions=True)
    assert report.readable and not report.cannot_judge and report.versions
    assert report.must_findings == [] and [f for f in report.findings if f.known is None] == []


def test_f051_reading_back_under_polars_default_engine_panics(written: Path) -> None:
    """F-051: ``scan_lance(uri).collect()`` panics ("PyLanceScanner is unsendable, but sent to another thread")
    under polars' default engine, most times (not every time: it depends on the thread polars picks); the
    in-memory engine reads every row."""
    proc = JsonLinesProcess(_writer().command().removeprefix("cmd:"))
    try:
        hello(proc, {}, "reader")
        default = [proc.request({"op": "read", "uri": str(written)}) for _ in range(30)]
        in_memory = [proc.call({"op": "read", "uri": str(written), "engine": "in-memory"}) for _ in range(5)]
    finally:
        proc.close()
    panics = [a for a in default if not a["ok"]]
    assert panics and all(a["error"]["message"].startswith("PanicException") and "unsendable" in
                          a["error"]["message"] for a in panics)
    want = _rows(range(20))
    for result in [a["result"] for a in default if a["ok"]] + in_memory:
        names = [c["name"] for c in result["columns"]]
        rows = sorted((dict(zip(names, values, strict=True)) for values in
                       zip(*(c["values"] for c in result["columns"]), strict=True)), key=lambda r: r["id"])
        assert rows == want


def test_f051_a_pushed_down_filter_returns_the_wrong_rows(written: Path) -> None:
    """F-051: polars-lance 0.5.0 is built against polars' Rust crates 0.53 and pip gives it polars 2.1.0; the filter
    expression is deserialised as another one: ``id % 3 == 0`` selects the multiples of 4."""
    script = ("import sys, polars as pl, polars_lance as pll\n"
              "df = pll.scan_lance(sys.argv[1]).filter(pl.col('id') % 3 == 0).collect(engine='in-memory')\n"
              "print(sorted(df['id'].to_list()))\n")
    done = subprocess.run([str(_writer().python), "-c", script, str(written)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    must = [i for i in range(20) if i % 3 == 0]
    assert done.stdout.strip() == str([i for i in range(20) if i % 4 == 0]) != str(must)


def test_certify_writer_on_the_scenarios_write_lance_can_express(tmp_path: Path) -> None:
    writer = _writer()
    chosen = [s for s in builtin_scenarios() if s.name in ("create-append-overwrite", "refuse-empty-operations")]
    report = certify_writer(make_writer(writer.command(), str(writer.capabilities())), chosen, stores=["local"],
                            workdir=str(tmp_path))
    assert report.exit_code == 0, render_text(report)
    assert not any(r.outcome in (FAIL, XPASS) for run in report.runs for r in run.results), render_text(report)
    run = {r.scenario: r for r in report.runs}["create-append-overwrite"]
    assert run.completed and run.certify is not None and run.certify.outcome == PASS
    assert run.compare is not None and run.compare.outcome == PASS
