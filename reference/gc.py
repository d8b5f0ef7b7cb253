"""Cleanup (garbage collection) of one dataset root: decide, then delete, what old versions leave behind.

Rules: docs/lance-format.md §13 (which versions are old, the retained working set, which
directories are listed, the per-file rules, the unverified threshold, CleanupStats), §11 (tags and
branches), §12 and clone-primitives post (a shallow clone made from a *tagged* version stays readable because cleanup
never removes the files of tagged versions), §14.5 (blob sidecars ``data/{stem}/{id}.blob`` live and die
with ``data/{stem}.lance``). Where those documents leave a detail open, the behaviour of pylance 14.0.2's
``explain_cleanup_old_versions`` is followed and the rule is stated where it is implemented.

``plan_cleanup`` reads and deletes nothing; ``execute_cleanup`` deletes exactly the planned candidates,
manifests first (a cleanup stopped part-way leaves garbage, never a listed version without its files; F-037);
``cleanup`` does both.

Bases (GC-002, GC-004): only the cleaned root is listed, never a registered base. A base may be reached by
another dataset (a shallow clone inherits its source's storage-only bases, a branch its parent's), and
GC-002 forbids deleting in such a base; reclaiming the bases no other known dataset reaches (GC-004, a
SHOULD) is not done, as pylance 14.0.2 does not do it either (F-007).

Vocabulary used throughout:

* *old*: a version the policy selects (``older_than`` and/or ``retain_versions``, both must agree).
* *working set*: the latest version (and anything at or above it), every version that is not old, and
  every tagged version of this root. Files they reference are *referenced* and never candidates.
* *fork point*: an old version that a descendant branch was forked from. It is kept (its manifest is
  not deleted) while some manifest of that branch still references files of this root; it is not part
  of the working set, so only the files the branch references are protected, and its transaction file
  is removed (pylance 14.0.2, docs/lance-format.md §13 "Transaction files").
* *verified* garbage: a file referenced only by manifests that are being removed (so it is certainly
  not part of a commit in progress).
* *maybe in progress*: an unreferenced, unverified file modified less than ``unverified_threshold``
  (7 days) ago, and ``delete_unverified`` is false: it might belong to a commit still being written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from .codec import BranchRecord, ManifestFile, TagRecord, decode_manifest_file
from .errors import CleanupError
from .layout import (
    DATA_DIR,
    DELETIONS_DIR,
    INDICES_DIR,
    TRANSACTIONS_DIR,
    TREE_DIR,
    VERSIONS_DIR,
    branch_root,
    deletion_file_name,
    index_directory_name,
    parse_manifest_name,
)
from .proto import table_pb2
from .store.base import ObjectInfo
from .store.uri import join, relative_to, same_location
from .table import Dataset, VersionEntry

__all__ = [
    "UNVERIFIED_THRESHOLD",
    "CleanupCandidate",
    "CleanupError",
    "CleanupPlan",
    "CleanupPolicy",
    "CleanupStats",
    "KeptFile",
    "ReferencedBranch",
    "cleanup",
    "execute_cleanup",
    "plan_cleanup",
]

DEFAULT_OLDER_THAN = timedelta(days=14)
"""pylance's default when neither ``older_than`` nor ``retain_versions`` is given (§13)."""

UNVERIFIED_THRESHOLD = timedelta(days=7)
"""An unreferenced, unverified file younger than this may belong to a commit in progress (§13)."""

SCANNED_DIRS = (VERSIONS_DIR, TRANSACTIONS_DIR, DATA_DIR, INDICES_DIR, DELETIONS_DIR)
"""The only directories of the root that are listed (§13): never ``tree/``, ``_refs/``, bases."""

_CUT_DIRS = frozenset({VERSIONS_DIR, TRANSACTIONS_DIR, DELETIONS_DIR})
"""Directories whose listing pylance 14.0.2 limits to files not newer than the earliest retained manifest
(see ``CleanupPlan.listing_cutoff``); ``data/`` and ``_indices/`` are always listed in full."""

CandidateKind = Literal["manifest", "data", "deletion", "transaction", "index", "temporary_manifest"]


