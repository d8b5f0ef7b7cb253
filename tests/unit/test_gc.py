"""Cleanup planning and execution (reference/gc.py) on tiny hand-written datasets, without pylance.

Manifests are written directly with the codec, data files are fake bytes, and every file and manifest
gets a controlled age relative to an injected clock. Expected outcomes follow docs/lance-format.md §13 (and
§11 tags/branches, §14.5 sidecars, clone-primitives post tags protecting clone sources), not the implementation.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reference.codec import BranchRecord, TagRecord, encode_manifest_file
from reference.errors import LanceSpecError
from reference.gc import (
    CleanupError,
    CleanupPlan,
    CleanupPolicy,
    cleanup,
    execute_cleanup,
    plan_cleanup,
)
from reference.layout import branch_ref_path, deletion_file_name, manifest_name, tag_ref_path
from reference.proto import table_pb2
from reference.store import ObjectInfo, Storage
from reference.table import Dataset

NOW = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
FRESH = timedelta(minutes=5)  # younger than the 7-day unverified threshold
STALE = timedelta(days=8)  # older than it
ZERO = timedelta(0)


def stem(n: int) -> str:
    """A 50-character data-file stem (24 binary digits + 26 hex digits)."""
    return f"{n:024b}{n:026x}"


def lance(n: int) -> str:
    return f"{stem(n)}.lance"


def sidecar(n: int, blob_id: int) -> str:
    return f"{stem(n)}/{format(blob_id, '032b')[::-1]}.blob"


def uuid_bytes(n: int) -> bytes:
    return bytes([n]) * 16


def uuid_text(n: int) -> str:
    h = uuid_bytes(n).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@dataclass
class Frag:
    """A fragment: data files (name or (name, base_id)) and an optional deletion file."""

    id: int
    files: Sequence[str | tuple[str, int]]
    deletion: tuple[int, int] | None = None  # (read_version, id)
    deletion_base: int | None = None


@dataclass
class Root:
    """A dataset root on local disk whose files and manifests get ages relative to NOW."""

    path: Path
    branch: str | None = None
    bases: list[table_pb2.BasePath] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return str(self.path)

    def file(self, rel: str, age: timedelta, data: bytes = b"0123456789") -> str:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        stamp = (NOW - age).timestamp()
        os.utime(target, (stamp, stamp))
        return rel

    def commit(self, version: int, age: timedelta, fragments: Sequence[Frag] = (), *, txn: bool = True,
               indices: Sequence[int] = (), write_files: bool = True) -> str:
        """Write version ``version`` (timestamp NOW - age); its own files get the same age."""
        manifest = table_pb2.Manifest(version=version)
        manifest.timestamp.FromDatetime(NOW - age)
        manifest.base_paths.extend(self.bases)
        if self.branch is not None:
            manifest.branch = self.branch
        for frag in fragments:
            fragment = manifest.fragments.add(id=frag.id, physical_rows=10)
            for entry in frag.files:
                name, base_id = (entry, None) if isinstance(entry, str) else entry
                data_file = fragment.files.add(path=name)
                if base_id is not None:
                    data_file.base_id = base_id
                elif write_files and not (self.path / "data" / name).exists():
                    self.file(f"data/{name}", age)
            if frag.deletion is not None:
                fragment.deletion_file.read_version, fragment.deletion_file.id = frag.deletion
                fragment.deletion_file.num_deleted_rows = 1
                if frag.deletion_base is not None:
                    fragment.deletion_file.base_id = frag.deletion_base
                else:
                    name = deletion_file_name(frag.id, frag.deletion[0], frag.deletion[1], 0)
                    if write_files and not (self.path / "_deletions" / name).exists():
                        self.file(f"_deletions/{name}", age)
        if txn:
            manifest.transaction_file = f"{version - 1}-{version:08d}-0000-0000-0000-000000000000.txn"
            self.file(f"_transactions/{manifest.transaction_file}", age)
        section = None
        if indices:
            section = table_pb2.IndexSection()
            for n in indices:
                section.indices.add(uuid=table_pb2.UUID(uuid=uuid_bytes(n)), name=f"idx{n}")
                if not (self.path / "_indices" / uuid_text(n)).exists():
                    self.file(f"_indices/{uuid_text(n)}/page_data.lance", age)
        return self.file(f"_versions/{manifest_name(version)}", age, encode_manifest_file(manifest, None, section))

    def tag(self, name: str, version: int, branch: str | None = None) -> None:
        self.file(tag_ref_path(name), ZERO, TagRecord(version=version, branch=branch).encode())

    def branch_ref(self, name: str, parent_version: int, parent: str | None = None,
                   mapping: Sequence[tuple[int, str]] = ()) -> None:
        record = BranchRecord(parent_version=parent_version, parent_branch=parent, version_mapping=tuple(mapping))
        self.file(branch_ref_path(name), ZERO, record.encode())

    def files(self) -> set[str]:
        return {str(p.relative_to(self.path)) for p in self.path.rglob("*") if p.is_file()}

    def dataset(self, storage: Storage | None = None) -> Dataset:
        return Dataset(self.uri, storage)


def policy(**kwargs: object) -> CleanupPolicy:
    return CleanupPolicy(now=NOW, **kwargs)  # type: ignore[arg-type]


def paths(plan: CleanupPlan, kind: str | None = None) -> set[str]:
    return {c.path for c in plan.candidates if kind is None or c.kind == kind}


def m(version: int) -> str:
    return f"_versions/{manifest_name(version)}"


@pytest.fixture
def root(tmp_path: Path) -> Root:
    return Root(tmp_path / "ds")


def history(root: Root, ages: Sequence[float]) -> None:
    """One appended fragment (one data file) per version, version i at ``ages[i-1]`` days old."""
    for version, days in enumerate(ages, start=1):
        root.commit(version, timedelta(days=days), [Frag(i, [lance(i)]) for i in range(1, version + 1)])


# --- which versions are old ---------------------------------------------------------------------------


def test_latest_version_is_always_kept(root: Root) -> None:
    history(root, [30, 20, 10])
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO))
    assert plan.removed_versions == (1, 2)
    assert plan.retained_versions == (3,)
    assert m(3) not in paths(plan)

    single = Root(root.path.parent / "single")
    history(single, [100])
    plan = plan_cleanup(single.dataset(), policy(older_than=ZERO, delete_unverified=True))
    assert plan.removed_versions == () and plan.candidates == ()


def test_older_than_selects_by_manifest_timestamp(root: Root) -> None:
    history(root, [30, 20, 10, 1])
    plan = plan_cleanup(root.dataset(), policy(older_than=timedelta(days=15)))
    assert plan.removed_versions == (1, 2)
    assert paths(plan, "manifest") == {m(1), m(2)}
    assert plan.stats.old_versions == 2


def test_retain_versions_keeps_the_newest_n(root: Root) -> None:
    history(root, [30, 20, 10, 1])
    assert plan_cleanup(root.dataset(), policy(retain_versions=2)).removed_versions == (1, 2)
    assert plan_cleanup(root.dataset(), policy(retain_versions=1)).removed_versions == (1, 2, 3)
    assert plan_cleanup(root.dataset(), policy(retain_versions=9)).removed_versions == ()
    # Both given: a version must be old by both rules.
    both = policy(retain_versions=2, older_than=timedelta(days=25))
    assert plan_cleanup(root.dataset(), both).removed_versions == (1,)


def test_default_policy_and_refused_retain_versions() -> None:
    assert CleanupPolicy().older_than == timedelta(days=14)
    assert CleanupPolicy(retain_versions=3).older_than is None
    with pytest.raises(CleanupError, match="retain_versions must be greater than 0, got 0"):
        CleanupPolicy(retain_versions=0)
    assert issubclass(CleanupError, LanceSpecError)


def test_default_policy_cleans_versions_older_than_14_days(root: Root) -> None:
    history(root, [20, 15, 13, 1])
    assert plan_cleanup(root.dataset(), policy()).removed_versions == (1, 2)


# --- tags -------------------------------------------------------------------------------------------------


def test_tagged_old_version_raises_with_the_tag_names(root: Root) -> None:
    history(root, [30, 20, 10])
    root.tag("keep2", 2)
    root.tag("keep2b", 2)
    root.tag("latest", 3)
    before = root.files()
    with pytest.raises(CleanupError, match="2 tagged version") as info:
        cleanup(root.dataset(), policy(older_than=ZERO))
    assert info.value.tags == {"keep2": 2, "keep2b": 2}
    assert root.files() == before


def test_tagged_version_is_kept_with_its_files_and_transaction(root: Root) -> None:
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)])])
    root.commit(2, 20 * DAY, [Frag(1, [lance(1)], deletion=(1, 7))])
    root.commit(3, 10 * DAY, [Frag(2, [lance(2)])])  # overwrite
    root.tag("keep2", 2)
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO, error_if_tagged_old_versions=False))
    assert plan.removed_versions == (1,)
    assert plan.retained_versions == (2, 3)
    assert plan.tagged_versions == (2,)
    assert paths(plan) == {m(1), "_transactions/0-00000001-0000-0000-0000-000000000000.txn"}


def test_tag_on_another_branch_does_not_protect_this_root(root: Root) -> None:
    history(root, [30, 20, 10])
    root.tag("on_feat", 2, branch="feat")
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO))  # no error: the tag is not main's
    assert plan.removed_versions == (1, 2)


# --- branches -----------------------------------------------------------------------------------------------


def _branch(root: Root, name: str, fork_version: int, fragments: Sequence[Frag], age: timedelta,
            mapping: Sequence[tuple[int, str]] = ()) -> Root:
    branch = Root(root.path / "tree" / name, branch=name,
                  bases=[table_pb2.BasePath(id=0, path=root.uri, is_dataset_root=True)])
    branch.commit(fork_version, age, fragments)
    root.branch_ref(name, fork_version, None, mapping)
    return branch


def test_branch_fork_point_is_kept_while_the_branch_references_it(root: Root) -> None:
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)])])
    root.commit(2, 20 * DAY, [Frag(1, [lance(1)]), Frag(2, [lance(2)])])
    root.commit(3, 10 * DAY, [Frag(3, [lance(3)])])  # overwrite
    feat = _branch(root, "feat", 2, [Frag(1, [(lance(1), 0)]), Frag(2, [(lance(2), 0)])], 15 * DAY)
    feat.file("data/" + lance(9), STALE)  # the branch's own garbage: not main's business
    before_feat = feat.files()

    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO))
    assert plan.removed_versions == (1,)
    assert plan.retained_versions == (2, 3)
    assert plan.fork_points == (2,)
    assert [(b.name, b.referenced_version, b.retained) for b in plan.referenced_branches] == [("feat", 2, True)]
    # Kept out of the working set (pylance 14.0.2): v2's own transaction file goes, its data stays.
    assert paths(plan) == {
        m(1),
        "_transactions/0-00000001-0000-0000-0000-000000000000.txn",
        "_transactions/1-00000002-0000-0000-0000-000000000000.txn",
    }
    assert plan.stats.old_versions == 1
    execute_cleanup(root.dataset(), plan)
    assert feat.files() == before_feat
    assert {f"data/{lance(1)}", f"data/{lance(2)}", m(2)} <= root.files()


def test_fork_point_is_not_kept_once_the_branch_no_longer_references_it(root: Root) -> None:
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)])])
    root.commit(2, 10 * DAY, [Frag(2, [lance(2)])])
    _branch(root, "feat", 1, [Frag(5, [lance(5)])], 15 * DAY)  # the branch overwrote everything
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO))
    assert plan.removed_versions == (1,)
    assert [(b.name, b.retained) for b in plan.referenced_branches] == [("feat", False)]
    assert f"data/{lance(1)}" in paths(plan, "data")


def test_fork_point_of_a_branch_of_a_branch_is_kept(root: Root) -> None:
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)])])
    root.commit(2, 10 * DAY, [Frag(2, [lance(2)])])
    _branch(root, "feat", 1, [Frag(1, [(lance(1), 0)])], 25 * DAY, mapping=[(1, "aa")])
    feat_uri = str(root.path / "tree" / "feat")
    sub = Root(root.path / "tree" / "sub", branch="sub", bases=[
        table_pb2.BasePath(id=0, path=root.uri, is_dataset_root=True),
        table_pb2.BasePath(id=1, name="feat", path=feat_uri, is_dataset_root=True),
    ])
    sub.commit(1, 20 * DAY, [Frag(1, [(lance(1), 0)])])
    root.branch_ref("sub", 1, "feat", [(1, "aa"), (1, "bb")])
    # The feat branch is cleaned meanwhile: only sub still references main's v1 files.
    (root.path / "tree" / "feat" / "_versions" / manifest_name(1)).unlink()
    Root(root.path / "tree" / "feat", branch="feat").commit(2, 5 * DAY, [Frag(7, [lance(7)])])
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO))
    assert {(b.name, b.referenced_version, b.retained) for b in plan.referenced_branches} == {
        ("feat", 1, False), ("sub", 1, True)}
    assert plan.fork_points == (1,)
    assert f"data/{lance(1)}" not in paths(plan)


def test_branch_lineage_from_parent_chain_when_records_lack_version_mapping(root: Root) -> None:
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)])])
    root.commit(2, 10 * DAY, [Frag(2, [lance(2)])])
    sub = Root(root.path / "tree" / "sub", branch="sub",
               bases=[table_pb2.BasePath(id=0, path=root.uri, is_dataset_root=True)])
    sub.commit(1, 20 * DAY, [Frag(1, [(lance(1), 0)])])
    root.branch_ref("feat", 1)
    root.branch_ref("sub", 1, "feat")
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO))
    assert plan.fork_points == (1,)


def test_branch_root_is_planned_on_its_own_files_only(root: Root) -> None:
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)])])
    feat = _branch(root, "feat", 1, [Frag(1, [(lance(1), 0)])], 20 * DAY)
    feat.commit(2, 10 * DAY, [Frag(2, [lance(2)])])
    root.tag("feat_v1", 1, branch="feat")
    main_before = {f for f in root.files() if not f.startswith("tree/")}
    with pytest.raises(CleanupError, match="feat_v1"):
        plan_cleanup(Dataset(feat.uri), policy(older_than=ZERO))
    plan = plan_cleanup(root.dataset().branch("feat"), policy(older_than=ZERO, error_if_tagged_old_versions=False))
    assert plan.branch == "feat" and plan.removed_versions == ()
    root.file(tag_ref_path("feat_v1"), ZERO, TagRecord(version=2, branch="feat").encode())
    stats = cleanup(Dataset(feat.uri), policy(older_than=ZERO, delete_unverified=True))
    assert stats.old_versions == 1
    assert {f for f in root.files() if not f.startswith("tree/")} == main_before


# --- per-file rules -----------------------------------------------------------------------------------------


def test_file_shared_by_a_cleaned_and_a_retained_version_is_kept(root: Root) -> None:
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)]), Frag(2, [lance(2)])])
    root.commit(2, 10 * DAY, [Frag(2, [lance(2)])])
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO))
    assert paths(plan, "data") == {f"data/{lance(1)}"}
    assert f"data/{lance(2)}" in {k.path for k in plan.kept if k.reason == "referenced"}
    # Referenced by a removed manifest = verified garbage, removed even though it is young.
    fresh = Root(root.path.parent / "fresh")
    fresh.commit(1, FRESH * 3, [Frag(1, [lance(1)])])
    fresh.commit(2, FRESH * 2, [Frag(2, [lance(2)])])
    plan = plan_cleanup(fresh.dataset(), policy(older_than=ZERO))
    (candidate,) = [c for c in plan.candidates if c.kind == "data"]
    assert candidate.path == f"data/{lance(1)}" and not candidate.unverified


def test_deletion_index_and_transaction_files_follow_their_own_references(root: Root) -> None:
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)], deletion=(1, 11))], indices=[1])
    root.commit(2, 20 * DAY, [Frag(1, [lance(1)], deletion=(2, 12))], indices=[1, 2])
    root.commit(3, 10 * DAY, [Frag(1, [lance(1)], deletion=(2, 12))], indices=[2])
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO))
    assert paths(plan, "deletion") == {"_deletions/1-1-11.arrow"}
    assert paths(plan, "index") == {f"_indices/{uuid_text(1)}/page_data.lance"}
    assert len(paths(plan, "transaction")) == 2
    assert plan.stats.deletion_files_removed == 1 and plan.stats.index_files_removed == 1


def test_unverified_young_files_are_kept_unless_delete_unverified(root: Root) -> None:
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)])])
    root.commit(2, 2 * FRESH, [Frag(1, [lance(1)])])  # metadata files up to its time are listed
    young = {
        root.file(f"data/{lance(5)}", FRESH),
        root.file(f"data/{sidecar(5, 1)}", FRESH),
        root.file(f"_indices/{uuid_text(9)}/index.idx", FRESH),
        root.file("_deletions/3-1-6.bin", 3 * FRESH),
    }
    old = {
        root.file(f"data/{lance(6)}", STALE),
        root.file("_deletions/3-1-5.bin", STALE),
        root.file("_transactions/1-00000000-0000-0000-0000-00000000000a.txn", STALE),
        root.file("_versions/.tmp-stale", STALE),
    }
    root.file("_versions/.tmp-young", 3 * FRESH)
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO))
    assert paths(plan) == old | {m(1), "_transactions/0-00000001-0000-0000-0000-000000000000.txn"}
    assert all(c.unverified for c in plan.candidates if c.path in old)
    assert {k.path for k in plan.kept if k.reason == "maybe-in-progress"} == young | {"_versions/.tmp-young"}
    assert {c.kind for c in plan.candidates if c.path == "_versions/.tmp-stale"} == {"temporary_manifest"}
    assert plan.stats.old_versions == 1  # the staging file counts only in bytes_removed

    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO, delete_unverified=True))
    assert young <= paths(plan)
    assert all(c.unverified for c in plan.candidates if c.path in young)


def test_custom_unverified_threshold(root: Root) -> None:
    history(root, [30, 20])
    root.file(f"data/{lance(5)}", 2 * DAY)
    assert f"data/{lance(5)}" not in paths(plan_cleanup(root.dataset(), policy(older_than=ZERO)))
    short = policy(older_than=ZERO, unverified_threshold=DAY)
    assert f"data/{lance(5)}" in paths(plan_cleanup(root.dataset(), short))


def test_listing_skips_metadata_files_newer_than_the_earliest_retained_manifest(root: Root) -> None:
    history(root, [30, 20, 10])
    after_latest = {root.file("_deletions/0-9-9.arrow", 5 * DAY),
                    root.file("_transactions/9-00000000-0000-0000-0000-000000000009.txn", 5 * DAY)}
    root.file(f"data/{lance(8)}", 5 * DAY)
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO, delete_unverified=True))
    assert plan.listing_cutoff == NOW - 10 * DAY
    assert after_latest <= {k.path for k in plan.kept if k.reason == "newer-than-retained"}
    assert f"data/{lance(8)}" in paths(plan)  # data/ is always listed in full
    # A removed version newer than a retained one (here the tagged v1) lifts the cut-off.
    root.tag("first", 1)
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO, delete_unverified=True,
                                               error_if_tagged_old_versions=False))
    assert plan.listing_cutoff is None
    assert after_latest <= paths(plan)


def test_unknown_names_are_never_touched(root: Root) -> None:
    history(root, [30, 20])
    unknown = {
        root.file("data/notes.txt", STALE),
        root.file("data/a/b/c.blob", STALE),
        root.file("_deletions/readme.md", STALE),
        root.file("_transactions/x.lance", STALE),
        root.file("_versions/latest_version_hint.json", STALE),
        root.file("_versions/stray.txn", STALE),
        root.file("README", STALE),
        root.file(f"misc/{lance(4)}", STALE),
        root.file("_refs/tags/broken.txt", STALE),
    }
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO, delete_unverified=True))
    assert not unknown & paths(plan)
    cleanup(root.dataset(), policy(older_than=ZERO, delete_unverified=True))
    assert unknown <= root.files()


def test_nothing_outside_the_root_is_touched(tmp_path: Path) -> None:
    base = tmp_path / "base"
    root = Root(tmp_path / "ds", bases=[table_pb2.BasePath(id=1, name="b", path=str(base))])
    base_root_like = tmp_path / "rootlike"
    root.bases.append(table_pb2.BasePath(id=2, name="r", path=str(base_root_like), is_dataset_root=True))
    Root(base).file(lance(1), STALE)
    Root(base).file(sidecar(1, 1), STALE)
    Root(base).file(lance(2), STALE)  # unreferenced, old: still not ours
    Root(base_root_like).file(f"data/{lance(3)}", STALE)
    Root(base_root_like).file("_versions/" + manifest_name(1), STALE)
    sibling = Root(tmp_path / "ds-other")
    sibling.file(f"data/{lance(4)}", STALE)
    root.commit(1, 30 * DAY, [Frag(1, [(lance(1), 1)]), Frag(3, [(lance(3), 2)])])
    root.commit(2, 20 * DAY, [Frag(5, [lance(5)])])
    root.file(f"tree/ghost/data/{lance(6)}", STALE)
    root.file("tree/ghost/_versions/" + manifest_name(1), STALE)

    def outside() -> set[str]:
        return {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")
                if p.is_file() and not str(p).startswith(str(root.path) + "/")}

    before_outside = outside()
    before_tree = {f for f in root.files() if f.startswith("tree/")}
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO, delete_unverified=True))
    assert all(c.uri.startswith(root.uri + "/") for c in plan.candidates)
    assert not any(c.path.startswith("tree/") for c in plan.candidates)
    cleanup(root.dataset(), policy(older_than=ZERO, delete_unverified=True))
    assert outside() == before_outside
    assert {f for f in root.files() if f.startswith("tree/")} == before_tree


def test_sidecars_follow_their_data_file(root: Root) -> None:
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)]), Frag(2, [lance(2)])])
    for blob_id in (1, 2):
        root.file(f"data/{sidecar(1, blob_id)}", 30 * DAY)
    root.file(f"data/{sidecar(2, 1)}", 30 * DAY)
    stray_in_live_dir = root.file(f"data/{sidecar(2, 3)}", STALE)
    root.commit(2, 10 * DAY, [Frag(2, [lance(2)])])
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO, delete_unverified=True))
    assert paths(plan, "data") == {f"data/{lance(1)}", f"data/{sidecar(1, 1)}", f"data/{sidecar(1, 2)}"}
    assert plan.stats.data_files_removed == 3
    assert stray_in_live_dir not in paths(plan)
    cleanup(root.dataset(), policy(older_than=ZERO, delete_unverified=True))
    assert f"data/{sidecar(2, 1)}" in root.files() and stray_in_live_dir in root.files()


def test_stats_bytes_and_plan_deletes_nothing(root: Root) -> None:
    history(root, [30, 20, 10])
    before = {p: p.stat().st_mtime for p in root.path.rglob("*")}
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO))
    assert {p: p.stat().st_mtime for p in root.path.rglob("*")} == before
    assert plan.stats.bytes_removed == sum(c.size for c in plan.candidates)
    assert plan.stats.bytes_removed == sum((root.path / c.path).stat().st_size for c in plan.candidates)
    assert plan.stats.transaction_files_removed == 2 and plan.stats.old_versions == 2
    stats = execute_cleanup(root.dataset(), plan)
    assert stats == plan.stats
    assert not any((root.path / c.path).exists() for c in plan.candidates)


# --- execution ----------------------------------------------------------------------------------------------


class RecordingStorage(Storage):
    """A local Storage that records every delete, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.deleted: list[str] = []

    def delete(self, uri: str) -> None:
        self.deleted.append(uri)
        super().delete(uri)

    def list(self, prefix: str, recursive: bool = True) -> Iterator[ObjectInfo]:
        return super().list(prefix, recursive)


