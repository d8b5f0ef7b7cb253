"""lancespec's cleanup plan against pylance 14.0.2's ``explain_cleanup_old_versions`` and
``cleanup_old_versions`` on datasets pylance wrote (docs/lance-format.md §13; clone-primitives post for tags
protecting the
source of a shallow clone).

Every scenario is built once under ``{work}/src``. Plans are compared on that original (neither side
deletes anything). Execution runs on two copies, ``{work}/pyl`` (pylance) and ``{work}/lsp``
(lancespec); the copies' manifests are re-pointed at their own directories (branch, clone and multi-base
manifests record absolute base paths, §10.4), with names of equal length so that every file keeps its
size. Where pylance diverges from a seed document, a dedicated test asserts pylance's behaviour.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance import DatasetBasePath

from reference.codec import decode_manifest_file, encode_manifest_file
from reference.gc import CleanupError, CleanupPlan, CleanupPolicy, cleanup, plan_cleanup
from reference.table import Dataset

pytestmark = pytest.mark.interop

POLICIES: dict[str, dict[str, Any]] = {
    "older0": {"older_than": timedelta(0), "error_if_tagged_old_versions": False},
    "older0-unverified": {"older_than": timedelta(0), "error_if_tagged_old_versions": False,
                          "delete_unverified": True},
    "retain2": {"retain_versions": 2, "error_if_tagged_old_versions": False},
    "retain2-unverified": {"retain_versions": 2, "error_if_tagged_old_versions": False,
                           "delete_unverified": True},
}


@dataclass
class Scenario:
    """A dataset (``ds``) with its companions under ``{work}/src``; paths below are relative to it."""

    work: Path
    branches: list[str] = field(default_factory=list)
    tagged_clone: str | None = None
    untagged_clone: str | None = None
    blob_column: str | None = None

    def root(self, copy: str = "src") -> str:
        return str(self.work / copy / "ds")


def _stamp(path: Path, age: timedelta) -> None:
    moment = (datetime.now(UTC) - age).timestamp()
    os.utime(path, (moment, moment))


def _put(path: Path, age: timedelta, data: bytes = b"stray bytes") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    _stamp(path, age)


def _worked_example(root: Path, tag: bool = True) -> lance.LanceDataset:
    """§13 worked example: v1 create (2 fragments), v2 append, v3 and v4 deletes, v5 overwrite, v6
    append, tag keep2 -> v2 (unless ``tag`` is false)."""
    ds = lance.write_dataset(pa.table({"a": list(range(10))}), root, max_rows_per_file=5)
    ds = lance.write_dataset(pa.table({"a": list(range(10, 15))}), root, mode="append")
    ds.delete("a = 1")
    ds.delete("a = 7")
    ds = lance.write_dataset(pa.table({"a": list(range(3))}), root, mode="overwrite")
    ds = lance.write_dataset(pa.table({"a": [9]}), root, mode="append")
    if tag:
        ds.tags.create("keep2", 2)
    return ds


def build_worked(work: Path) -> Scenario:
    _worked_example(work / "src" / "ds")
    return Scenario(work)


def build_strays(work: Path, tag: bool = True) -> Scenario:
    """The worked example plus leftovers of every kind, fresh and 10 days old, and unknown names.

    With the tag, removed versions are newer than the earliest retained one (v2), so every file is
    listed; without it, fresh leftovers in ``_versions/``, ``_transactions/`` and ``_deletions/`` are
    newer than the earliest retained manifest and are not even listed (docs/lance-format.md §13)."""
    root = work / "src" / "ds"
    _worked_example(root, tag)
    stale = timedelta(days=10)
    for age, n in ((timedelta(0), 1), (stale, 2)):
        stem = f"{n:024b}{n:026x}"
        _put(root / "data" / f"{stem}.lance", age)
        _put(root / "data" / stem / f"{'1' * 32}.blob", age)
        _put(root / "_deletions" / f"0-{90 + n}-{n}.arrow", age)
        _put(root / "_transactions" / f"{90 + n}-{uuid.uuid4()}.txn", age)
        _put(root / "_indices" / str(uuid.uuid4()) / "index.idx", age)
        _put(root / "_versions" / f".tmp_{n}", age)
        for unknown in ("data/notes.txt", "_deletions/readme.md", "_transactions/x.lance", "README",
                        "_versions/junk.txn"):
            _put(root / f"{unknown}.{n}", age)
    return Scenario(work)


def build_branch(work: Path) -> Scenario:
    """Branch ``feat`` forked from main's v3 (old once main moves on), a commit on it, and ``sub``
    forked from ``feat``."""
    root = work / "src" / "ds"
    ds = lance.write_dataset(pa.table({"a": list(range(6))}), root, max_rows_per_file=3)
    ds = lance.write_dataset(pa.table({"a": [10]}), root, mode="append")
    ds.delete("a = 1")
    feat = ds.create_branch("feat", 3)
    feat = lance.write_dataset(pa.table({"a": [40]}), feat, mode="append")
    feat.create_branch("sub", ("feat", 4))
    ds = lance.write_dataset(pa.table({"a": [20]}), root, mode="overwrite")
    lance.write_dataset(pa.table({"a": [30]}), root, mode="append")
    return Scenario(work, branches=["feat", "sub"])


def build_multibase(work: Path) -> Scenario:
    """Data files in a non-root base ``b1`` and a root-like base ``b2``, then an overwrite into b1."""
    src = work / "src"
    root = src / "ds"
    bases = [DatasetBasePath(str(src / "b1"), name="b1"),
             DatasetBasePath(str(src / "b2"), name="b2", is_dataset_root=True)]
    ds = lance.write_dataset(pa.table({"a": list(range(6))}), root, max_rows_per_file=3, initial_bases=bases,
                             target_bases=["b1"])
    ds = lance.write_dataset(pa.table({"a": [10]}), root, mode="append", target_bases=["b2"])
    ds = lance.write_dataset(pa.table({"a": [11]}), root, mode="append")
    ds.delete("a = 1")
    lance.write_dataset(pa.table({"a": [20]}), root, mode="overwrite", target_bases=["b1"])
    return Scenario(work)


BLOB_SCHEMA = pa.schema([pa.field("id", pa.int64()), lance.blob_field("blob")])


def _blobs(ids: list[int], sizes: list[int]) -> pa.Table:
    values = [bytes([i % 251]) * size for i, size in zip(ids, sizes, strict=True)]
    return pa.table({"id": ids, "blob": lance.blob_array(values)}, schema=BLOB_SCHEMA)


def build_blob(work: Path) -> Scenario:
    """Blob v2 with inline, packed and dedicated blobs; deletes, then compact_files rewrites the
    fragments into a new data file with new sidecars; a stale stray sidecar sits in the live one's
    sidecar directory."""
    root = work / "src" / "ds"
    lance.write_dataset(_blobs(list(range(6)), [100, 70_000, 4_300_000, 70_000, 10, 4_300_000]), root,
                        data_storage_version="2.2")
    ds = lance.write_dataset(_blobs([6, 7], [80_000, 20]), root, mode="append")
    ds.delete("id = 1")
    ds.delete("id = 2")
    lance.dataset(str(root)).optimize.compact_files(materialize_deletions_threshold=0.0)
    live = lance.dataset(str(root)).get_fragments()[0].metadata.files[0].path
    _put(root / "data" / live.removesuffix(".lance") / f"{'1' * 31}0.blob", timedelta(days=10))
    return Scenario(work, blob_column="blob")


def build_index(work: Path) -> Scenario:
    """A BTREE index, replaced by a second one, then dropped by an overwrite; tag rel -> v3."""
    root = work / "src" / "ds"
    ds = lance.write_dataset(pa.table({"a": list(range(100))}), root, max_rows_per_file=50)
    ds.create_scalar_index("a", "BTREE")
    ds = lance.write_dataset(pa.table({"a": [1000]}), root, mode="append")
    ds.tags.create("rel", 3)
    ds.delete("a < 10")
    ds.create_scalar_index("a", "BTREE", replace=True)
    lance.write_dataset(pa.table({"a": [5]}), root, mode="overwrite")
    return Scenario(work)


def build_clone(work: Path) -> Scenario:
    """Shallow clones of a tagged (rel -> v2) and an untagged (v3) version, each with its own append."""
    src = work / "src"
    root = src / "ds"
    ds = lance.write_dataset(pa.table({"a": list(range(6))}), root, max_rows_per_file=3)
    ds = lance.write_dataset(pa.table({"a": [10, 11]}), root, mode="append")
    ds.tags.create("rel", 2)
    ds.delete("a = 4")
    for name, ref in (("clone_tag", "rel"), ("clone_v3", 3)):
        clone = ds.shallow_clone(str(src / name), ref)
        lance.write_dataset(pa.table({"a": [77]}), clone, mode="append")
    ds = lance.write_dataset(pa.table({"a": [20]}), root, mode="overwrite")
    lance.write_dataset(pa.table({"a": [21]}), root, mode="append")
    return Scenario(work, tagged_clone="clone_tag", untagged_clone="clone_v3")


BUILDERS: dict[str, Callable[[Path], Scenario]] = {
    "worked": build_worked,
    "strays": build_strays,
    "strays-untagged": lambda work: build_strays(work, tag=False),
    "branch": build_branch,
    "multibase": build_multibase,
    "blob": build_blob,
    "index": build_index,
    "clone": build_clone,
}


@pytest.fixture(scope="module")
def scenario_cache(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Scenario]:
    built: dict[str, Scenario] = {}

    def get(name: str) -> Scenario:
        if name not in built:
            built[name] = BUILDERS[name](tmp_path_factory.mktemp(f"gc-{name}"))
        return built[name]

    return get


# --- helpers ---------------------------------------------------------------------------------------------


def explained(root: str, policy: dict[str, Any]) -> tuple[Any, set[tuple[str, str, bool]]]:
    """pylance's explanation and its candidates as ``(kind, root-relative path, unverified)``."""
    explanation = lance.dataset(root).explain_cleanup_old_versions(**policy, include_files=True,
                                                                   max_files=100_000)
    assert not explanation.candidate_files_truncated
    prefix = root.lstrip("/") + "/"
    found = set()
    for c in explanation.candidate_files:
        assert c.path.startswith(prefix), c.path
        found.add((c.kind, c.path[len(prefix):], c.unverified))
    return explanation, found


