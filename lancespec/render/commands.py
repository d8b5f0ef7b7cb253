"""What the command line calls to draw: ``inspect --graph``, ``certify --format html`` and
``certify-writer --format html`` (the options live in ``lancespec.cli``; the work here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from conformance.report import to_json
from reference.errors import InvalidOption, LanceSpecError
from reference.printable import printable
from reference.store import Storage
from reference.table import Dataset

from ..destination import write_text
from .certify_page import certify_page, finding_marks
from .dot import graph_text, require_graphviz
from .gather import gather
from .lineage import build_lineage
from .writer_page import writer_page

if TYPE_CHECKING:
    from conformance.findings import Report
    from conformance.scenarios.certify_writer import WriterReport


def draw_lineage(dataset: Dataset, path: str) -> None:
    """``inspect URI --graph FILE``: the lineage as ``.svg`` (Graphviz checked before anything is read)
    or ``.dot``."""
    if not path.endswith((".svg", ".dot")):
        raise InvalidOption(f"--graph writes .svg or .dot, not {printable(path, 80)}")
    if path.endswith(".svg"):
        require_graphviz(path)
    write_text(path, graph_text(build_lineage(gather(dataset)), path), "the graph")


def certify_html(uri: str, storage: Storage, output: str | None) -> Callable[[Report], str]:
    """The ``html`` renderer of ``certify``: the JSON report's dict and the lineage (with the versions
    findings point to), drawn through ``storage``, the store certify read through (its listings and
    manifests remembered: the dataset is not read twice). Graphviz is checked now, before certification."""
    require_graphviz(output or "standard output")

    def render(report: Report) -> str:
        document = to_json(report)
        try:
            dataset = Dataset(uri, storage)
            return certify_page(document, gather(dataset, finding_marks(document)))
        except LanceSpecError as exc:
            return certify_page(document, None, str(exc))

    return render


def writer_html(report: WriterReport) -> str:
    """The ``html`` renderer of ``certify-writer``."""
    from conformance.scenarios.certify_writer import to_json as writer_json

    return writer_page(writer_json(report))
