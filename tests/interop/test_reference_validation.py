"""Refusals of the reference writer happen before anything is written.

For each refused operation: every file and directory under the dataset root, its bases, its branches
and the clone targets is listed (with a hash of each file's content) before and after, and the two
listings must be identical; the exception is the documented LanceSpecError subclass, its message names
what was wrong and its ``where`` names the location the operation was about. pylance 14.0.2 then still
reads the untouched dataset. Rules: Storage Layout spec "BasePath Message" (unique ids, absolute paths),
docs/lance-format.md §10.2 (bases), §10.3 (targets), §11 (ref names, ref deletion), §12 (clone targets),
``reference.refs`` for the ASCII-only tag rule (spec/findings.md F-006).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from conformance.payload import rows
from reference import clone as clone_ops
from reference import ops, refs
from reference.errors import (
    BaseNotCopied,
    DatasetAlreadyExists,
    InvalidBasePath,
    InvalidRefName,
    LanceSpecError,
    RefAlreadyExists,
    RefInUse,
    SchemaMismatch,
    UnknownTargetBase,
    ValidationError,
)
from reference.ops import DatasetBasePath as Base
from reference.relocate import relocate
from reference.table import Dataset

pytestmark = pytest.mark.interop


@dataclass
class Env:
    """A dataset with two bases, deletions, tags, branches (one with a child, one with a tag) and a clone."""

    tmp: Path
    root: str
    b1: str
    b2: str
    ds: Dataset
    feat: Dataset
    new: str  # a location with no dataset yet
    existing_clone: str


def listing(top: Path) -> dict[str, str]:
    """Every directory and file under ``top``: path -> content hash ("dir" for directories)."""
    out = {}
    for dirpath, dirs, files in os.walk(top):
        for name in dirs:
            out[os.path.join(dirpath, name) + "/"] = "dir"
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as fh:
                out[path] = hashlib.sha256(fh.read()).hexdigest()
    return out


@pytest.fixture
def env(tmp_path: Path) -> Env:
    root, b1, b2 = str(tmp_path / "ds"), str(tmp_path / "b1"), str(tmp_path / "b2")
    ops.create(root, rows(0, 6), initial_bases=[Base(b1, name="b1"), Base(b2, name="b2", is_dataset_root=True)],
               target_bases=["b1", "b2"], max_rows_per_file=2)
    ds = Dataset(root)
    ops.append(ds, rows(6, 2))
    ops.delete(ds, "id = 0")
    refs.create_tag(ds, "t")
    feat = refs.create_branch(ds, "feat")
    ops.append(feat, rows(100, 1))
    refs.create_branch(feat, "feat/sub")
    tagged = refs.create_branch(ds, "tagged")
    refs.create_tag(ds, "ontag", ("tagged", tagged.latest_version()))
    existing_clone = str(tmp_path / "existing_clone")
    clone_ops.shallow_clone(ds, 2, existing_clone)
    (tmp_path / "not_a_dataset").mkdir()
    (tmp_path / "not_a_dataset" / "file.txt").write_bytes(b"x")
    return Env(tmp_path, root, b1, b2, ds, feat, str(tmp_path / "new"), existing_clone)


@dataclass(frozen=True)
class Case:
    """A refused operation: what to run, the exception class, words the message must hold, and where."""

    run: Callable[[Env], object]
    error: type[LanceSpecError]
    words: Callable[[Env], list[str]]
    where: Callable[[Env], str]


def _root(e: Env) -> str:
    return e.root


def _new(e: Env) -> str:
    return e.new


def _create_bases(*bases: Callable[[Env], Base]) -> Callable[[Env], object]:
    return lambda e: ops.create(e.new, rows(0, 2), initial_bases=[b(e) for b in bases])


def _tag_case(name: str) -> Case:
    words = ["tag name", repr(name)] if name else ["tag name is empty"]
    return Case(lambda e: refs.create_tag(e.ds, name), InvalidRefName, lambda e: words, _root)


def _branch_case(name: str, word: str) -> Case:
    return Case(lambda e: refs.create_branch(e.ds, name), InvalidRefName, lambda e: [word], _root)


CASES: dict[str, Case] = {
    # --- bases at create ---
    "create-duplicate-base-ids": Case(
        _create_bases(lambda e: Base(f"{e.tmp}/x", id=1), lambda e: Base(f"{e.tmp}/y", id=1)),
        InvalidBasePath, lambda e: ["base id 1"], _new),
    "create-duplicate-base-names": Case(
        _create_bases(lambda e: Base(f"{e.tmp}/x", name="n"), lambda e: Base(f"{e.tmp}/y", name="n")),
        InvalidBasePath, lambda e: ["'n'"], _new),
    "create-duplicate-base-paths": Case(
        _create_bases(lambda e: Base(f"{e.tmp}/x", name="a"), lambda e: Base(f"{e.tmp}/x", name="b")),
        InvalidBasePath, lambda e: [f"{e.tmp}/x"], _new),
    "create-duplicate-paths-plain-vs-file-uri": Case(
        _create_bases(lambda e: Base(f"{e.tmp}/x", name="a"), lambda e: Base(f"file://{e.tmp}/x", name="b")),
        InvalidBasePath, lambda e: [f"file://{e.tmp}/x"], _new),
    "create-duplicate-paths-trailing-slash": Case(
        _create_bases(lambda e: Base(f"{e.tmp}/x", name="a"), lambda e: Base(f"{e.tmp}/x/", name="b")),
        InvalidBasePath, lambda e: [f"{e.tmp}/x/"], _new),
    "create-relative-base-path": Case(
        _create_bases(lambda e: Base("relative/base", name="r")),
        InvalidBasePath, lambda e: ["'relative/base'", "absolute"], _new),
    "create-empty-base-path": Case(
        _create_bases(lambda e: Base("", name="r")), InvalidBasePath, lambda e: ["''", "absolute"], _new),
    "create-unknown-target-base": Case(
        lambda e: ops.create(e.new, rows(0, 2), initial_bases=[Base(f"{e.tmp}/x", name="x")], target_bases=["nope"]),
        UnknownTargetBase, lambda e: ["'nope'"], _new),
    "create-target-bases-with-target-all-bases": Case(
        lambda e: ops.create(e.new, rows(0, 2), initial_bases=[Base(f"{e.tmp}/x", name="x")], target_bases=["x"],
                             target_all_bases=True),
        ValidationError, lambda e: ["target_all_bases", "target_bases"], _new),
    "create-on-existing-dataset": Case(
        lambda e: ops.create(e.root, rows(0, 2)), DatasetAlreadyExists, lambda e: ["already exists"], _root),
    "create-on-existing-dataset-with-bases": Case(
        lambda e: ops.create(e.root, rows(0, 2), initial_bases=[Base(e.b1, name="b1")], target_bases=["b1"]),
        DatasetAlreadyExists, lambda e: ["already exists"], _root),
    # --- bases on an existing dataset ---
    "add-bases-existing-id": Case(
        lambda e: ops.add_bases(e.ds, [Base(f"{e.tmp}/x", name="x", id=2)]),
        InvalidBasePath, lambda e: ["base id 2"], _root),
    "add-bases-existing-name": Case(
        lambda e: ops.add_bases(e.ds, [Base(f"{e.tmp}/x", name="b1")]), InvalidBasePath, lambda e: ["'b1'"], _root),
    "add-bases-existing-path-as-file-uri": Case(
        lambda e: ops.add_bases(e.ds, [Base(f"file://{e.b2}", name="other")]),
        InvalidBasePath, lambda e: [f"file://{e.b2}"], _root),
    "add-bases-duplicate-within-call": Case(
        lambda e: ops.add_bases(e.ds, [Base(f"{e.tmp}/x", name="x"), Base(f"{e.tmp}/x", name="y")]),
        InvalidBasePath, lambda e: [f"{e.tmp}/x"], _root),
    "add-bases-relative-path": Case(
        lambda e: ops.add_bases(e.ds, [Base("x/y", name="x")]), InvalidBasePath, lambda e: ["'x/y'"], _root),
    "add-bases-empty-path": Case(
        lambda e: ops.add_bases(e.ds, [Base("", name="x")]), InvalidBasePath, lambda e: ["''"], _root),
    "add-bases-nothing": Case(
        lambda e: ops.add_bases(e.ds, []), ValidationError, lambda e: ["at least one base"], _root),
    # --- placement ---
    "append-unknown-target-base": Case(
        lambda e: ops.append(e.ds, rows(10, 2), target_bases=["b1", "nope"]),
        UnknownTargetBase, lambda e: ["'nope'", "'b1'"], _root),
    "append-target-bases-with-target-all-bases": Case(
        lambda e: ops.append(e.ds, rows(10, 2), target_bases=["b1"], target_all_bases=True),
        ValidationError, lambda e: ["target_all_bases"], _root),
    "append-unknown-target-on-branch": Case(
        lambda e: ops.append(e.feat, rows(10, 2), target_bases=["nope"]),
        UnknownTargetBase, lambda e: ["'nope'"], lambda e: f"{e.root}/tree/feat"),
    # --- data ---
    "append-another-schema": Case(
        lambda e: ops.append(e.ds, pa.table({"id": pa.array([1], pa.int32())})),
        SchemaMismatch, lambda e: ["schema", "id: int32"], _root),
    "append-extra-column": Case(
        lambda e: ops.append(e.ds, rows(10, 1).append_column("extra", pa.array([1]))),
        SchemaMismatch, lambda e: ["extra"], _root),
    "delete-both-predicate-and-rows": Case(
        lambda e: ops.delete(e.ds, "id = 1", rows={0: [1]}), ValidationError, lambda e: ["exactly one"], _root),
    "delete-neither-predicate-nor-rows": Case(
        lambda e: ops.delete(e.ds), ValidationError, lambda e: ["exactly one"], _root),
    "delete-rows-unknown-fragment": Case(
        lambda e: ops.delete(e.ds, rows={1: [0], 99: [0]}), ValidationError, lambda e: ["[99]", "version 3"], _root),
    "delete-rows-offset-out-of-range": Case(
        lambda e: ops.delete(e.ds, rows={0: [1], 1: [0], 2: [5]}), ValidationError,
        lambda e: ["fragment 2", "[5]", "out of range"], _root),
    "delete-rows-negative-offset": Case(
        lambda e: ops.delete(e.ds, rows={0: [1], 1: [-1]}), ValidationError,
        lambda e: ["fragment 1", "[-1]", "out of range"], _root),
    # --- tags ---
    **{
        f"tag-name-{label}": _tag_case(name)
        for label, name in [("empty", ""), ("space", "a b"), ("slash", "a/b"), ("leading-dot", ".a"),
                            ("trailing-dot", "a."), ("dotdot", "a..b"), ("lock", "a.lock"),
                            ("non-ascii", "é"), ("non-ascii-mixed", "tagé1")]
    },
    "tag-exists": Case(
        lambda e: refs.create_tag(e.ds, "t", 1), RefAlreadyExists, lambda e: ["'t'", "already exists"],
        lambda e: f"{e.root}/_refs/tags/t.json"),
    "tag-exists-from-branch": Case(
        lambda e: refs.create_tag(e.feat, "ontag"), RefAlreadyExists, lambda e: ["'ontag'"],
        lambda e: f"{e.root}/_refs/tags/ontag.json"),
    # --- branches ---
    # the message names the whole name, or the offending segment of a nested one
    **{
        f"branch-name-{label}": _branch_case(name, word)
        for label, name, word in [
            ("main", "main", "'main' is reserved"), ("leading-slash", "/a", "'/a'"),
            ("double-slash", "a//b", "'a//b'"), ("backslash", "a\\b", repr("a\\b")), ("space", "a b", "'a b'"),
            ("trailing-slash", "a/", "'a/'"), ("dotdot", "a/..b", "'..b'"), ("lock", "x/a.lock", "'a.lock'"),
            ("non-ascii-with-space", "é x", "'é x'"), ("empty", "", "branch name is empty"),
        ]
    },
    "branch-exists": Case(
        lambda e: refs.create_branch(e.ds, "feat", 1), RefAlreadyExists, lambda e: ["'feat'", "already exists"],
        lambda e: f"{e.root}/_refs/branches/feat.json"),
    "nested-branch-exists": Case(
        lambda e: refs.create_branch(e.feat, "feat/sub"), RefAlreadyExists, lambda e: ["'feat/sub'"],
        lambda e: f"{e.root}/_refs/branches/feat%2Fsub.json"),
    "delete-branch-with-child": Case(
        lambda e: refs.delete_branch(e.ds, "feat"), RefInUse, lambda e: ["'feat'", "feat/sub"], _root),
    "delete-branch-with-tag": Case(
        lambda e: refs.delete_branch(e.ds, "tagged"), RefInUse, lambda e: ["'tagged'", "ontag"], _root),
    # --- clones ---
    "shallow-clone-onto-dataset": Case(
        lambda e: clone_ops.shallow_clone(e.ds, 3, e.existing_clone), DatasetAlreadyExists,
        lambda e: ["already holds a dataset"], lambda e: e.existing_clone),
    "deep-clone-onto-dataset": Case(
        lambda e: clone_ops.deep_clone(e.ds, 3, e.existing_clone), DatasetAlreadyExists,
        lambda e: ["already holds a dataset"], lambda e: e.existing_clone),
    "shallow-clone-onto-other-dataset-root": Case(
        lambda e: clone_ops.shallow_clone(Dataset(e.existing_clone), 2, e.root), DatasetAlreadyExists,
        lambda e: ["already holds a dataset"], _root),
    "shallow-clone-onto-itself": Case(
        lambda e: clone_ops.shallow_clone(e.ds, 2, e.root), ValidationError, lambda e: ["onto itself"], _root),
    "deep-clone-onto-itself": Case(
        lambda e: clone_ops.deep_clone(e.ds, 2, e.root + "/"), ValidationError, lambda e: ["onto itself"], _root),
    "clone-branch-onto-main-root": Case(
        lambda e: clone_ops.shallow_clone(e.feat, 3, e.root), ValidationError, lambda e: ["onto itself"], _root),
    "clone-branch-onto-itself": Case(
        lambda e: clone_ops.shallow_clone(e.feat, 3, f"{e.root}/tree/feat"), ValidationError,
        lambda e: ["onto itself"], lambda e: f"{e.root}/tree/feat"),
    # --- relocation ---
    "relocate-unknown-base-name": Case(
        lambda e: relocate(e.ds, {"nope": f"{e.tmp}/moved"}), ValidationError, lambda e: ["'nope'"], _root),
    "relocate-unknown-base-id": Case(
        lambda e: relocate(e.ds, {42: f"{e.tmp}/moved"}), ValidationError, lambda e: ["42"], _root),
    "relocate-to-relative-path": Case(
        lambda e: relocate(e.ds, {"b1": "moved/b1"}), InvalidBasePath, lambda e: ["'moved/b1'", "absolute"], _root),
    "relocate-to-empty-path": Case(
        lambda e: relocate(e.ds, {1: ""}), InvalidBasePath, lambda e: ["''", "absolute"], _root),
    "relocate-onto-another-base": Case(
        lambda e: relocate(e.ds, {"b1": e.b2}), InvalidBasePath, lambda e: [e.b2, "another base"], _root),
    "relocate-onto-another-base-file-uri": Case(
        lambda e: relocate(e.ds, {1: f"file://{e.b2}/"}), InvalidBasePath, lambda e: [f"file://{e.b2}/"], _root),
    "relocate-two-bases-to-one-path": Case(
        lambda e: relocate(e.ds, {"b1": f"{e.tmp}/same", "b2": f"{e.tmp}/same"}), InvalidBasePath,
        lambda e: [f"{e.tmp}/same"], _root),
    "relocate-to-a-location-that-does-not-exist": Case(
        lambda e: relocate(e.ds, {"b1": f"{e.tmp}/moved/b1"}), BaseNotCopied,
        lambda e: ["base 1 ('b1')", f"'{e.tmp}/moved/b1'", "absent", "copy the base's files"], _root),
    "relocate-to-a-location-without-the-base-files": Case(  # the root holds data files, none of b2's
        lambda e: relocate(e.ds, {"b2": e.root}), BaseNotCopied, lambda e: ["('b2')", f"'{e.root}'", "absent"], _root),
    "relocate-nothing-adopted": Case(
        lambda e: relocate(e.ds, adopt_from=f"{e.tmp}/elsewhere"), ValidationError,
        lambda e: ["nothing to relocate"], _root),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_refusal_writes_nothing(name: str, env: Env) -> None:
    case = CASES[name]
    before = listing(env.tmp)
    versions = {uri: Dataset(uri).versions() for uri in (env.root, env.feat.uri, env.existing_clone)}
    with pytest.raises(case.error) as raised:
        case.run(env)
    after = listing(env.tmp)
    assert after == before, {"added": sorted(set(after) - set(before)), "removed": sorted(set(before) - set(after)),
                             "changed": sorted(k for k in before if k in after and before[k] != after[k])}
    exc = raised.value
    assert isinstance(exc, LanceSpecError)
    for word in case.words(env):
        assert word in exc.message, (word, exc.message)
    assert exc.where is not None, f"{type(exc).__name__} names no location: {exc}"
    assert os.path.normpath(exc.where) == os.path.normpath(case.where(env)), exc.where
    assert str(exc).startswith(f"{exc.where}: ")
    assert {uri: Dataset(uri).versions() for uri in versions} == versions
    # pylance still reads the untouched dataset and its tags
    assert lance.dataset(env.root).to_table()["id"].to_pylist() == [1, 2, 3, 4, 5, 6, 7]
    assert set(lance.dataset(env.root).tags.list()) == {"t", "ontag"}


def test_every_case_is_a_validation_error() -> None:
    """Refusals before writing are ValidationErrors (not conflicts, not storage errors)."""
    assert all(issubclass(case.error, ValidationError) for case in CASES.values())


def test_pylance_accepts_a_relative_base_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Divergence from Storage Layout spec "BasePath Message" ("The path field specifies an absolute path
    interpretable by the object store"; also docs/lance-format.md §10.1): pylance 14.0.2 accepts a relative
    base path, at create and in add_bases, records it verbatim and resolves it against the process's
    working directory, at write time and at read time: the dataset reads only from the directory it was
    written from. The reference refuses it before writing (cases create-relative-base-path and
    add-bases-relative-path above)."""
    first, second = tmp_path / "cwd1", tmp_path / "cwd2"
    first.mkdir()
    second.mkdir()
    root = str(tmp_path / "ds")
    monkeypatch.chdir(first)
    ds = lance.write_dataset(rows(0, 2), root, initial_bases=[lance.DatasetBasePath("rel/x", name="a")],
                             target_bases=["a"])
    ds.add_bases([lance.DatasetBasePath("rel2", name="b")])
    assert sorted((b.id, b.path) for b in Dataset(root).head().bases) == [(1, "rel/x"), (2, "rel2")]
    (written,) = os.listdir(first / "rel" / "x")  # the data file went below the working directory
    assert lance.dataset(root).to_table()["id"].to_pylist() == [0, 1]
    monkeypatch.chdir(second)
    with pytest.raises(pa.lib.ArrowInvalid, match="Not found: " + re.escape(f"{second}/rel/x/{written}")):
        lance.dataset(root).to_table()