# --- policy ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CleanupPolicy:
    """What to clean. Mirrors ``LanceDataset.cleanup_old_versions`` (docs/lance-format.md §13, §16.5).

    * ``older_than``: a version is old only if its manifest timestamp is before ``now - older_than``.
    * ``retain_versions=n``: a version is old only if it is older than the n-th newest version of this
      root; ``0`` (or less) is refused with CleanupError, as pylance refuses it.
    * Both given: a version must satisfy both. Neither given: ``older_than`` becomes 14 days.
    * ``delete_unverified``: also remove unreferenced files that might belong to a commit in progress.
    * ``error_if_tagged_old_versions``: an old tagged version raises CleanupError (nothing is deleted);
      otherwise the tagged version is silently kept.
    * ``now``: the clock (timezone-aware), for tests; default the current UTC time at planning.
    * ``unverified_threshold``: the age below which unverified files are "maybe in progress" (7 days).
    """

    older_than: timedelta | None = None
    retain_versions: int | None = None
    delete_unverified: bool = False
    error_if_tagged_old_versions: bool = True
    now: datetime | None = None
    unverified_threshold: timedelta = UNVERIFIED_THRESHOLD

    def __post_init__(self) -> None:
        if self.retain_versions is not None and self.retain_versions <= 0:
            raise CleanupError(f"retain_versions must be greater than 0, got {self.retain_versions}")
        if self.now is not None and self.now.tzinfo is None:
            raise CleanupError("now must be a timezone-aware datetime")
        if self.unverified_threshold < timedelta(0):
            raise CleanupError("unverified_threshold must not be negative")
        if self.older_than is None and self.retain_versions is None:
            object.__setattr__(self, "older_than", DEFAULT_OLDER_THAN)


# --- results -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CleanupStats:
    """What a cleanup removes, with pylance's CleanupStats field names (§13 "Results").

    ``data_files_removed`` counts blob sidecars too; ``old_versions`` counts removed manifests;
    temporary manifests (``_versions/.tmp*``) count only in ``bytes_removed``. ``failed_deletes`` is
    always 0 here: a failed delete raises and stops the cleanup before any manifest is removed.
    """

    bytes_removed: int = 0
    old_versions: int = 0
    data_files_removed: int = 0
    deletion_files_removed: int = 0
    index_files_removed: int = 0
    transaction_files_removed: int = 0
    failed_deletes: int = 0


@dataclass(frozen=True)
class CleanupCandidate:
    """A file cleanup removes.

    ``kind`` is pylance's CleanupFileKind spelling; ``path`` is relative to the root. ``unverified`` is
    pylance's flag: true when removal rests on age or ``delete_unverified`` rather than on the file
    being referenced by a removed manifest (for data, deletion and index files it is also true for
    verified garbage older than the threshold, as pylance reports it).
    """

    kind: CandidateKind
    uri: str
    path: str
    size: int
    unverified: bool


@dataclass(frozen=True)
class KeptFile:
    """A listed file that stays, and why (``referenced``, ``retained-manifest``, ``maybe-in-progress``,
    ``newer-than-retained`` (not listed, see ``CleanupPlan.listing_cutoff``) or ``unrecognised``)."""

    path: str
    reason: str


@dataclass(frozen=True)
class ReferencedBranch:
    """A descendant branch forked from an old version of this root (pylance's CleanupReferencedBranch).

    ``retained`` tells whether the fork point was kept (some manifest of the branch still references
    files of this root). ``cleanup_candidate`` is always False: this implementation never cascades
    cleanup into branches.
    """

    name: str
    referenced_version: int
    cleanup_candidate: bool = False
    retained: bool = False


@dataclass(frozen=True)
class CleanupPlan:
    """The outcome of ``plan_cleanup``: nothing has been deleted.

    ``removed_versions``: versions whose manifests are candidates. ``retained_versions``: every other
    version of this root (working set and kept fork points). ``fork_points``: the kept fork points.
    ``listing_cutoff``: files of ``_versions/``, ``_transactions/`` and ``_deletions/`` modified after
    it were not considered (None: everything was considered).
    """

    root: str
    read_version: int
    branch: str | None
    policy: CleanupPolicy
    now: datetime
    removed_versions: tuple[int, ...]
    retained_versions: tuple[int, ...]
    tagged_versions: tuple[int, ...]
    fork_points: tuple[int, ...]
    candidates: tuple[CleanupCandidate, ...]
    kept: tuple[KeptFile, ...]
    referenced_branches: tuple[ReferencedBranch, ...]
    listing_cutoff: datetime | None
    stats: CleanupStats = field(default_factory=CleanupStats)


# --- reference sets ----------------------------------------------------------------------------------


