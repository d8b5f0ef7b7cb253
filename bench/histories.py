"""Large inputs written by pylance, shared by the scale benchmarks (``bench_scale.py``) and anyone who needs a
long history or a wide version (the incremental-certification bench uses :func:`growing_history`).

* :func:`write_growing_history`: ``n`` versions of a growing table: one-row appends, with about every
  ``compact_every`` versions a ``compact_files`` that merges the small fragments (so the table keeps
  every row ever written while no manifest grows past ``compact_every`` fragments, and the total of all
  manifests stays linear in ``n``).
* :func:`commit_one_more`: one more append on such a history (the "after one more commit" step).
* :func:`write_wide_version`: one version of ``fragments`` one-row fragments (1,000,000 for the scale
  bench), written by one ``write_fragments`` call and made version 1 by one commit.
* :func:`built_once`: build into a directory once and reuse it while its marker file is there.

Nothing here times anything; the callers do.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import lance
import pyarrow as pa

MARKER = ".history-complete.json"


def _rows(start: int, count: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + count), pa.int64())})


def write_growing_history(root: str, versions: int, *, compact_every: int = 200) -> float:
    """Write ``versions`` versions of a growing table at ``root`` with pylance and return the seconds it took.

    Version 1 creates the table with one row; every later version appends one row, except about every
    ``compact_every`` versions a ``compact_files`` that merges the one-row fragments (pylance 14.0.2 commits
    it as two versions). So the last version holds most of the rows
    ever written and at most ``compact_every`` fragments; every version is conformant (pylance's own
    divergences aside, spec/findings.md).
    """
    if versions < 1:
        raise ValueError("a history has at least one version")
    started = time.perf_counter()
    latest = lance.write_dataset(_rows(0, 1), root).version
    written = 1
    compacted_at = 0
    while latest < versions:
        if latest - compacted_at >= compact_every - 1 and versions - latest >= 2:
            lance.dataset(root).optimize.compact_files(target_rows_per_fragment=1 << 20)
            compacted_at = latest
        else:
            lance.write_dataset(_rows(written, 1), root, mode="append")
            written += 1
        latest = lance.dataset(root).version
    latest = lance.dataset(root).version
    if latest != versions:
        raise RuntimeError(f"the history at {root} ends at version {latest}, expected {versions}")
    return time.perf_counter() - started


def commit_one_more(root: str) -> int:
    """Append one row to the table at ``root`` (one new version); return the new version number."""
    dataset = lance.dataset(root)
    start = dataset.count_rows()
    return lance.write_dataset(_rows(start, 1), root, mode="append").version


def write_wide_version(root: str, fragments: int) -> float:
    """One version of ``fragments`` one-row fragments at ``root`` (one ``write_fragments`` call, one
    Overwrite commit); return the seconds it took."""
    from lance.fragment import write_fragments

    started = time.perf_counter()
    table = _rows(0, fragments)
    written = write_fragments(table, root, max_rows_per_file=1)
    lance.LanceDataset.commit(root, lance.LanceOperation.Overwrite(table.schema, written))
    return time.perf_counter() - started


def built_once(directory: Path, build: Callable[[Path], float]) -> tuple[Path, float, bool]:
    """``build(directory)`` unless ``directory`` holds a finished build (its marker file); a half-built
    directory is emptied and built again. Returns the directory, the build's seconds (recorded in the
    marker when reused) and whether it was built now."""
    marker = directory / MARKER
    if marker.is_file():
        return directory, float(json.loads(marker.read_text())["build_s"]), False
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    seconds = build(directory)
    marker.write_text(json.dumps({"build_s": seconds, "built_at": time.time()}))
    return directory, seconds, True


def growing_history(directory: Path, versions: int = 10_000, *, compact_every: int = 200) -> str:
    """The root of a :func:`write_growing_history` of ``versions`` versions in ``directory/ds``, built once
    (about 40 s for 10,000 versions on this machine) and reused while ``directory``'s marker is there.
    Copy it before changing it (``commit_one_more``), so the cached history stays as built."""
    built, _, _ = built_once(
        directory, lambda d: write_growing_history(str(d / "ds"), versions, compact_every=compact_every)
    )
    return str(built / "ds")