def test_manifests_are_deleted_first(root: Root) -> None:
    """A removed version is unlisted before its files go: a cleanup stopped part-way leaves garbage, never a
    listed version whose files are gone (the state of F-037)."""
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)], deletion=(1, 1))], indices=[1])
    root.commit(2, 20 * DAY, [Frag(2, [lance(2)])], indices=[2])
    root.commit(3, 10 * DAY, [Frag(3, [lance(3)])])
    root.file(f"data/{sidecar(1, 1)}", 30 * DAY)
    storage = RecordingStorage()
    plan = plan_cleanup(root.dataset(storage), policy(older_than=ZERO))
    assert storage.deleted == []
    execute_cleanup(root.dataset(storage), plan)
    kinds = ["manifest" if uri.endswith(".manifest") else "other" for uri in storage.deleted]
    assert kinds == ["manifest"] * 2 + ["other"] * 8
    assert storage.deleted[:2] == [f"{root.uri}/{m(1)}", f"{root.uri}/{m(2)}"]
    assert sorted(storage.deleted) == sorted(c.uri for c in plan.candidates)


class FileDeletesFail(RecordingStorage):
    """Every delete of a file that is no manifest fails, as a store that resets them would."""

    def delete(self, uri: str) -> None:
        if not uri.endswith(".manifest"):
            raise LanceSpecError("the store reset the delete", uri)
        super().delete(uri)


