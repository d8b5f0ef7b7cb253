"""Shared helpers of the property suite (tests/properties): running operation sequences on the reference
alone, and listing what a version references (hashing trees: ``conformance_kit.file_digests``)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from conformance.operations import Operation
from conformance.properties.side_by_side import SideBySide
from reference.table import Dataset, Snapshot


@contextmanager
def scratch(prefix: str = "lancespec-law-") -> Iterator[Path]:
    """A fresh directory for one Hypothesis example (function-scoped fixtures are shared by examples)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def reference_run(directory: Path, cross_read: bool = False) -> SideBySide:
    """The reference alone held to the model (rows and layout after every operation); ``cross_read`` also
    reads every world with pylance."""
    readers = ("reference", "pylance") if cross_read else ("reference",)
    return SideBySide(directory, writers=("reference",), readers=readers)


def run_all(runner: SideBySide, ops: Sequence[Operation]) -> None:
    for op in ops:
        runner.run(op)


def referenced_uris(snapshot: Snapshot) -> set[str]:
    """Every data, deletion and index file the snapshot references, resolved (sidecars not included)."""
    return {f.uri for f in snapshot.files() if f.uri is not None}


def every_snapshot(world: Path, roots: Iterable[str]) -> Iterator[tuple[str, Snapshot]]:
    """Every version of every root below ``world``."""
    for root in roots:
        dataset = Dataset(str(world / root))
        for version in dataset.versions():
            yield root, dataset.snapshot(version)


def local(uri: str) -> str:
    return uri[len("file://"):] if uri.startswith("file://") else uri
