"""The divergences the writer machine found (spec/findings.md F-027 to F-030), each as a test that expects
pylance 14.0.2's behaviour: when pylance changes, the test fails and the finding is revisited. The shrunk
sequences themselves are ``machine-*`` scenarios of the writer-certification corpus (test_machine.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

from conformance.payload import rows
from reference import api as ref
from reference.table import Dataset

pytestmark = pytest.mark.interop

WRITERS = {"pylance": lance, "reference": ref}


def base_ids(uri: str) -> list[int | None]:
    return [f.metadata.files[0].base_id for f in lance.dataset(uri).get_fragments()]


def data_files(directory: Path) -> int:
    return len(list((directory / "data").glob("*.lance")))


def tagged_clone(mod: Any, src: Path, clone: Path) -> None:
    mod.write_dataset(rows(0, 2), str(src))
    mod.dataset(str(src)).tags.create("t", 1)
    mod.dataset(str(src)).shallow_clone(str(clone), "t")


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("all_bases", [True, False])
def test_f027_base_zero_takes_its_turn_in_the_writing_root(tmp_path: Path, writer: str, all_bases: bool) -> None:
    """F-027: in the target_all_bases rotations, base id 0 (the clone's source) stands for the clone's own
    root, so nothing is written into the source (CLONE-003). The reference writer wrote these files into the
    source until the machine found it."""
    mod = WRITERS[writer]
    src, clone = tmp_path / "src", tmp_path / "clone"
    tagged_clone(mod, src, clone)
    mod.dataset(str(clone)).add_bases([mod.DatasetBasePath(str(tmp_path / "b1"), name="b1")])
    mod.write_dataset(rows(10, 6), str(clone), mode="append", target_all_bases=all_bases, max_rows_per_file=1)
    want = [None, None, 1] * 2 if all_bases else [None, 1] * 3
    assert base_ids(str(clone))[1:] == want
    assert data_files(src) == 1
    assert lance.dataset(str(clone)).to_table().num_rows == 8


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_f027_a_clone_of_a_clone_writes_into_its_source(tmp_path: Path, writer: str) -> None:
    """F-027: the intermediate clone registers as base 1, not 0, and is written into like any base: a write
    to the second clone adds files under the first clone's root (CLONE-003 breached, by pylance and by the
    reference, which mirrors the rotation)."""
    mod = WRITERS[writer]
    src, c1, c2 = tmp_path / "src", tmp_path / "c1", tmp_path / "c2"
    tagged_clone(mod, src, c1)
    mod.write_dataset(rows(5, 1), str(c1), mode="append")
    mod.dataset(str(c1)).tags.create("t2", 2)
    mod.dataset(str(c1)).shallow_clone(str(c2), "t2")
    assert {k: v.path for k, v in lance.dataset(str(c2)).base_paths().items()} == {0: str(src), 1: str(c1)}
    before = data_files(c1)
    mod.write_dataset(rows(10, 3), str(c2), mode="append", target_all_bases=True, max_rows_per_file=1)
    assert base_ids(str(c2))[-3:] == [None, None, 1]
    assert data_files(c1) == before + 1  # a file of c2's, in its source's data/
    assert lance.dataset(str(c2)).to_table().num_rows == 6


def test_f027_targeting_base_zero_by_path(tmp_path: Path) -> None:
    """F-027: named explicitly (by path), base 0 is where pylance writes the file, but the fragment records no
    base_id, so the version cannot be read; the reference records base 0 (readable, and CLONE-003 is the
    caller's choice)."""
    for writer, mod in WRITERS.items():
        src, clone = tmp_path / writer / "src", tmp_path / writer / "clone"
        tagged_clone(mod, src, clone)
        mod.write_dataset(rows(10, 1), str(clone), mode="append", target_bases=[str(src)])
        assert data_files(src) == 2  # written into the source in both cases
        if writer == "pylance":
            assert base_ids(str(clone))[-1] is None
            with pytest.raises(pa.lib.ArrowInvalid, match="Not found: " + str(clone / "data")):
                lance.dataset(str(clone)).to_table()
        else:
            assert base_ids(str(clone))[-1] == 0
            assert lance.dataset(str(clone)).to_table().num_rows == 3


def test_f028_a_second_unnamed_base_is_refused(tmp_path: Path) -> None:
    """F-028: names are optional (Storage Layout spec "BasePath Message"); pylance compares them as optionals, so a
    second
    unnamed base "conflicts" with the first, and the refusal leaves a transaction file behind (F-020)."""
    root = tmp_path / "pyl"
    lance.write_dataset(rows(0, 1), str(root), initial_bases=[lance.DatasetBasePath(str(tmp_path / "b1"))])
    txns = len(os.listdir(root / "_transactions"))
    with pytest.raises(ValueError, match="Conflict detected: Base path with name 'None'"):
        lance.dataset(str(root)).add_bases([lance.DatasetBasePath(str(tmp_path / "b2"))])
    assert len(os.listdir(root / "_transactions")) == txns + 1
    ours = tmp_path / "ref"
    ref.write_dataset(rows(0, 1), str(ours), initial_bases=[ref.DatasetBasePath(str(tmp_path / "b1"))])
    ref.dataset(str(ours)).add_bases([ref.DatasetBasePath(str(tmp_path / "b2"))])
    assert sorted(b.path for b in Dataset(str(ours)).snapshot().bases) == [str(tmp_path / "b1"), str(tmp_path / "b2")]
    assert lance.dataset(str(ours)).to_table().num_rows == 1


def test_f029_target_all_bases_false_without_a_base(tmp_path: Path) -> None:
    """F-029: with no base registered, pylance refuses ``target_all_bases=False``; the reference writes to the
    root (as with no targets at all)."""
    with pytest.raises(OSError, match="target_all_bases found no registered bases"):
        lance.write_dataset(rows(0, 2), str(tmp_path / "pyl"), target_all_bases=False)
    ref.write_dataset(rows(0, 2), str(tmp_path / "ref"), target_all_bases=False)
    assert base_ids(str(tmp_path / "ref")) == [None]


def test_f030_deep_clone_from_a_file_uri_dataset_root_base(tmp_path: Path) -> None:
    """F-030: files in a dataset-root base registered as ``file:///...`` read fine, but pylance's deep clone
    cannot copy them ("contained empty path segment"); the reference's can."""
    for writer, mod in WRITERS.items():
        src = tmp_path / writer / "src"
        mod.write_dataset(rows(0, 2), str(src), target_bases=["r"],
                          initial_bases=[mod.DatasetBasePath(f"file://{tmp_path / writer / 'r'}", name="r",
                                                             is_dataset_root=True)])
        assert lance.dataset(str(src)).to_table().num_rows == 2
        with pytest.raises(OSError, match="contained empty path segment"):
            lance.dataset(str(src)).deep_clone(str(tmp_path / writer / "pyl-deep"), 1)
        ref.dataset(str(src)).deep_clone(str(tmp_path / writer / "ref-deep"), 1)
        assert lance.dataset(str(tmp_path / writer / "ref-deep")).to_table().num_rows == 2


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_f031_cleanup_of_a_branch_deletes_what_its_child_wrote_into_it(tmp_path: Path, writer: str) -> None:
    """F-031: a branch of a branch writes with ``target_all_bases``, so one file lands in its parent branch's
    ``data/`` (F-027). A cleanup of the parent with ``delete_unverified`` and its fork version retained:
    pylance's deletes that file (it reads only branches forked from old versions) and the child can no longer
    be read (GC-001 breached); the reference's consults every descendant and keeps it. Both writers wrote the
    history, so each cleanup runs on its own writer's layout."""
    mod = WRITERS[writer]
    root = tmp_path / "ds"
    mod.write_dataset(rows(0, 1), str(root))
    mod.dataset(str(root)).create_branch("f1", 1)
    mod.dataset(str(root)).create_branch("f2", ("f1", 1))
    child = root / "tree" / "f2"
    mod.write_dataset(rows(1, 3), str(child), mode="append", target_all_bases=True, max_rows_per_file=1)
    parent = root / "tree" / "f1"
    assert data_files(parent) == 1  # the child's third file, written into its parent's root (F-027)
    mod.dataset(str(parent)).cleanup_old_versions(retain_versions=1, delete_unverified=True)
    if writer == "pylance":
        assert data_files(parent) == 0
        with pytest.raises((OSError, ValueError), match="Not found"):  # ArrowInvalid is a ValueError
            lance.dataset(str(child)).to_table()
    else:
        assert data_files(parent) == 1
        assert lance.dataset(str(child)).to_table().num_rows == 4
