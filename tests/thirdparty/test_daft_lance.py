"""Daft with daft-lance 0.6.0 (daft 0.7.26; pylance 14.0.2, the version pip resolves for it) as a writer:
``daft_lance.write_lance`` only, driven by the JSON-lines adapter conformance/adapters/processes/daft_writer.py in
an environment of its own (tools/thirdparty_writers.py makes it on first use; the tests skip, with the reason,
when it cannot be made).

What it writes is read back with lancespec's reference reader and compared with the rows written (the second
source of truth), certifies with no MUST finding, and reads back through daft itself. ``insert_overwrite``
(replace the rows a predicate matches, here with no rows: a delete) is held to a Python computation of what
each predicate form matches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from predicate_forms import DATA, MATCHES, ROWS, Row
from tool_kit import load_tool

from conformance.adapters.external import JsonLinesProcess, hello
from conformance.certify import certify
from conformance.scenarios import builtin_scenarios
from conformance.scenarios.certify_writer import certify_writer, make_writer, render_text
from conformance.scenarios.runner import FAIL, PASS, XPASS
from reference.read import read_snapshot
from reference.table import Dataset

NO_ROWS = {"columns": [{**c, "values": []} for c in DATA["columns"]]}
#: Lance's filter dialect divides integers as integers: `id / 2 = 3` is another predicate there.
FORMS = [p for p in MATCHES if "/" not in p]


def _writer() -> Any:
    tool = load_tool("thirdparty_writers")
    problem = tool.install("daft-lance")
    if problem:
        pytest.skip(f"daft-lance's environment cannot be made: {problem}")
    return tool.WRITERS["daft-lance"]


def _rows(uri: Path) -> list[Row]:
    dataset = Dataset.open(str(uri))
    return sorted(read_snapshot(dataset.snapshot(), dataset.storage).to_pylist(), key=lambda r: r["id"])


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path], list[Row]]:
    """A table created (8 rows per file) and appended to; one table per predicate form, created from ROWS and then
    insert_overwrite'd with no rows where the predicate holds; and daft's own reading of the first."""
    folder = tmp_path_factory.mktemp("daft-lance")
    proc = JsonLinesProcess(_writer().command().removeprefix("cmd:"))
    replaced = {}
    try:
        assert hello(proc, {}, "writer")["writer"] == "daft-lance"
        first = folder / "t.lance"
        half = {"columns": [{**c, "values": c["values"][:10]} for c in DATA["columns"]]}
        rest = {"columns": [{**c, "values": c["values"][10:]} for c in DATA["columns"]]}
        proc.call({"op": "create", "uri": str(first), "data": half, "max_rows_per_file": 4})
        proc.call({"op": "append", "uri": str(first), "data": rest})
        result = proc.call({"op": "read", "uri": str(first)})
        names = [c["name"] for c in result["columns"]]
        daft_read = sorted((dict(zip(names, v, strict=True)) for v in
                            zip(*(c["values"] for c in result["columns"]), strict=True)), key=lambda r: r["id"])
        for k, predicate in enumerate(FORMS):
            uri = folder / f"r{k}.lance"
            proc.call({"op": "create", "uri": str(uri), "data": DATA})
            proc.call({"op": "insert_overwrite", "uri": str(uri), "data": NO_ROWS, "where": predicate})
            replaced[predicate] = uri
    finally:
        proc.close()
    return first, replaced, daft_read


def test_the_reference_and_daft_read_what_was_written_and_it_certifies(
        written: tuple[Path, dict[str, Path], list[Row]]) -> None:
    first, _, daft_read = written
    assert _rows(first) == ROWS == daft_read
    assert len(Dataset.open(str(first)).snapshot().manifest.fragments) == 4  # ceil(10 / 4) + 1
    report = certify(str(first), all_versions=True)
    assert report.readable and not report.cannot_judge and report.versions
    assert report.must_findings == [] and [f for f in report.findings if f.known is None] == []


@pytest.mark.parametrize("predicate", FORMS)
def test_insert_overwrite_replaces_exactly_the_rows_the_predicate_matches(
        written: tuple[Path, dict[str, Path], list[Row]], predicate: str) -> None:
    assert _rows(written[1][predicate]) == [r for r in ROWS if not MATCHES[predicate](r)]


def test_a_replaced_table_certifies(written: tuple[Path, dict[str, Path], list[Row]]) -> None:
    report = certify(str(written[1]["id % 3 = 0"]), all_versions=True)
    assert report.must_findings == [] and [f for f in report.findings if f.known is None] == []
    assert len(report.versions) == 2


@pytest.mark.slow
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


def test_compaction_after_replacing_rows_keeps_the_live_rows(tmp_path: Path) -> None:
    """Five files of 4 rows, the rows matching ``id % 3 = 0`` replaced by none (deletion files), then
    compact_files: the live rows are unchanged and the result certifies."""
    uri = tmp_path / "t.lance"
    proc = JsonLinesProcess(_writer().command().removeprefix("cmd:"))
    try:
        hello(proc, {}, "writer")
        proc.call({"op": "create", "uri": str(uri), "data": DATA, "max_rows_per_file": 4})
        proc.call({"op": "insert_overwrite", "uri": str(uri), "data": NO_ROWS, "where": "id % 3 = 0"})
        proc.call({"op": "compact", "uri": str(uri), "compaction_options": {"target_rows_per_fragment": 100}})
    finally:
        proc.close()
    live = [r for r in ROWS if r["id"] % 3 != 0]
    assert _rows(uri) == live
    snapshot = Dataset.open(str(uri)).snapshot()
    assert len(snapshot.manifest.fragments) == 1 and not snapshot.manifest.fragments[0].HasField("deletion_file")
    report = certify(str(uri), all_versions=True)
    assert report.must_findings == [] and [f for f in report.findings if f.known is None] == []
