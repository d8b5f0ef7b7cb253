"""DuckDB with its Lance extension (duckdb 1.5.5 + duckdb-extension-lance 1.5.5) as a writer: through its SQL
only, driven by the JSON-lines adapter conformance/adapters/processes/duckdb_writer.py in an environment of its
own (tools/thirdparty_writers.py makes it on first use; the tests skip, with the reason, when it cannot be made).

Every table is read back with lancespec's reference reader and compared row by row with a plain Python
computation of what the statement must leave (the second source of truth); every table certifies with no MUST
finding. DELETE with most predicate forms removes the wrong rows: F-050, expected here as observed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from predicate_forms import DATA, IDS, MATCHES, ROWS, Row
from tool_kit import load_tool

from conformance.adapters.base import Capabilities
from conformance.adapters.external import JsonLinesProcess, hello
from conformance.certify import certify
from conformance.scenarios import builtin_scenarios
from conformance.scenarios.certify_writer import certify_writer, make_writer, render_text
from conformance.scenarios.runner import FAIL, PASS, XFAIL, XPASS
from reference.read import read_snapshot
from reference.table import Dataset

#: F-050, as DuckDB 1.5.5 + duckdb-extension-lance 1.5.5 leaves the table: the ids left after the DELETE.
EVERYTHING_DELETED: list[int] = []
F050_LEFT: dict[str, list[int]] = {
    **{p: EVERYTHING_DELETED for p in ("id % 3 = 0", "id / 2 = 3", "abs(id - 10) < 2", "value > 5.0", "value = 1.5",
                                       "name = 'row-3'", "name LIKE 'row-1%'", "lower(name) = 'row-3'",
                                       "name IS NULL", "name IS NOT NULL")},
    "id < 14 AND value > 5.0": list(range(14, 20)),     # only `id < 14` applied
    "value > 5.0 AND id < 14": list(IDS),                # nothing deleted: the same conjunction, reordered
    "id = 1 OR name = 'row-3'": [i for i in IDS if i != 1],  # only `id = 1` applied
}


def _writer() -> Any:
    tool = load_tool("thirdparty_writers")
    problem = tool.install("duckdb-lance")
    if problem:
        pytest.skip(f"DuckDB's Lance writer environment cannot be made: {problem}")
    return tool.WRITERS["duckdb-lance"]


def _rows(uri: Path) -> list[Row]:
    dataset = Dataset.open(str(uri))
    return sorted(read_snapshot(dataset.snapshot(), dataset.storage).to_pylist(), key=lambda r: r["id"])


@pytest.fixture(scope="module")
def deleted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    """One table per predicate in one DuckDB session: created from ROWS, then ``DELETE ... WHERE predicate``."""
    writer = _writer()
    folder = tmp_path_factory.mktemp("duckdb-lance")
    proc = JsonLinesProcess(writer.command().removeprefix("cmd:"))
    tables = {}
    try:
        assert hello(proc, {}, "writer")["writer"] == "duckdb-lance"
        for k, predicate in enumerate(MATCHES):
            uri = folder / f"t{k}.lance"
            proc.call({"op": "create", "uri": str(uri), "data": DATA})
            proc.call({"op": "delete", "uri": str(uri), "predicate": predicate})
            tables[predicate] = uri
    finally:
        proc.close()
    return folder, tables


@pytest.mark.parametrize("predicate", list(MATCHES))
def test_delete_leaves_the_rows_the_predicate_does_not_match(deleted: tuple[Path, dict[str, Path]],
                                                            predicate: str) -> None:
    must_leave = [r for r in ROWS if not MATCHES[predicate](r)]
    left = _rows(deleted[1][predicate])
    if predicate not in F050_LEFT:
        assert left == must_leave
    else:  # F-050: the wrong rows are deleted (expected as observed; a fix makes this fail, and F-050 is revisited)
        assert [r["id"] for r in left] == F050_LEFT[predicate] != [r["id"] for r in must_leave]


@pytest.mark.parametrize("predicate", ["id = 3", "id % 3 = 0", "id < 14 AND value > 5.0"])
def test_its_tables_certify_with_no_must_finding(deleted: tuple[Path, dict[str, Path]], predicate: str) -> None:
    report = certify(str(deleted[1][predicate]), all_versions=True)
    assert report.readable and not report.cannot_judge and report.versions
    assert report.must_findings == []
    assert [f for f in report.findings if f.known is None] == []


def test_a_broken_table_is_noticed(deleted: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    """One rule broken by hand: a data file the manifest lists is removed."""
    broken = tmp_path / "broken.lance"
    shutil.copytree(deleted[1]["id = 3"], broken)
    next((broken / "data").iterdir()).unlink()
    report = certify(str(broken), all_versions=True)
    assert report.exit_code != 0 and (report.must_findings or report.cannot_judge or not report.readable)


@pytest.mark.slow
def test_certify_writer_on_the_scenarios_sql_can_express(tmp_path: Path) -> None:
    writer = _writer()
    caps = writer.capabilities()
    assert Capabilities.load(caps).root_suffix == ".lance"
    names = ("delete-matching-nothing", "refuse-empty-operations", "delete-by-comparison", "delete-by-string",
             "delete-by-float", "delete-by-conjunction", "machine-delete-matching-nothing")
    chosen = [s for s in builtin_scenarios() if s.name in names]
    report = certify_writer(make_writer(writer.command(), str(caps)), chosen, stores=["local"], workdir=str(tmp_path))
    assert report.exit_code == 0, render_text(report)
    assert not any(r.outcome in (FAIL, XPASS) for run in report.runs for r in run.results), render_text(report)
    runs = {r.scenario: r for r in report.runs}
    for name in ("delete-matching-nothing", "delete-by-comparison", "machine-delete-matching-nothing"):
        run = runs[name]
        assert run.completed and run.certify is not None and run.certify.outcome == PASS, render_text(report)
        assert run.compare is not None and run.compare.outcome == PASS
    assert runs["machine-delete-matching-nothing"].fell_back == ("max_rows_per_file",)
    for name in ("delete-by-string", "delete-by-float", "delete-by-conjunction"):  # F-050, as the scenarios show it
        assert [(r.index, r.outcome, r.finding) for r in runs[name].results if r.finding] == [(2, XFAIL, "F-050")]


def _session_on(uri: Path) -> JsonLinesProcess:
    proc = JsonLinesProcess(_writer().command().removeprefix("cmd:"))
    hello(proc, {}, "writer")
    proc.call({"op": "create", "uri": str(uri), "data": DATA})
    return proc


def _versions(uri: Path) -> int:
    return len(list((uri / "_versions").glob("*.manifest")))


def test_update_sets_the_matching_rows_and_refuses_what_it_cannot_push_down(tmp_path: Path) -> None:
    """UPDATE applies the comparisons DELETE gets wrong (F-050) and refuses, committing nothing, the forms it
    cannot hand to Lance: where DELETE deletes every row, UPDATE says so."""
    by_id, by_name, modulo = tmp_path / "a.lance", tmp_path / "b.lance", tmp_path / "c.lance"
    proc = _session_on(by_id)
    try:
        proc.call({"op": "sql", "uri": str(by_id), "statement": "UPDATE {table} SET value = -1 WHERE id = 4"})
        proc.call({"op": "create", "uri": str(by_name), "data": DATA})
        proc.call({"op": "sql", "uri": str(by_name), "statement": "UPDATE {table} SET value = -1 WHERE name = 'row-2'"})
        proc.call({"op": "create", "uri": str(modulo), "data": DATA})
        answer = proc.request({"op": "sql", "uri": str(modulo),
                               "statement": "UPDATE {table} SET value = -1 WHERE id % 3 = 0"})
    finally:
        proc.close()
    assert _rows(by_id) == [{**r, "value": -1.0} if r["id"] == 4 else r for r in ROWS]
    assert _rows(by_name) == [{**r, "value": -1.0} if r["name"] == "row-2" else r for r in ROWS]
    assert not answer["ok"] and "does not support" in answer["error"]["message"]
    assert _rows(modulo) == ROWS and _versions(modulo) == 1


def test_alter_and_merge_are_read_back_as_sql_says(tmp_path: Path) -> None:
    uri = tmp_path / "t.lance"
    proc = _session_on(uri)
    try:
        for statement in ("ALTER TABLE {table} ADD COLUMN extra BIGINT DEFAULT 7",
                          "ALTER TABLE {table} DROP COLUMN name",
                          "MERGE INTO {table} AS t USING (SELECT 3::BIGINT AS id, 9.0::DOUBLE AS value) AS s "
                          "ON t.id = s.id WHEN MATCHED THEN UPDATE SET value = s.value "
                          "WHEN NOT MATCHED THEN INSERT (id, value, extra) VALUES (s.id, s.value, 0)",
                          "MERGE INTO {table} AS t USING (SELECT 99::BIGINT AS id, 1.0::DOUBLE AS value) AS s "
                          "ON t.id = s.id WHEN MATCHED THEN UPDATE SET value = s.value "
                          "WHEN NOT MATCHED THEN INSERT (id, value, extra) VALUES (s.id, s.value, 0)"):
            proc.call({"op": "sql", "uri": str(uri), "statement": statement})
    finally:
        proc.close()
    want = [{"id": r["id"], "value": 9.0 if r["id"] == 3 else r["value"], "extra": 7} for r in ROWS]
    assert _rows(uri) == [*want, {"id": 99, "value": 1.0, "extra": 0}]
    report = certify(str(uri), all_versions=True)
    assert report.must_findings == [] and [f for f in report.findings if f.known is None] == []