def planned(root: str, policy: dict[str, Any]) -> CleanupPlan:
    return plan_cleanup(Dataset(root), CleanupPolicy(**policy))


def stats_tuple(stats: Any) -> tuple[int, ...]:
    return (stats.bytes_removed, stats.old_versions, stats.data_files_removed, stats.deletion_files_removed,
            stats.index_files_removed, stats.transaction_files_removed)


def files_under(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file()}


def copy_scenario(scenario: Scenario, name: str) -> Path:
    """Copy ``src`` to ``name`` (same length) and re-point every manifest's base paths at the copy."""
    assert len(name) == len("src")
    src, dst = scenario.work / "src", scenario.work / name
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    old_prefix, new_prefix = str(src) + "/", str(dst) + "/"
    for manifest_path in dst.rglob("*.manifest"):
        decoded = decode_manifest_file(manifest_path.read_bytes(), str(manifest_path))
        manifest = decoded.manifest
        changed = False
        for base in manifest.base_paths:
            if base.path.startswith(old_prefix):
                base.path = new_prefix + base.path[len(old_prefix):]
                changed = True
        if changed:
            st = manifest_path.stat()
            data = encode_manifest_file(manifest, decoded.transaction_bytes, decoded.index_section)
            assert len(data) == st.st_size
            manifest_path.write_bytes(data)
            os.utime(manifest_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return dst


def read_version(root: str, version: int, blob_column: str | None) -> tuple[Any, ...]:
    """Everything a reader sees at ``version``: the rows, and the blob bytes when there is a blob column."""
    ds = lance.dataset(root, version=version)
    rows = ds.to_table().to_pylist()
    if blob_column is None:
        return (rows,)
    blobs = [None if b is None else b.readall() for b in ds.take_blobs(blob_column, indices=list(range(len(rows))))]
    return rows, blobs


def read_latest(root: str) -> list[Any]:
    return list(lance.dataset(root).to_table().to_pylist())


# --- plan == explanation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("scenario_name", sorted(BUILDERS))
def test_plan_matches_explanation(scenario_cache: Callable[[str], Scenario], scenario_name: str,
                                  policy_name: str) -> None:
    scenario = scenario_cache(scenario_name)
    policy = POLICIES[policy_name]
    explanation, theirs = explained(scenario.root(), policy)
    plan = planned(scenario.root(), policy)
    ours = {(c.kind, c.path, c.unverified) for c in plan.candidates}
    assert {(k, p) for k, p, _ in ours} == {(k, p) for k, p, _ in theirs}
    assert ours == theirs  # the unverified flags agree too
    assert stats_tuple(plan.stats) == stats_tuple(explanation.stats)
    assert sorted((b.name, b.referenced_version) for b in plan.referenced_branches) == sorted(
        (b.name, b.referenced_version) for b in explanation.referenced_branches
    )
    assert plan.read_version == explanation.read_version


def test_worked_example_counts(scenario_cache: Callable[[str], Scenario]) -> None:
    """§13: removes manifests v1, v3, v4, v5, transaction files 0-, 2-, 3-, 4-, both deletion files;
    keeps v2 and v6, .txn 1- and 5-, all 5 data files."""
    plan = planned(scenario_cache("worked").root(), POLICIES["older0"])
    assert plan.removed_versions == (1, 3, 4, 5)
    assert plan.retained_versions == (2, 6)
    assert sorted(p.split("-")[0] for p in {c.path for c in plan.candidates if c.kind == "transaction"}) == [
        "_transactions/0", "_transactions/2", "_transactions/3", "_transactions/4"]
    s = plan.stats
    assert (s.old_versions, s.data_files_removed, s.deletion_files_removed, s.transaction_files_removed) == (
        4, 0, 2, 4)


@pytest.mark.parametrize("scenario_name", ["worked", "index", "clone"])
def test_tagged_old_version_is_refused_by_both(scenario_cache: Callable[[str], Scenario],
                                               scenario_name: str) -> None:
    scenario = scenario_cache(scenario_name)
    tags = {name: t["version"] for name, t in lance.dataset(scenario.root()).tags.list().items()}
    with pytest.raises(OSError, match="tagged version"):
        lance.dataset(scenario.root()).explain_cleanup_old_versions(older_than=timedelta(0))
    with pytest.raises(CleanupError) as info:
        planned(scenario.root(), {"older_than": timedelta(0)})
    assert info.value.tags == tags


def test_referenced_branches_and_fork_point(scenario_cache: Callable[[str], Scenario]) -> None:
    """Main's v3 (the fork point of ``feat``, and through it of ``sub``) stays, but, as pylance does, its
    own transaction file is removed (docs/lance-format.md §13 "Transaction files")."""
    root = scenario_cache("branch").root()
    plan = planned(root, POLICIES["older0"])
    assert plan.fork_points == (3,)
    assert plan.retained_versions == (3, 5)
    assert {(b.name, b.referenced_version) for b in plan.referenced_branches} == {("feat", 3), ("sub", 3)}
    v3 = Dataset(root).snapshot(3).manifest
    assert ("transaction", f"_transactions/{v3.transaction_file}") in {(c.kind, c.path) for c in plan.candidates}


# --- execution ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("scenario_name", sorted(BUILDERS))
def test_execution_matches_pylance(scenario_cache: Callable[[str], Scenario], scenario_name: str,
                                   policy_name: str) -> None:
    scenario = scenario_cache(scenario_name)
    policy = POLICIES[policy_name]
    plan = planned(scenario.root(), policy)
    before = {v: read_version(scenario.root(), v, scenario.blob_column) for v in plan.retained_versions}
    branches_before = {b: read_latest(f"{scenario.root()}/tree/{b}") for b in scenario.branches}
    clone_before = read_latest(str(scenario.work / "src" / scenario.tagged_clone)) if scenario.tagged_clone else None

    pyl, lsp = copy_scenario(scenario, "pyl"), copy_scenario(scenario, "lsp")
    lsp_files_before = files_under(lsp)
    their_stats = lance.dataset(scenario.root("pyl")).cleanup_old_versions(**policy)
    our_stats = cleanup(Dataset(scenario.root("lsp")), CleanupPolicy(**policy))

    assert files_under(pyl) == files_under(lsp)
    assert files_under(lsp) == lsp_files_before - {f"ds/{c.path}" for c in plan.candidates}
    assert stats_tuple(our_stats) == stats_tuple(their_stats)
    for copy in ("lsp", "pyl"):
        for version, seen in before.items():  # latest, tagged, fork points
            assert read_version(scenario.root(copy), version, scenario.blob_column) == seen
        for branch, rows in branches_before.items():
            assert read_latest(f"{scenario.root(copy)}/tree/{branch}") == rows
        if scenario.tagged_clone:  # clone-primitives post: a clone made from a tagged version survives
            assert read_latest(str(scenario.work / copy / scenario.tagged_clone)) == clone_before


def test_untagged_clone_source_is_not_protected(scenario_cache: Callable[[str], Scenario]) -> None:
    """The clone-primitives post: cleaning the source "may delete files the clone references" unless the clone was made
    from a
    tagged version. The clone of untagged v3 needs v3's deletion file, which both implementations remove."""
    scenario = scenario_cache("clone")
    for copy in ("pyl", "lsp"):
        dst = copy_scenario(scenario, copy)
        if copy == "pyl":
            lance.dataset(scenario.root(copy)).cleanup_old_versions(**POLICIES["older0"])
        else:
            cleanup(Dataset(scenario.root(copy)), CleanupPolicy(**POLICIES["older0"]))
        assert not list((dst / "ds" / "_deletions").glob("*"))
        with pytest.raises((OSError, ValueError)):
            lance.dataset(str(dst / "clone_v3")).to_table()


# --- pylance behaviour where it departs from the seeds --------------------------------------------------------


def test_finding_orphans_in_registered_bases_are_never_collected(scenario_cache: Callable[[str], Scenario]) -> None:
    """The multi-base post ("Operational clarity"): with explicit bases, garbage collection can "iterate the base
    paths". pylance 14.0.2 never lists a registered base (docs/lance-format.md §13), so data files of removed
    versions that live in a base stay forever; lancespec follows pylance (it never touches bases)."""
    scenario = scenario_cache("multibase")
    pyl = copy_scenario(scenario, "pyl")
    lance.dataset(scenario.root("pyl")).cleanup_old_versions(**POLICIES["older0-unverified"])
    live = {f.path for frag in lance.dataset(scenario.root("pyl")).get_fragments()
            for f in frag.metadata.files}
    b1 = {p.name for p in (pyl / "b1").glob("*.lance")}
    b2 = {p.name for p in (pyl / "b2" / "data").glob("*.lance")}
    orphans = (b1 | b2) - live
    assert len(orphans) == 3  # v1's two files in b1, v2's file in b2: unreferenced, still there


def test_finding_stray_sidecar_in_a_live_sidecar_directory_is_kept(scenario_cache: Callable[[str], Scenario]) -> None:
    """The Blob v2 post ("Fragment -> Blob mapping"): each fragment records which blob_id values it references,
    enabling version-based garbage collection of sidecars. pylance 14.0.2 records no such mapping and keeps
    a sidecar iff its data file is referenced, so an unreferenced 10-day-old ``.blob`` next to a live data
    file survives even with delete_unverified; lancespec does the same."""
    scenario = scenario_cache("blob")
    root = scenario.root()
    live = lance.dataset(root).get_fragments()[0].metadata.files[0].path.removesuffix(".lance")
    stray = f"data/{live}/{'1' * 31}0.blob"
    assert (Path(root) / stray).exists()
    _, theirs = explained(root, POLICIES["older0-unverified"])
    assert stray not in {p for _, p, _ in theirs}
    plan = planned(root, POLICIES["older0-unverified"])
    assert stray in {k.path for k in plan.kept if k.reason == "referenced"}


def test_finding_temporary_manifest_kind(scenario_cache: Callable[[str], Scenario]) -> None:
    """docs/lance-format.md §13 lists five candidate kinds; pylance 14.0.2 reports leftover ``_versions/.tmp*``
    files with a sixth, ``temporary_manifest``, counted in bytes_removed only."""
    _, theirs = explained(scenario_cache("strays").root(), POLICIES["older0"])
    assert {p for k, p, _ in theirs if k == "temporary_manifest"} == {"_versions/.tmp_2"}