@dataclass
class _References:
    """Root-relative keys of the files a set of manifests references.

    As pylance does, keys are built from the recorded names alone (``data/{path}``,
    ``_deletions/{name}``, ``_transactions/{name}``, index uuid) whatever base the file lives in: a file
    in another base can never be listed here, so recording it is harmless.
    """

    data: set[str] = field(default_factory=set)
    deletions: set[str] = field(default_factory=set)
    transactions: set[str] = field(default_factory=set)
    index_uuids: set[str] = field(default_factory=set)

    def add_manifest(self, manifest_file: ManifestFile) -> None:
        manifest = manifest_file.manifest
        for fragment in manifest.fragments:
            for data_file in fragment.files:
                self.data.add(_data_key(data_file.path))
            if fragment.HasField("deletion_file"):
                self.deletions.add(_deletion_key(fragment))
        if manifest.transaction_file:
            self.transactions.add(f"{TRANSACTIONS_DIR}/{manifest.transaction_file}")
        for index in _indices(manifest_file):
            self.index_uuids.add(index_directory_name(index.uuid.uuid))


def _data_key(path: str) -> str:
    return f"{DATA_DIR}/{path}"


def _deletion_key(fragment: table_pb2.DataFragment) -> str:
    d = fragment.deletion_file
    return f"{DELETIONS_DIR}/{deletion_file_name(fragment.id, d.read_version, d.id, d.file_type)}"


def _indices(manifest_file: ManifestFile) -> Sequence[table_pb2.IndexMetadata]:
    section = manifest_file.index_section
    return list(section.indices) if section is not None else []


# --- versions ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Version:
    entry: VersionEntry
    manifest_file: ManifestFile

    @property
    def number(self) -> int:
        return self.entry.version

    @property
    def timestamp(self) -> datetime:
        stamp = self.manifest_file.manifest.timestamp
        micros = (stamp.seconds * 1_000_000_000 + stamp.nanos) // 1000
        return datetime.fromtimestamp(0, tz=UTC) + timedelta(microseconds=micros)


def _read_versions(dataset: Dataset, root: str) -> list[_Version]:
    entries = Dataset(root, dataset.storage).version_entries()
    return [_Version(entry, decode_manifest_file(dataset.storage.get(entry.uri), entry.uri)) for entry in entries]


def _is_old(version: _Version, policy: CleanupPolicy, now: datetime, before_version: int | None) -> bool:
    """§13: old iff (timestamp < now - older_than, when set) and (version < before_version, when set)."""
    return ((policy.older_than is None or version.timestamp < now - policy.older_than)
            and (before_version is None or version.number < before_version))


def _before_version(numbers: Sequence[int], retain: int | None) -> int | None:
    """The n-th newest version (retain_versions=n); with n or fewer versions, the oldest one."""
    if retain is None or not numbers:
        return None
    return numbers[0] if len(numbers) <= retain else numbers[len(numbers) - retain]


# --- refs and branches -------------------------------------------------------------------------------


def _main_dataset(dataset: Dataset, branch: str | None) -> Dataset:
    """The main root's Dataset, where tags and branch records are read (§11); ``branch``: the one this root's
    latest manifest records (``Manifest.branch``), as pylance decides it."""
    if branch is None or dataset.main_root != dataset.uri:
        return dataset.main()
    suffix = f"/{TREE_DIR}/{branch}"
    if dataset.uri.endswith(suffix):
        return Dataset(dataset.uri[: -len(suffix)], dataset.storage)
    raise CleanupError(
        f"this root belongs to branch {branch!r} but its main root cannot be located "
        f"(expected the root to end with {suffix!r}); tags and branches could not be honoured",
        dataset.uri,
    )


def _lineages(branches: Mapping[str, BranchRecord]) -> dict[str, tuple[tuple[int, str], ...]]:
    """Each branch's lineage: ``[(fork version, branch id)]`` from the top-level branch down.

    Taken from ``identifier.version_mapping`` when the record has one (pylance 14.0.2 writes it);
    otherwise built from the ``parentBranch``/``parentVersion`` chain with branch names as ids.
    """
    out: dict[str, tuple[tuple[int, str], ...]] = {}

    def lineage(name: str, depth: int) -> tuple[tuple[int, str], ...]:
        if name in out:
            return out[name]
        record = branches[name]
        if record.version_mapping:
            found = tuple(record.version_mapping)
        elif depth > len(branches) or record.parent_branch is None or record.parent_branch not in branches:
            found = ((record.parent_version, name),)
        else:
            found = (*lineage(record.parent_branch, depth + 1), (record.parent_version, name))
        out[name] = found
        return found

    for name in branches:
        lineage(name, 0)
    return out


