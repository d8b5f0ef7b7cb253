"""Read the inspect documents a lineage diagram is drawn from (``lineage``): the latest version of every
lane of the dataset, of its shallow clones' sources (recursively), and every version drawn on its own.

Versions are read leniently (``strict=False``): a version whose files no longer resolve is still drawn,
with the files that do; a version that cannot be read at all is drawn without its files, and a clone
source that cannot be opened appears as a named, missing source. certify judges all of that; the diagram
only shows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.checks.clones import readable_location
from lancespec.inspect import inspect_report
from reference.errors import LanceSpecError
from reference.table import Dataset

from .lineage import Mark, VersionRef, clone_source, lane_marks, location, pinned_versions, spans


def gather(dataset: Dataset, marks: Mapping[VersionRef, Mark] | None = None) -> list[dict[str, Any]]:
    """The documents ``build_lineage`` needs for ``dataset``'s lineage, that dataset's first, with the
    versions ``marks`` marks (``build_lineage``'s same argument). Errors reading ``dataset``'s own latest
    versions propagate."""
    docs: list[dict[str, Any]] = []
    marks = marks or {}
    refs: set[VersionRef] = set()
    first = dataset.main()
    queue = [first]
    seen: set[str] = set()
    while queue:
        main = queue.pop(0)
        if main.uri in seen:
            continue
        seen.add(main.uri)
        try:
            head = inspect_report(main, main.snapshot(strict=False))
        except LanceSpecError:
            if main is not first:
                continue  # a clone's source that is gone: drawn as missing
            raise
        source = clone_source(head)
        if source is not None:
            refs.add(source)  # drawn; opened only where the checks would read it (else drawn as missing)
            if readable_location(head["clone"]["source"]):
                queue.append(Dataset(source.root, main.storage))
        lanes: list[tuple[str | None, Dataset, dict[str, Any]]] = [(None, main, head)]
        for name, latest in head["branches"].items():
            if latest is not None:
                branch = main.branch(name)
                lanes.append((name, branch, inspect_report(main, branch.snapshot(latest, strict=False))))
        for name, root, lane_head in lanes:
            docs.append(lane_head)
            pinned = pinned_versions(head, name, refs)
            for span in spans(lane_head["versions"], pinned, lane_marks(marks, location(head["uri"]), name)):
                if len(span) == 1 and span[0] != lane_head["version"]:
                    try:
                        docs.append(inspect_report(main, root.snapshot(span[0], strict=False)))
                    except LanceSpecError:
                        continue  # drawn without its files
    return docs
