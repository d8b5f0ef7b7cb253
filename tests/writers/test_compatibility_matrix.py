"""docs/compatibility.md and .html are current and complete: rendered from their committed cells, every column
covering every shipped scenario on the stores it runs and every corpus case, no failure nobody recorded, every
finding it cites recorded. The tests that run a writer or reader compare their reports with the committed cells
(tests/compat_kit.py: the reference and pylance on every scenario in test_certify_writer.py and
tests/fixtures/test_corpus.py, LanceDB on a few in tests/thirdparty/test_lancedb_writer.py); the slow tier
regenerates every whole column (the older pylance releases installed from the package registry)."""

from __future__ import annotations

import pytest
from compat_kit import MATRIX

from conformance.corpus.cases import CASES
from conformance.scenarios import builtin_scenarios
from conformance.scenarios.fallback import features_tested

DATA = MATRIX.load()
FINDINGS = MATRIX.FINDINGS.read_text(encoding="utf-8")


def test_the_pages_are_drawn_from_the_committed_cells() -> None:
    assert MATRIX.render(DATA, FINDINGS) == MATRIX.PAGE.read_text(encoding="utf-8"), \
        "python tools/compatibility.py --render"
    assert MATRIX.render_html(DATA) == MATRIX.HTML_PAGE.read_text(encoding="utf-8"), \
        "python tools/compatibility.py --render"


def test_every_column_is_shown_or_says_why_not() -> None:
    shown = [entry["key"] for entry in DATA["columns"]]
    assert shown == [c.key for c in MATRIX.COLUMNS if c.key in shown]
    assert set(shown) | set(DATA["not_run"]) == {c.key for c in MATRIX.COLUMNS}
    assert {"reference", "pylance-14", "pylance-13", "pylance-12", "lancedb"} <= set(shown)


@pytest.mark.parametrize("key", [c.key for c in MATRIX.COLUMNS])
def test_a_column_covers_every_scenario_and_case_with_no_unrecorded_failure(key: str) -> None:
    entry = next((e for e in DATA["columns"] if e["key"] == key), None)
    if entry is None:
        pytest.skip(f"{key} is not in the matrix: {DATA['not_run'][key]}")
    scenarios = builtin_scenarios()
    assert set(entry["writes"]) == set(next(c for c in MATRIX.COLUMNS if c.key == key).stores)
    for store, cells in entry["writes"].items():
        assert set(cells) == {s.name for s in scenarios if store in s.stores}, store
        failed = [s for s, c in cells.items() if c["outcome"] == MATRIX.FAIL]
        assert not failed, f"{key} fails on {store} unrecorded: {failed}"
    if next(c for c in MATRIX.COLUMNS if c.key == key).reads:
        assert set(entry["reads"]) == {c.id for c in CASES if not c.breach}  # breach cases test the judge
        assert all(c["outcome"] != MATRIX.FAIL for c in entry["reads"].values())


def test_every_not_supported_cell_names_a_feature_its_scenario_tests() -> None:
    """No "n/s" stands for a step that only shapes the data (it falls back: docs/scenario-format.md "Tested
    features and fallbacks"); LanceDB (Python and Node) runs at least 20 scenarios to the end on each store, and
    each new writer column (DuckDB, Polars, Daft, Ray) at least 5."""
    tested = {s.name: features_tested(s) for s in builtin_scenarios()}
    for entry in DATA["columns"]:
        for store, cells in entry["writes"].items():
            untested = {s: c["features"] for s, c in cells.items() if not set(c.get("features", [])) <= tested[s]}
            assert not untested, (entry["key"], store, untested)
            to_the_end = sum(c["outcome"] in (MATRIX.PASS, MATRIX.DIVERGENCE) for c in cells.values())
            floor = {"lancedb": 20, "lancedb-node": 20, "duckdb-lance": 5, "polars-lance": 5, "daft-lance": 5,
                     "lance-ray": 5}.get(entry["key"], 0)
            assert to_the_end >= floor, (entry["key"], store, to_the_end)


def test_every_cited_finding_is_recorded() -> None:
    anchors = MATRIX.finding_anchors(FINDINGS)
    cited = {f for e in DATA["columns"] for cells in [*e["writes"].values(), e.get("reads", {})]
             for c in cells.values() for f in c.get("findings", [])}
    assert cited and cited <= set(anchors)
    assert anchors["F-025"] == "f-025-on-s3-a-shallow-clone-into-another-bucket-is-written-into-the-sources-bucket"


def test_cells_condense_a_run_as_the_legend_says() -> None:
    step = {"step": 1, "op": "create", "outcome": "pass", "detail": "", "finding": None, "unsupported": None}
    skipped = {**step, "step": 2, "op": "relocate", "outcome": "skip", "unsupported": "relocate"}
    diverged = {**step, "step": 3, "outcome": "xfail", "finding": "F-011"}
    run = {"scenario": "s", "store": "local", "outcome": "pass", "steps": [step], "certify": None, "compare": None}
    assert MATRIX.writer_cell(run) == {"outcome": "pass"}
    assert MATRIX.writer_cell({**run, "steps": [step, skipped]}) == {"outcome": "unsupported", "features": ["relocate"]}
    assert MATRIX.writer_cell({**run, "outcome": "partial", "steps": [step, diverged, skipped]}) == {
        "outcome": "divergence", "findings": ["F-011"], "features": ["relocate"]}
    assert MATRIX.writer_cell({**run, "outcome": "fail", "steps": [diverged]})["outcome"] == "fail"
    fell_back = MATRIX.writer_cell({**run, "fell_back": ["max_rows_per_file"]})
    assert fell_back == {"outcome": "pass", "fell_back": ["max_rows_per_file"]}
    data = {"columns": [{"key": "w", "writer": "w", "version": "w 1", "writes": {"local": {
        "s": fell_back, "t": {"outcome": "divergence", "findings": ["F-011"]}}}}], "not_run": {}}
    page = MATRIX.render(data, FINDINGS)
    assert "| s | ✓† |" in page and "| t | [F-011] |" in page  # one store: one mark per cell
    title = next(line for line in FINDINGS.splitlines() if line.startswith("## F-011: ")).removeprefix("## F-011: ")
    assert "[F-011]: ../spec/findings.md#f-011-" in page and f'"{title}"' in page
    verify = {"results": [{"case": "a", "outcome": "pass", "reason": ""},
                          {"case": "b", "outcome": "xfail", "reason": "UInt32 offsets", "finding": "F-002"},
                          {"case": "c", "outcome": "xpass", "reason": "F-002: UInt32 offsets"}]}
    assert MATRIX.reader_cells(verify) == {"a": {"outcome": "pass"}, "c": {"outcome": "fail"},
                                           "b": {"outcome": "divergence", "findings": ["F-002"]}}


@pytest.mark.slow
@pytest.mark.interop
@pytest.mark.parametrize("key", [c.key for c in MATRIX.COLUMNS])
def test_a_whole_column_regenerates_as_committed(key: str) -> None:
    """Every scenario on both stores and every corpus case, as the tool runs them (the older pylance releases
    installed from the package registry once): minutes a column."""
    column = next(c for c in MATRIX.COLUMNS if c.key == key)
    why = column.runnable()
    if why:
        pytest.skip(why)
    assert MATRIX.run_column(column, log=lambda _: None) == next(e for e in DATA["columns"] if e["key"] == key)