def _descendants(branch: str | None, branches: Mapping[str, BranchRecord]) -> list[tuple[str, int]]:
    """``(branch name, version of this root it depends on)`` for every branch below this root.

    A branch forked from this root (``parentBranch`` = this branch) depends on its ``parentVersion``;
    a branch of such a branch depends on the version its top ancestor below this root was forked from
    (pylance reports both, e.g. ``feat`` and ``feat``'s child ``sub`` at the same main version).
    """
    lineages = _lineages(branches)
    if branch is not None and branch not in lineages:
        return []  # this branch's record is gone: its descendants cannot be told apart
    own = lineages[branch] if branch is not None else ()
    found = []
    for name, lineage in sorted(lineages.items()):
        if name == branch or len(lineage) <= len(own) or lineage[: len(own)] != own:
            continue
        found.append((name, lineage[len(own)][0]))
    return found


def _branch_references(dataset: Dataset, main_root: str, branch: str, root: str,
                       refs: _References) -> bool:
    """Add to ``refs`` the files of ``root`` that manifests of ``branch`` reference through a base whose
    path is ``root``; return whether there was any (then the fork point stays)."""
    referenced = False
    for version in _read_versions(dataset, branch_root(main_root, branch)):
        manifest = version.manifest_file.manifest
        here = {b.id for b in manifest.base_paths if same_location(b.path, root)}
        if not here:
            continue
        for fragment in manifest.fragments:
            for data_file in fragment.files:
                if data_file.HasField("base_id") and data_file.base_id in here:
                    refs.data.add(_data_key(data_file.path))
                    referenced = True
            if fragment.HasField("deletion_file"):
                d = fragment.deletion_file
                if d.HasField("base_id") and d.base_id in here:
                    refs.deletions.add(_deletion_key(fragment))
                    referenced = True
        for index in _indices(version.manifest_file):
            if index.HasField("base_id") and index.base_id in here:
                refs.index_uuids.add(index_directory_name(index.uuid.uuid))
                referenced = True
    return referenced


def _tag_error(tags: Mapping[str, TagRecord], branch: str | None, old_tagged: set[int],
               where: str) -> CleanupError:
    named = {
        name: t.version for name, t in sorted(tags.items()) if t.branch == branch and t.version in old_tagged
    }
    listing = ", ".join(f'"{name}": {version}' for name, version in named.items())
    return CleanupError(
        f"{len(named)} tagged version(s) have been marked for cleanup. Either set "
        "`error_if_tagged_old_versions=false` or delete the following tag(s) to enable cleanup: "
        f"{{{listing}}}",
        where,
        named,
    )


# --- per-file rules ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rules:
    referenced: _References
    verified: _References
    policy: CleanupPolicy
    unverified_before: datetime

    def classify(self, rel: str, info: ObjectInfo) -> tuple[CandidateKind, bool] | str:
        """``(kind, unverified)`` for a candidate, else the reason the file stays (§13 per-file rules)."""
        in_progress = not self.policy.delete_unverified and info.last_modified >= self.unverified_before
        parts = rel.split("/")
        top, name = parts[0], parts[-1]
        ext = name.rsplit(".", 1)[-1] if "." in name else ""
        if rel.startswith(f"{VERSIONS_DIR}/.tmp"):
            # A staging file of an unfinished commit: removed unless it may still be in use.
            return "maybe-in-progress" if in_progress else ("temporary_manifest", True)
        if top == INDICES_DIR and len(parts) >= 2:
            # Everything under _indices/{uuid}/ goes with the index uuid.
            return self._by_reference("index", parts[1], self.referenced.index_uuids,
                                      self.verified.index_uuids, in_progress)
        if top == DATA_DIR and ext == "lance":
            return self._by_reference("data", rel, self.referenced.data, self.verified.data, in_progress)
        if top == DATA_DIR and ext == "blob":
            # §14.5: a sidecar data/{stem}/{id}.blob is referenced iff data/{stem}.lance is.
            if len(parts) != 3:
                return "unrecognised"
            parent = _data_key(f"{parts[1]}.lance")
            return self._by_reference("data", parent, self.referenced.data, self.verified.data, in_progress)
        if top == DELETIONS_DIR and ext in ("arrow", "bin"):
            return self._by_reference("deletion", rel, self.referenced.deletions, self.verified.deletions,
                                      in_progress)
        if top == TRANSACTIONS_DIR and ext == "txn":
            if rel in self.referenced.transactions:
                return "referenced"
            verified = rel in self.verified.transactions
            if verified or not in_progress:
                return ("transaction", not verified)
            return "maybe-in-progress"
        if top == VERSIONS_DIR and parse_manifest_name(name) is not None:
            return "retained-manifest"
        return "unrecognised"

    @staticmethod
    def _by_reference(kind: CandidateKind, key: str, referenced: set[str], verified: set[str],
                      in_progress: bool) -> tuple[CandidateKind, bool] | str:
        if key in referenced:
            return "referenced"
        if not in_progress:
            return (kind, True)
        if key in verified:
            return (kind, False)
        return "maybe-in-progress"