def test_a_cleanup_stopped_part_way_leaves_no_listed_version_without_its_files(root: Root) -> None:
    """The delete of a data file fails after the manifests went: versions 1 and 2 are no longer listed, version
    3 is, and every data file is still there (garbage for the next cleanup, not a broken version)."""
    root.commit(1, 30 * DAY, [Frag(1, [lance(1)])])
    root.commit(2, 20 * DAY, [Frag(2, [lance(2)])])
    root.commit(3, 10 * DAY, [Frag(3, [lance(3)])])
    storage = FileDeletesFail()
    plan = plan_cleanup(root.dataset(storage), policy(older_than=ZERO))
    with pytest.raises(LanceSpecError, match="reset the delete"):
        execute_cleanup(root.dataset(storage), plan)
    assert storage.deleted == [f"{root.uri}/{m(1)}", f"{root.uri}/{m(2)}"]
    assert [e.version for e in root.dataset().version_entries()] == [3]
    assert all((root.path / "data" / lance(n)).exists() for n in (1, 2, 3))


def test_execute_refuses_a_stale_plan(root: Root) -> None:
    history(root, [30, 20])
    plan = plan_cleanup(root.dataset(), policy(older_than=ZERO))
    root.commit(3, ZERO, [Frag(1, [lance(1)])])
    with pytest.raises(CleanupError, match="since the plan was made"):
        execute_cleanup(root.dataset(), plan)
    other = Root(root.path.parent / "other")
    history(other, [30, 20])
    with pytest.raises(CleanupError, match="plan was made for"):
        execute_cleanup(other.dataset(), plan_cleanup(root.dataset(), policy(older_than=ZERO)))
    assert m(1) in root.files()


def test_no_manifest_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CleanupError, match="no manifest"):
        plan_cleanup(Dataset(str(tmp_path / "nothing")), policy())
