"""Relocation: "change 5 strings, not 10 million" (the multi-base post; Storage Layout spec "Dataset Portability";
docs/lance-format.md §10.4).

A multi-base dataset (the root, three non-root bases and one dataset-root base; several versions, a
deletion, a tag), written once by the reference and once by pylance 14.0.2, is copied base by base to
new directories; the COPIED root is opened and every base is moved to its copy with
``reference.relocate``. What must hold:

* pylance and the reference read the rows the test's model expects at every version that existed
  before (while the originals still exist) and at the new version, also after the originals are gone;
* the relocation adds exactly one manifest under ``_versions/`` and one transaction under
  ``_transactions/`` and rewrites the version hint; nothing else on storage changes;
* the new manifest differs from the previous one only in ``base_paths`` paths (besides what every
  commit stamps: version, timestamp, transaction file name, writer);
* the bytes that change do not grow with the number of fragments (10 vs 200 fragments).

``adopt_from`` covers a copied dataset whose branches' bases point into its own old root.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from conformance_kit import file_digests, local_manifest_file, without_stamps_and_base_paths

from conformance.payload import expected_rows, rows
from reference import ops, refs
from reference.commit import load_transaction
from reference.errors import BaseNotCopied, ValidationError
from reference.layout import manifest_name
from reference.ops import DatasetBasePath
from reference.read import read_snapshot
from reference.relocate import RELOCATE_PROPERTY, relocate
from reference.table import Dataset

pytestmark = pytest.mark.interop

BASE_NAMES = ("p1", "p2", "p3", "pr")  # pr is a dataset-root base



def check_reads(uri: str, versions: dict[int, list[int]], main: str | None = None,
                branch: str | None = None) -> None:
    """pylance (by URI, and by ``checkout_version((branch, v))`` for a branch) and the reference read the
    model's rows at each of these versions; pylance's validate() passes."""
    reference = Dataset(uri)
    for version, ids in versions.items():
        want = expected_rows(ids)
        assert read_snapshot(reference.snapshot(version), reference.storage).to_pylist() == want, (uri, version)
        ds = lance.dataset(uri, version=version)
        assert ds.to_table().to_pylist() == want, (uri, version)
        ds.validate()
        if branch is not None:
            assert lance.dataset(main).checkout_version((branch, version)).to_table().to_pylist() == want


# --- the two builders ------------------------------------------------------------------------------------


def build_with_reference(work: Path) -> dict[int, list[int]]:
    """v1 create over root + 4 bases, v2 append to p3, v3 delete, v4 append to pr, v5 append to the root;
    tag ``t`` -> 2. Returns the model."""
    root = str(work / "ds")
    bases = [DatasetBasePath(str(work / n), name=n, is_dataset_root=n == "pr") for n in BASE_NAMES]
    ops.create(root, rows(0, 10), initial_bases=bases, target_all_bases=True, max_rows_per_file=2)
    ds = Dataset(root)
    ops.append(ds, rows(10, 3), target_bases=["p3"])
    ops.delete(ds, "id = 3 OR id = 11")
    ops.append(ds, rows(13, 2), target_bases=["pr"])
    ops.append(ds, rows(15, 1))
    refs.create_tag(ds, "t", 2)
    return _model()


def build_with_pylance(work: Path) -> dict[int, list[int]]:
    """The same versions written by pylance, plus a BTREE index (v6) whose files stay in the root."""
    root = str(work / "ds")
    bases = [lance.DatasetBasePath(str(work / n), name=n, is_dataset_root=n == "pr") for n in BASE_NAMES]
    lance.write_dataset(rows(0, 10), root, initial_bases=bases, target_all_bases=True, max_rows_per_file=2)
    lance.write_dataset(rows(10, 3), root, mode="append", target_bases=["p3"])
    lance.dataset(root).delete("id = 3 OR id = 11")
    lance.write_dataset(rows(13, 2), root, mode="append", target_bases=["pr"])
    lance.write_dataset(rows(15, 1), root, mode="append")
    lance.dataset(root).tags.create("t", 2)
    lance.dataset(root).create_scalar_index("id", "BTREE")
    model = _model()
    model[6] = model[5]
    return model


def _model() -> dict[int, list[int]]:
    v1 = list(range(10))
    v2 = [*v1, 10, 11, 12]
    v3 = [i for i in v2 if i not in (3, 11)]
    v4 = [*v3, 13, 14]
    return {1: v1, 2: v2, 3: v3, 4: v4, 5: [*v4, 15]}


BUILDERS: dict[str, Callable[[Path], dict[int, list[int]]]] = {
    "reference": build_with_reference,
    "pylance": build_with_pylance,
}


# --- moving every base ----------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["name", "id", "path"])
@pytest.mark.parametrize("writer", sorted(BUILDERS))
def test_relocate_copied_bases(tmp_path: Path, writer: str, key: str) -> None:
    old = tmp_path / "old"
    new = tmp_path / "new"
    model = BUILDERS[writer](old)
    latest = max(model)
    for name in ("ds", *BASE_NAMES):
        shutil.copytree(old / name, new / name)
    root = str(new / "ds")
    copied = Dataset(root)
    # the copied root still points at the original bases: every old version reads through them
    assert copied.versions() == sorted(model)
    check_reads(root, model)

    before = file_digests(*(new / n for n in ("ds", *BASE_NAMES)))
    previous = copied.snapshot()
    ids_by_name = {b.name: b.id for b in previous.bases}
    assert set(ids_by_name) == set(BASE_NAMES)
    keys: dict[str, int | str] = {
        n: {"name": n, "id": ids_by_name[n], "path": str(old / n)}[key] for n in BASE_NAMES  # type: ignore[misc]
    }
    result = relocate(copied, {keys[n]: str(new / n) for n in BASE_NAMES})
    assert result.version == latest + 1
    model[result.version] = model[latest]

    # storage: one manifest, one transaction, the hint rewritten; nothing else
    after = file_digests(*(new / n for n in ("ds", *BASE_NAMES)))
    txn_name = copied.snapshot().manifest.transaction_file
    added = {os.path.join(root, "_versions", manifest_name(result.version, previous.naming)),
             os.path.join(root, "_transactions", txn_name)}
    assert set(after) - set(before) == added
    assert set(before) - set(after) == set()
    assert {p for p in before if before[p] != after[p]} == {os.path.join(root, "_versions",
                                                                          "latest_version_hint.json")}
    assert result.manifest_uri in added and result.transaction_uri in added

    # the new manifest differs from the previous one only in base paths (and commit stamps)
    prev_file = local_manifest_file(previous.manifest_uri)
    new_file = local_manifest_file(result.manifest_uri)
    assert without_stamps_and_base_paths(new_file.manifest) == without_stamps_and_base_paths(prev_file.manifest)
    assert new_file.index_section == prev_file.index_section
    assert {b.id: b.path for b in new_file.manifest.base_paths} == {ids_by_name[n]: str(new / n) for n in BASE_NAMES}
    assert new_file.manifest.version == result.version
    assert new_file.manifest.writer_version.library == "lancespec"
    txn = load_transaction(copied, result.version)
    assert txn.transaction_properties[RELOCATE_PROPERTY] == "relocate"
    assert {b.id: b.path for b in txn.update_bases.new_bases} == {ids_by_name[n]: str(new / n) for n in BASE_NAMES}
    assert txn.read_version == latest

    # every version reads, old ones through the originals, the new one through the copies
    assert [v["version"] for v in lance.dataset(root).versions()] == sorted(model)
    check_reads(root, model)
    assert lance.dataset(root, version="t").to_table().to_pylist() == expected_rows(model[2])

    # with the originals gone, the new version still reads, in pylance and in the reference
    shutil.rmtree(old)
    check_reads(root, {result.version: model[result.version]})
    # older versions keep naming the original bases (a relocation is a new version; manifests are
    # immutable), so reading them now fails.
    with pytest.raises(pa.lib.ArrowInvalid, match="Not found: " + re.escape(str(old))):
        lance.dataset(root, version=1).to_table()
    if writer == "pylance":  # the index carried over still answers
        assert lance.dataset(root).to_table(filter="id = 7")["id"].to_pylist() == [7]

    # both writers continue on the relocated dataset, into the copied bases
    lance.write_dataset(rows(100, 2), root, mode="append", target_bases=["p1"], max_rows_per_file=1)
    model[result.version + 1] = [*model[result.version], 100, 101]
    version = ops.append(copied, rows(200, 2), target_bases=["pr", "p2"], max_rows_per_file=1).version
    model[version] = [*model[version - 1], 200, 201]
    locations = [f.uri for frag in copied.snapshot().fragments[-4:] for f in frag.files]
    assert [loc.rsplit("/", 1)[0] for loc in locations] == [
        str(new / "p1"), str(new / "p1"), str(new / "pr" / "data"), str(new / "p2"),
    ]
    assert all(os.path.isfile(loc) for loc in locations)
    lance.dataset(root).delete("id = 100 OR id = 0")
    model[version + 1] = [i for i in model[version] if i not in (0, 100)]
    check_reads(root, {v: model[v] for v in model if v >= result.version})


def test_relocate_some_bases_keeps_the_others(tmp_path: Path) -> None:
    """Moving only two bases rewrites only their paths; the others keep theirs."""
    model = build_with_reference(tmp_path / "old")
    for name in ("p1", "pr"):
        shutil.copytree(tmp_path / "old" / name, tmp_path / "new" / name)
    dataset = Dataset(str(tmp_path / "old" / "ds"))
    result = relocate(dataset, {"p1": str(tmp_path / "new" / "p1"), 4: f"file://{tmp_path}/new/pr"})
    paths = {b.name: b.path for b in dataset.snapshot().bases}
    assert paths == {"p1": str(tmp_path / "new" / "p1"), "p2": str(tmp_path / "old" / "p2"),
                     "p3": str(tmp_path / "old" / "p3"), "pr": f"file://{tmp_path}/new/pr"}
    shutil.rmtree(tmp_path / "old" / "p1")
    shutil.rmtree(tmp_path / "old" / "pr")
    check_reads(str(tmp_path / "old" / "ds"), {result.version: model[max(model)]})


def test_relocate_refuses_an_incomplete_copy_and_writes_nothing(tmp_path: Path) -> None:
    """A relocation commits only once the new location holds every file the latest version resolves through
    the moved base with its recorded size (PORT-003: copy, then rewrite the path): a copy with a file cut
    short, and one with a file missing, are refused (BaseNotCopied, naming the base and the location) and
    storage is unchanged; completed, the copy is adopted and every row reads."""
    model = build_with_reference(tmp_path / "old")
    dataset = Dataset(str(tmp_path / "old" / "ds"))
    moved = tmp_path / "new" / "p3"
    shutil.copytree(tmp_path / "old" / "p3", moved)
    copied = sorted(moved.rglob("*.lance"))
    assert len(copied) >= 2
    copied[0].write_bytes(copied[0].read_bytes()[:-1])
    before = file_digests(tmp_path)
    with pytest.raises(BaseNotCopied) as cut_short:
        relocate(dataset, {"p3": str(moved)})
    assert f"first {copied[0]} (" in cut_short.value.message
    assert "bytes, the manifest records" in cut_short.value.message
    copied[1].unlink()
    before = file_digests(tmp_path)
    with pytest.raises(BaseNotCopied) as refused:
        relocate(dataset, {"p3": str(moved)})
    message = refused.value.message
    assert "('p3')" in message and repr(str(moved)) in message and refused.value.where == dataset.uri
    assert "2 of the" in message and "copy the base's files" in message
    assert file_digests(tmp_path) == before
    shutil.rmtree(moved)
    shutil.copytree(tmp_path / "old" / "p3", moved)
    result = relocate(dataset, {"p3": str(moved)})
    shutil.rmtree(tmp_path / "old" / "p3")
    check_reads(str(tmp_path / "old" / "ds"), {result.version: model[max(model)]})


# --- manifest bytes do not grow with the fragments ------------------------------------------------------


def _relocated_size_delta(work: Path, fragments: int) -> int:
    root = str(work / "ds")
    ops.create(root, rows(0, fragments), initial_bases=[DatasetBasePath(str(work / "base"), name="base")],
               target_all_bases=True, max_rows_per_file=1)
    dataset = Dataset(root)
    # a small previous commit, identical for both sizes, so that the previous manifest's inline
    # transaction does not scale with the fragments (the create's Overwrite lists every fragment)
    ops.add_bases(dataset, [DatasetBasePath(str(work / "xtra"), name="xtra")])
    previous = local_manifest_file(dataset.snapshot().manifest_uri)
    assert len(previous.manifest.fragments) == fragments
    shutil.copytree(work / "base", work / "moved")
    result = relocate(dataset, {"base": str(work / "moved")})
    new = local_manifest_file(result.manifest_uri)
    assert without_stamps_and_base_paths(new.manifest) == without_stamps_and_base_paths(previous.manifest)
    # The commit timestamp's nanos are a varint whose width (1-5 bytes) varies from commit to commit;
    # take it out so the comparison measures only what the relocation changed.
    timestamp_delta = new.manifest.timestamp.ByteSize() - previous.manifest.timestamp.ByteSize()
    check_reads(root, {result.version: list(range(fragments))})
    return new.size - previous.size - timestamp_delta


def test_relocation_cost_does_not_grow_with_fragments(tmp_path: Path) -> None:
    # equal-length directory names, so that the base paths themselves have equal lengths
    small = _relocated_size_delta(tmp_path / "f010", 10)
    large = _relocated_size_delta(tmp_path / "f200", 200)
    assert small == large
    assert abs(small) < 200


# --- adopting a copied root whose branches point into it ------------------------------------------------


def _build_branches(old: str, writer: str) -> dict[str | None, dict[int, list[int]]]:
    """main v1-v3; feat forked at v2 (v3 append, v4 delete of an inherited row); feat/sub forked from feat
    v4 (v5 append); tag ``ontag`` -> (feat, 3). Returns the model per branch."""
    if writer == "pylance":
        lance.write_dataset(rows(0, 4), old)
        lance.write_dataset(rows(4, 2), old, mode="append")
        lance.dataset(old).create_branch("feat", 2)
        lance.write_dataset(rows(100, 2), f"{old}/tree/feat", mode="append")
        lance.dataset(f"{old}/tree/feat").delete("id = 0")
        lance.dataset(f"{old}/tree/feat").create_branch("feat/sub")
        lance.write_dataset(rows(200, 1), f"{old}/tree/feat/sub", mode="append")
        lance.write_dataset(rows(6, 1), old, mode="append")
        lance.dataset(old).tags.create("ontag", ("feat", 3))
    else:
        ops.create(old, rows(0, 4))
        main = Dataset(old)
        ops.append(main, rows(4, 2))
        feat = refs.create_branch(main, "feat", 2)
        ops.append(feat, rows(100, 2))
        ops.delete(feat, "id = 0")
        sub = refs.create_branch(feat, "feat/sub")
        ops.append(sub, rows(200, 1))
        ops.append(main, rows(6, 1))
        refs.create_tag(main, "ontag", ("feat", 3))
    feat_v4 = [1, 2, 3, 4, 5, 100, 101]
    return {
        None: {1: list(range(4)), 2: list(range(6)), 3: list(range(7))},
        "feat": {2: list(range(6)), 3: [*range(6), 100, 101], 4: feat_v4},
        "feat/sub": {4: feat_v4, 5: [*feat_v4, 200]},
    }


@pytest.mark.parametrize("writer", ["pylance", "reference"])
def test_adopt_copied_root_with_branches(tmp_path: Path, writer: str) -> None:
    old, new = str(tmp_path / "old"), str(tmp_path / "new")
    model = _build_branches(old, writer)
    shutil.copytree(old, new)
    main = Dataset(new)
    assert [(b.id, b.path) for b in main.branch("feat").snapshot().bases] == [(0, old)]
    # main has no base at all: nothing to adopt
    with pytest.raises(ValidationError, match="nothing to relocate"):
        relocate(main, adopt_from=old)

    before = file_digests(new)
    moved: dict[str, int] = {}
    for name in ("feat", "feat/sub"):
        branch = main.branch(name)
        result = relocate(branch, adopt_from=old + "/")
        moved[name] = result.version
        model[name][result.version] = model[name][max(model[name])]
    feat_bases = {b.id: b.path for b in main.branch("feat").snapshot().bases}
    sub_bases = {b.name: b.path for b in main.branch("feat/sub").snapshot().bases}
    assert feat_bases == {0: new}
    assert sub_bases == {None: new, "feat": f"{new}/tree/feat"}
    after = file_digests(new)
    assert set(before) - set(after) == set()
    assert {os.path.relpath(p, new).split("/_")[0] for p in set(after) - set(before)} == {"tree/feat", "tree/feat/sub"}
    assert len(set(after) - set(before)) == 4  # a manifest and a transaction per branch

    # while the original exists, every version reads
    check_reads(new, model[None])
    for name in ("feat", "feat/sub"):
        check_reads(f"{new}/tree/{name}", model[name], main=new, branch=name)

    shutil.rmtree(old)
    # every version of main, and the relocated version of each branch, read without the original
    check_reads(new, model[None])
    for name in ("feat", "feat/sub"):
        check_reads(f"{new}/tree/{name}", {moved[name]: model[name][moved[name]]}, main=new, branch=name)
    # earlier branch versions keep the original root's path (manifests are immutable)
    with pytest.raises(pa.lib.ArrowInvalid, match="Not found: " + re.escape(old)):
        lance.dataset(f"{new}/tree/feat", version=3).to_table()

    # both writers continue the adopted branches; pylance branches off the relocated one
    lance.write_dataset(rows(300, 1), f"{new}/tree/feat/sub", mode="append")
    sub_latest = [*model["feat/sub"][moved["feat/sub"]], 300]
    version = ops.append(main.branch("feat"), rows(400, 1)).version
    feat_latest = [*model["feat"][moved["feat"]], 400]
    lance.dataset(new).create_branch("feat2", ("feat", version))
    check_reads(f"{new}/tree/feat/sub", {moved["feat/sub"] + 1: sub_latest}, main=new, branch="feat/sub")
    check_reads(f"{new}/tree/feat", {version: feat_latest}, main=new, branch="feat")
    check_reads(f"{new}/tree/feat2", {version: feat_latest}, main=new, branch="feat2")
    assert lance.dataset(new).branches.list()["feat2"]["parent_branch"] == "feat"


def test_copied_root_with_branches_keeps_reading_the_original(tmp_path: Path) -> None:
    """Divergence from Storage Layout spec "Dataset Portability" ("To port a dataset to a new location, simply copy
    all contents from the dataset root directory. The copied dataset will function immediately at the new
    location without any manifest updates"): pylance 14.0.2 records a branch's main root as an absolute
    base path (id 0), so the branches of a copied root silently read the ORIGINAL directory and fail once
    it is gone; main is fine (docs/lance-format.md §10.4). ``relocate(branch, adopt_from=old)`` repairs the
    copy (test_adopt_copied_root_with_branches)."""
    old, new = str(tmp_path / "old"), str(tmp_path / "new")
    lance.write_dataset(rows(0, 2), old).create_branch("feat")
    lance.write_dataset(rows(2, 1), f"{old}/tree/feat", mode="append")
    shutil.copytree(old, new)
    assert [(b.id, b.path) for b in Dataset(new).branch("feat").snapshot().bases] == [(0, old)]
    # while the original exists the copied branch reads, through the original
    assert lance.dataset(f"{new}/tree/feat").to_table().to_pylist() == expected_rows(range(3))
    shutil.rmtree(old)
    assert lance.dataset(new).to_table().to_pylist() == expected_rows(range(2))
    with pytest.raises(pa.lib.ArrowInvalid, match="Not found: " + re.escape(old)):
        lance.dataset(f"{new}/tree/feat").to_table()
    # the reference repairs the copy with one new branch version
    version = relocate(Dataset(new).branch("feat"), adopt_from=old).version
    assert lance.dataset(f"{new}/tree/feat").to_table().to_pylist() == expected_rows(range(3))
    assert lance.dataset(new).checkout_version(("feat", version)).to_table().to_pylist() == expected_rows(range(3))
