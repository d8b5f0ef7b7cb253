"""GC-002 and GC-004 for bases shared between a shallow clone and its source: a cleanup deletes nothing in a
plain (non-root) base another dataset reaches. The scenario is the one the rules as first written allowed
(issue 26): a source ``src`` writes into its storage-only base ``plain``; ``clone`` is a shallow clone of
the tagged version 1 and inherits ``plain``; the source then overwrites and appends, both into ``plain``,
so ``plain`` holds files no version of the clone references (one of them the source's latest data). A
cleanup of the clone that reclaimed its registered non-root bases would delete the source's data.

Run with both writers, each through its own API (pylance 14.0.2 and the reference's pylance-shaped
``reference.api``): the clone's cleanup, with every version old and unverified files allowed,
leaves every file of ``plain`` as it was, and the source still reads every version it keeps.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path
from types import ModuleType

import lance
import pyarrow as pa
import pytest

from reference import api as reference_api
from reference.gc import CleanupPolicy, plan_cleanup
from reference.table import Dataset

pytestmark = pytest.mark.interop

WRITERS: dict[str, ModuleType] = {"pylance": lance, "reference": reference_api}


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())})


def _digests(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def shared_plain_base(tmp_path: Path, writer: ModuleType) -> tuple[str, str, Path]:
    """``(source uri, clone uri, plain base directory)`` as the module docstring says."""
    plain = tmp_path / "plain"
    src, clone = str(tmp_path / "src"), str(tmp_path / "clone")
    ds = writer.write_dataset(_rows(0, 4), src, initial_bases=[writer.DatasetBasePath(str(plain), name="plain")],
                              target_bases=["plain"])
    ds.tags.create("cloned", 1)
    ds.shallow_clone(clone, "cloned")
    writer.write_dataset(_rows(10, 4), src, mode="overwrite", target_bases=["plain"])
    writer.write_dataset(_rows(20, 4), src, mode="append", target_bases=["plain"])
    writer.write_dataset(_rows(30, 2), clone, mode="append")
    return src, clone, plain


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_clones_cleanup_leaves_the_plain_base_it_shares_with_its_source(tmp_path: Path, name: str) -> None:
    writer = WRITERS[name]
    src, clone, plain = shared_plain_base(tmp_path, writer)
    registered = {b.path for b in writer.dataset(clone).base_paths().values() if not b.is_dataset_root}
    assert str(plain) in {p.rstrip("/").removeprefix("file://") for p in registered}  # the clone inherited it
    before = _digests(plain)
    assert len(before) == 3  # the source's three data files; the clone references only the first
    writer.dataset(clone).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True,
                                               error_if_tagged_old_versions=False)
    assert _digests(plain) == before
    source = writer.dataset(src)
    assert sorted(source.to_table().column("id").to_pylist()) == [*range(10, 14), *range(20, 24)]
    assert sorted(writer.dataset(src, version=1).to_table().column("id").to_pylist()) == list(range(4))
    assert sorted(writer.dataset(clone).to_table().column("id").to_pylist()) == [*range(4), 30, 31]


def test_the_reference_plans_nothing_outside_the_clones_root(tmp_path: Path) -> None:
    """The reference's plan for the clone names only files under the clone's own root (GC-002): the shared
    base, and the source root it registers, are never listed."""
    _, clone, _ = shared_plain_base(tmp_path, reference_api)
    plan = plan_cleanup(Dataset(clone), CleanupPolicy(older_than=timedelta(0), delete_unverified=True,
                                                      error_if_tagged_old_versions=False))
    assert plan.candidates  # the clone's own first manifest (and its transaction) go
    assert all(c.uri.startswith(clone + "/") for c in plan.candidates), plan.candidates