# --- planning ----------------------------------------------------------------------------------------


def plan_cleanup(dataset: Dataset, policy: CleanupPolicy) -> CleanupPlan:
    """Decide what a cleanup of ``dataset``'s own root removes; delete nothing (docs/lance-format.md §13).

    1. Versions: every manifest of this root is read. The working set is the latest version, every
       version the policy does not select, and every version tagged on this root's branch (tags whose
       ``branch`` equals the branch the latest manifest records). An old tagged version raises
       CleanupError naming the tags when ``error_if_tagged_old_versions``; otherwise it is kept.
    2. Descendant branches (§11.2): the manifests of every branch below this root are read; files of this
       root they reference through a base path equal to this root become referenced (GC-001; pylance
       14.0.2 reads only branches whose fork version here is old, and so can delete what a branch wrote
       into this root: F-031). Where the fork version is old and the branch references files here, that
       version is a kept *fork point* (see the module docstring; pylance does the same, the seed documents
       do not say).
    3. Files: only ``_versions/``, ``_transactions/``, ``data/``, ``_deletions/`` and ``_indices/`` of
       this root are listed; registered bases, ``tree/``, ``_refs/`` and other roots never are. Each
       file is classified by ``_Rules.classify``: referenced files stay; files referenced only by
       removed manifests are verified garbage; unreferenced files older than the unverified threshold,
       or any unreferenced file with ``delete_unverified``, are removed; anything else stays.
       As pylance 14.0.2 does, the listings of ``_versions/``, ``_transactions/`` and ``_deletions/``
       skip files modified after the earliest working-set manifest, unless some removed (or
       fork-point) manifest is newer than that one (then nothing is skipped).
    4. Manifests of old versions that are neither tagged, latest nor kept fork points are candidates.
    """
    now = policy.now if policy.now is not None else datetime.now(UTC)
    root = dataset.uri
    versions = _read_versions(dataset, root)
    if not versions:
        raise CleanupError("no dataset here: _versions/ holds no manifest", root)
    read_version = versions[-1].number
    latest = versions[-1].manifest_file.manifest
    branch = latest.branch if latest.HasField("branch") else None
    main = _main_dataset(dataset, branch)
    tags = main.tags()
    tagged = {t.version for t in tags.values() if t.branch == branch}
    before_version = _before_version([v.number for v in versions], policy.retain_versions)

    working: list[_Version] = []
    old: list[_Version] = []
    old_tagged: set[int] = set()
    for version in versions:
        is_latest = version.number >= read_version
        is_old = _is_old(version, policy, now, before_version)
        if version.number in tagged and is_old and not is_latest:
            old_tagged.add(version.number)
        (working if is_latest or not is_old or version.number in tagged else old).append(version)
    if old_tagged and policy.error_if_tagged_old_versions:
        raise _tag_error(tags, branch, old_tagged, root)

    referenced, verified = _References(), _References()
    for version in working:
        referenced.add_manifest(version.manifest_file)
    for version in old:
        verified.add_manifest(version.manifest_file)

    # Fork points of descendant branches.
    by_number = {v.number: v for v in versions}
    old_numbers = {v.number for v in old}
    referenced_branches: list[ReferencedBranch] = []
    fork_points: set[int] = set()
    for name, fork_version in _descendants(branch, main.branches()):
        # Step 2: every descendant counts, its fork point old or not: a branch may have written files into
        # this root (target_all_bases, F-027) that no manifest here names (GC-001, F-031).
        keeps = _branch_references(dataset, main.uri, name, root, referenced)
        forked_from = by_number.get(fork_version)
        if forked_from is None or not _is_old(forked_from, policy, now, before_version):
            continue
        if keeps and fork_version in old_numbers:
            fork_points.add(fork_version)
        referenced_branches.append(ReferencedBranch(name, fork_version, False, keeps))
    removed = [v for v in old if v.number not in fork_points]

    # The listing cut-off of pylance 14.0.2 (see step 3 above).
    earliest_retained = min(v.timestamp for v in working)
    cutoff: datetime | None = None if any(v.timestamp > earliest_retained for v in old) else earliest_retained

    removed_paths = {f"{VERSIONS_DIR}/{v.entry.uri.rsplit('/', 1)[-1]}": v for v in removed}
    rules = _Rules(referenced, verified, policy, now - policy.unverified_threshold)
    candidates: list[CleanupCandidate] = []
    kept: list[KeptFile] = []
    for directory in SCANNED_DIRS:
        for info in dataset.storage.list(join(root, directory), recursive=True):
            rel = relative_to(info.uri, root)
            if rel is None or rel in removed_paths:
                continue
            if cutoff is not None and directory in _CUT_DIRS and info.last_modified > cutoff:
                kept.append(KeptFile(rel, "newer-than-retained"))
                continue
            verdict = rules.classify(rel, info)
            if isinstance(verdict, str):
                kept.append(KeptFile(rel, verdict))
            else:
                kind, unverified = verdict
                candidates.append(CleanupCandidate(kind, info.uri, rel, info.size, unverified))
    for rel, version in removed_paths.items():
        candidates.append(CleanupCandidate("manifest", version.entry.uri, rel, version.entry.size, False))

    removed_numbers = {v.number for v in removed}
    return CleanupPlan(
        root=root,
        read_version=read_version,
        branch=branch,
        policy=policy,
        now=now,
        removed_versions=tuple(sorted(removed_numbers)),
        retained_versions=tuple(v.number for v in versions if v.number not in removed_numbers),
        tagged_versions=tuple(sorted(tagged & set(by_number))),
        fork_points=tuple(sorted(fork_points)),
        candidates=tuple(candidates),
        kept=tuple(kept),
        referenced_branches=tuple(referenced_branches),
        listing_cutoff=cutoff,
        stats=_stats(candidates),
    )


