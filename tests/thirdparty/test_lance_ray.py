"""Ray Data with lance-ray 0.5.0 (ray 2.60.0; pylance 14.0.2, the version pip resolves for it) as a writer:
``lance_ray.write_lance`` only, driven by the JSON-lines adapter conformance/adapters/processes/ray_writer.py in an
environment of its own (tools/thirdparty_writers.py makes it on first use; the tests skip, with the reason, when
it cannot be made). Starting Ray takes seconds: the module is slow.

What it writes (rows per file, extra bases with a target base) is read back with lancespec's reference reader and
compared with the rows written (the second source of truth), and certifies with no MUST finding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from predicate_forms import DATA, ROWS, Row
from tool_kit import load_tool

from conformance.adapters.external import JsonLinesProcess, hello
from conformance.certify import certify
from conformance.scenarios import builtin_scenarios
from conformance.scenarios.certify_writer import certify_writer, make_writer, render_text
from conformance.scenarios.runner import FAIL, PASS, XPASS
from reference.read import read_snapshot
from reference.table import Dataset

pytestmark = pytest.mark.slow


def _writer() -> Any:
    tool = load_tool("thirdparty_writers")
    problem = tool.install("lance-ray")
    if problem:
        pytest.skip(f"lance-ray's environment cannot be made: {problem}")
    return tool.WRITERS["lance-ray"]


def _rows(uri: Path) -> list[Row]:
    dataset = Dataset.open(str(uri))
    return sorted(read_snapshot(dataset.snapshot(), dataset.storage).to_pylist(), key=lambda r: r["id"])


def test_written_with_bases_and_rows_per_file_reads_back_and_certifies(tmp_path: Path) -> None:
    uri, cold = tmp_path / "t.lance", tmp_path / "cold"
    half = {"columns": [{**c, "values": c["values"][:10]} for c in DATA["columns"]]}
    rest = {"columns": [{**c, "values": c["values"][10:]} for c in DATA["columns"]]}
    proc = JsonLinesProcess(_writer().command().removeprefix("cmd:"))
    try:
        assert hello(proc, {}, "writer")["writer"] == "lance-ray"
        proc.call({"op": "create", "uri": str(uri), "data": half, "max_rows_per_file": 4,
                   "bases": [{"path": str(cold), "name": "cold", "is_dataset_root": False, "id": None}]})
        proc.call({"op": "append", "uri": str(uri), "data": rest, "target_bases": ["cold"]})
    finally:
        proc.close()
    assert _rows(uri) == ROWS
    manifest = Dataset.open(str(uri)).snapshot().manifest
    assert len(manifest.fragments) == 4  # ceil(10 / 4) + 1
    assert len(list(cold.rglob("*.lance"))) == 1  # the appended fragment's file, in the target base
    report = certify(str(uri), all_versions=True)
    assert report.readable and not report.cannot_judge and report.versions
    assert report.must_findings == [] and [f for f in report.findings if f.known is None] == []


def test_certify_writer_on_a_scenario_write_lance_can_express(tmp_path: Path) -> None:
    writer = _writer()
    chosen = [s for s in builtin_scenarios() if s.name == "create-append-overwrite"]
    report = certify_writer(make_writer(writer.command(), str(writer.capabilities())), chosen, stores=["local"],
                            workdir=str(tmp_path))
    assert report.exit_code == 0, render_text(report)
    assert not any(r.outcome in (FAIL, XPASS) for run in report.runs for r in run.results), render_text(report)
    run = report.runs[0]
    assert run.completed and run.certify is not None and run.certify.outcome == PASS
    assert run.compare is not None and run.compare.outcome == PASS