def test_pylance_accepts_duplicate_base_paths_at_create(tmp_path: Path) -> None:
    """Not a seed rule, a difference to know: pylance 14.0.2 refuses a duplicate path in add_bases
    (docs/lance-format.md §10.2) but accepts one at create, also as ``/x`` beside ``file:///x``; and add_bases
    compares path strings, so ``file:///x`` beside ``/x`` passes there too. The reference refuses all of
    them (cases create-duplicate-base-paths, create-duplicate-paths-plain-vs-file-uri,
    add-bases-existing-path-as-file-uri)."""
    x = str(tmp_path / "x")
    ds = lance.write_dataset(rows(0, 1), str(tmp_path / "a"), initial_bases=[
        lance.DatasetBasePath(x, name="a"), lance.DatasetBasePath(x, name="b"),
        lance.DatasetBasePath(f"file://{x}", name="c")])
    assert sorted((b.id, b.path) for b in ds.base_paths().values()) == [(1, x), (2, x), (3, f"file://{x}")]
    y = str(tmp_path / "y")
    ds = lance.write_dataset(rows(0, 1), str(tmp_path / "b"), initial_bases=[lance.DatasetBasePath(y, name="y")])
    ds.add_bases([lance.DatasetBasePath(f"file://{y}", name="y2")])
    assert sorted(b.path for b in lance.dataset(str(tmp_path / "b")).base_paths().values()) == [y, f"file://{y}"]
    with pytest.raises(ValueError, match="already exists"):
        ds.add_bases([lance.DatasetBasePath(y, name="y3")])