def _stats(candidates: Sequence[CleanupCandidate]) -> CleanupStats:
    counts = Counter(c.kind for c in candidates)
    return CleanupStats(
        bytes_removed=sum(c.size for c in candidates),
        old_versions=counts["manifest"],
        data_files_removed=counts["data"],
        deletion_files_removed=counts["deletion"],
        index_files_removed=counts["index"],
        transaction_files_removed=counts["transaction"],
    )


# --- execution ---------------------------------------------------------------------------------------


def execute_cleanup(dataset: Dataset, plan: CleanupPlan) -> CleanupStats:
    """Delete the plan's candidates and nothing else; manifests first, oldest first, then every other file.

    A removed version stops being listed before any file it alone references goes, so a delete that fails
    part-way (it raises and stops the run) leaves garbage the next cleanup finds, never a listed version
    whose files are gone. pylance orders them the other way, data files first (F-037); so did this writer
    until the simulator's battery left it in that state under faults (an unmutated run of
    tools/sim_mutation_check.py, seed 504: a data file's DELETE failed four times after others applied,
    and version 26 stayed listed without its files). The plan is refused (CleanupError) if it was made for
    another root or if a version has been committed since it was made (a new commit may reference files the
    plan thought unreferenced).
    """
    if not same_location(plan.root, dataset.uri):
        raise CleanupError(f"the plan was made for {plan.root}, not for this dataset", dataset.uri)
    latest = dataset.latest_version()
    if latest != plan.read_version:
        raise CleanupError(
            f"the dataset moved from version {plan.read_version} to {latest} since the plan was made; "
            "plan again", dataset.uri
        )
    # sorted() is stable: the manifests by version, then every other file in plan order
    for candidate in sorted(plan.candidates, key=lambda c: (c.kind != "manifest", _manifest_version(c.path))):
        dataset.storage.delete(candidate.uri)
    return plan.stats


def _manifest_version(path: str) -> int:
    parsed = parse_manifest_name(path.rsplit("/", 1)[-1])
    return parsed.version if parsed is not None else -1


def cleanup(dataset: Dataset, policy: CleanupPolicy) -> CleanupStats:
    """``plan_cleanup`` then ``execute_cleanup``: pylance's ``cleanup_old_versions`` for one root."""
    return execute_cleanup(dataset, plan_cleanup(dataset, policy))
