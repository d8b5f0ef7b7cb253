"""The import graph of the house, drawn from the code by grimp (docs/ARCHITECTURE.md "Floors"): no module
takes part in a circle of imports, no import runs from a floor down below up to a floor above, and the parts
are connected (the simulator is built on the judge, the judge on the reference, the command line on all
three; no module stands apart).

The floors, top first (a floor may import any floor below it, never one above; the modules of a floor
written ``a | b`` may not import each other either):

    lancespec.fuzz | lancespec.__main__        tools that drive the command line
    lancespec.cli                              the commands
    lancespec.render                           the pages and diagrams
    lancespec.inspect | lancespec.progress | lancespec.protogen
    simulator                                  the adversary
    conformance                                the judge
    reference                                  the model
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

grimp = pytest.importorskip("grimp", reason="grimp is not installed (pip install 'lancespec[test]')")

PACKAGES = ("lancespec", "reference", "conformance", "simulator")
FLOORS = (
    ("lancespec.fuzz", "lancespec.__main__"),
    ("lancespec.cli",),
    ("lancespec.render",),
    ("lancespec.inspect", "lancespec.progress", "lancespec.protogen"),
    ("simulator",),
    ("conformance",),
    ("reference",),
)
#: Modules run by name only (``python -m``), which no other module needs to import and which import nothing
#: of the house.
RUN_BY_NAME = {"lancespec.protogen"}


@pytest.fixture(scope="module")
def graph() -> Any:
    return grimp.build_graph(*PACKAGES)


def _circles(graph: Any) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return circles


def test_the_circle_finder_finds_a_circle() -> None:
    """The finder on a graph of its own with one circle of three and a module outside it."""
    made = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c", "p.d"):
        made.add_module(name)
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.d", "p.a")):
        made.add_import(importer=importer, imported=imported)
    assert _circles(made) == [["p.a", "p.b", "p.c"]]


def test_no_module_is_in_a_circle(graph: Any) -> None:
    assert len(graph.modules) > 150  # the graph holds the house
    assert _circles(graph) == []


def test_no_arrow_runs_back_up(graph: Any) -> None:
    layers = tuple(grimp.Layer(*floor, independent=True) for floor in FLOORS)
    illegal = graph.find_illegal_dependencies_for_layers(layers=layers)
    found = sorted(f"{d.importer} -> {d.imported}: {[r.importer for r in d.routes]}" for d in illegal)
    assert found == []


def test_the_floor_check_sees_an_arrow_back_up() -> None:
    """The same check on the graph drawn anew with one import added from the reference to the simulator."""
    made = grimp.build_graph(*PACKAGES)
    made.add_import(importer="reference.table", imported="simulator.proxy")
    layers = tuple(grimp.Layer(*floor, independent=True) for floor in FLOORS)
    illegal = made.find_illegal_dependencies_for_layers(layers=layers)
    assert {(d.importer, d.imported) for d in illegal} == {("reference", "simulator")}


def test_the_parts_are_connected(graph: Any) -> None:
    """Each part is built on the ones below it, and every module imports or is imported by another."""
    for importer, imported in (("conformance", "reference"), ("simulator", "conformance"),
                               ("simulator", "reference"), ("lancespec", "reference"),
                               ("lancespec", "conformance"), ("lancespec", "simulator")):
        assert graph.direct_import_exists(importer=importer, imported=imported, as_packages=True), (importer, imported)
    linked: dict[str, int] = defaultdict(int)
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            linked[module] += 1
            linked[imported] += 1
    packages = {m for m in graph.modules if graph.find_children(m)}
    apart = sorted(m for m in graph.modules if not linked[m] and m not in packages and m not in RUN_BY_NAME)
    assert apart == []
