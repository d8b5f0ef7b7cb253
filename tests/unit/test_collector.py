"""The collector's full passes are made rarer while runs last, and put back when the last run in the process
ends, however runs overlap (``reference.collector``)."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

from reference.collector import FULL_COLLECTION_EVERY, fewer_full_collections


def test_inside_a_run_full_passes_are_rarer_and_put_back_after() -> None:
    before = gc.get_threshold()
    with fewer_full_collections():
        assert gc.get_threshold()[2] == max(before[2], FULL_COLLECTION_EVERY)
        assert gc.get_threshold()[:2] == before[:2]
    assert gc.get_threshold() == before


def test_overlapping_runs_restore_the_thresholds_once_the_last_ends() -> None:
    before = gc.get_threshold()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[tuple[int, ...]] = []

    def first() -> None:
        with fewer_full_collections():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(5)
    with fewer_full_collections():
        second_in.set()
        first_out.wait(5)
        seen.append(gc.get_threshold())  # the first run has ended: this one still runs with rarer passes
    thread.join(5)
    assert seen == [(before[0], before[1], max(before[2], FULL_COLLECTION_EVERY))]
    assert gc.get_threshold() == before


def test_certify_runs_with_rarer_full_passes(tmp_path: Path) -> None:
    """The API (the pytest plugin, the Spark driver) gets what the command line gets: seen from certify's
    progress callback, called while it runs."""
    import lance
    import pyarrow as pa

    from conformance.certify import certify

    root = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": [1, 2]}), root)
    before = gc.get_threshold()
    during: set[tuple[int, ...]] = set()
    certify(root, progress=lambda done, total, what: during.add(gc.get_threshold()))
    assert during == {(before[0], before[1], max(before[2], FULL_COLLECTION_EVERY))}
    assert gc.get_threshold() == before
