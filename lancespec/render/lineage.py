"""The lineage of a dataset as a graph model, made only of inspect documents (docs/inspect-json.md).

The input is a list of ``lancespec inspect --json`` documents: the latest version of every root in the
lineage (the main root, each branch root, and each shallow clone's source dataset, recursively) and every
version the diagram shows on its own (``gather`` reads exactly those). The model has:

* one **dataset** per main root, with one **lane** per branch (main first) holding its versions as
  **steps**: a step is one version, or a run of at least ``COLLAPSE_RUN`` consecutive versions that nothing
  pins (no tag, fork, clone source or end of the lane) and that carry the same marks (the same findings, or
  none), shown as one node with its count: a writer whose every version carries the same known divergence
  still draws a long history as a few nodes;
* **tags** on the versions they pin (a tag may pin a branch's version: ``tag_branches``);
* **forks**: a branch's lane starts from the version of its parent it was created from (``branch_forks``);
* **clones**: a root whose first version was committed by a Clone (the clone-primitives post "shallow_clone",
  "deep_clone"): shallow, an edge to the source version, marked when no tag pins it (cleanup may then remove
  what the clone leans on); deep, the source named only, since the clone shares nothing with it;
* **locations**: every root and every registered base path, grouped by bucket (object stores) or by the
  directory below the locations' common parent (local paths), with the count and size of the files each
  shown version resolves into each (Storage Layout spec "File Metadata Base References": a file without a
  base id lives in its own root, one with a base id in that base).
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlparse

from reference.errors import LanceSpecError
from reference.layout import TREE_DIR, branch_root
from reference.store.uri import local_path, relative_to, scheme_of

#: The shortest run of unpinned versions shown as one node; shorter runs are drawn version by version.
COLLAPSE_RUN = 5

Doc = Mapping[str, Any]


#: What a version is marked with (its findings' severities and requirements); empty when unmarked.
Mark = frozenset[str]


@dataclass(frozen=True, order=True)
class VersionRef:
    """A version of one lane: the dataset's main root, the branch (None for main), the version."""

    root: str
    branch: str | None
    version: int


def location(path: str) -> str:
    """A root or base path as the diagram keys it: without trailing slashes."""
    return path.rstrip("/") or "/"


def lane_name(branch: str | None) -> str | None:
    """None for main, however a record spells it (``null`` or ``"main"``)."""
    return None if branch in (None, "main") else branch


def source_root(clone: Mapping[str, Any]) -> str:
    """The main root of a clone's source: ``source`` less ``/tree/{branch}`` when a branch was cloned."""
    source = location(clone["source"])
    branch = lane_name(clone["source_branch"])
    suffix = f"/{TREE_DIR}/{branch}"
    return source[: -len(suffix)] if branch and source.endswith(suffix) else source


def clone_source(doc: Doc) -> VersionRef | None:
    """The source version a main root's shallow clone leans on (a branch root's clone is its fork)."""
    clone = doc["clone"]
    if clone is None or not clone["shallow"] or doc["branch"] is not None:
        return None
    return VersionRef(source_root(clone), lane_name(clone["source_branch"]), clone["source_version"])


def pinned_versions(head: Doc, branch: str | None, refs: Collection[VersionRef]) -> set[int]:
    """Versions of lane ``branch`` of the dataset ``head`` (a main root's document) describes that are
    never collapsed: tagged, forked from, or in ``refs`` (clone sources)."""
    root = location(head["uri"])
    out = {v for name, v in head["tags"].items() if lane_name(head["tag_branches"].get(name)) == branch}
    out |= {f["parent_version"] for f in head["branch_forks"].values() if lane_name(f["parent_branch"]) == branch}
    out |= {r.version for r in refs if r.root == root and r.branch == branch}
    return out


def lane_marks(marks: Mapping[VersionRef, Mark], root: str, branch: str | None) -> dict[int, Mark]:
    """The marks of one lane's versions, by version."""
    return {r.version: mark for r, mark in marks.items() if r.root == root and r.branch == branch}


def spans(versions: Sequence[int], pinned: Collection[int], marks: Mapping[int, Mark] | None = None,
          ) -> list[tuple[int, ...]]:
    """A lane's versions as drawn: the first, the last and every pinned version alone; a run of at least
    ``COLLAPSE_RUN`` others carrying the same marks as one span; shorter runs version by version."""
    keep = set(pinned)
    if versions:
        keep |= {versions[0], versions[-1]}
    mark_of = marks or {}
    out: list[tuple[int, ...]] = []
    run: list[int] = []

    def flush() -> None:
        if len(run) >= COLLAPSE_RUN:
            out.append(tuple(run))
        else:
            out.extend((v,) for v in run)
        run.clear()

    for v in versions:
        if v in keep:
            flush()
            out.append((v,))
            continue
        if run and mark_of.get(run[-1], frozenset()) != mark_of.get(v, frozenset()):
            flush()
        run.append(v)
    flush()
    return out


@dataclass(frozen=True)
class Usage:
    """The files one version resolves into one location: how many, their recorded bytes, and how many
    record no size (deletion files never do; a data file recording 0 means unknown)."""

    location: str
    files: int
    size: int
    unsized: int


@dataclass(frozen=True)
class Step:
    """One node of a lane: one version (with its rows and files when its document was read) or a
    collapsed run of versions."""

    id: str
    versions: tuple[int, ...]
    num_rows: int | None
    usage: tuple[Usage, ...]
    unresolved: int

    @property
    def collapsed(self) -> bool:
        return len(self.versions) > 1


@dataclass(frozen=True)
class Fork:
    """Where a branch starts: its parent's version, and the node of it (a step, or the parent's lane when
    that version is no longer attached; None when the parent is not in the lineage)."""

    parent_branch: str | None
    parent_version: int
    source: str | None


@dataclass(frozen=True)
class Lane:
    """One branch of a dataset (``branch`` None for main): its root, its nodes in version order, and where
    it was forked from (None for main)."""

    id: str
    branch: str | None
    root: str
    steps: tuple[Step, ...]
    fork: Fork | None


@dataclass(frozen=True)
class Tag:
    """A tag and the node of the version it pins (None when that version is not attached)."""

    id: str
    name: str
    branch: str | None
    version: int
    step: str | None


@dataclass(frozen=True)
class Clone:
    """A root's Clone: the source named, and for a shallow clone the node it leans on (``target``: a step,
    the source's lane, or None when the source is not in the lineage) and whether a tag pins that version
    (None when the source's tags were not read)."""

    shallow: bool
    source: str
    source_branch: str | None
    source_version: int
    target: str | None
    tagged: bool | None


@dataclass(frozen=True)
class DatasetLineage:
    """One dataset (a main root): its lanes (main first), its tags, and the Clone that made it, if any."""

    id: str
    root: str
    lanes: tuple[Lane, ...]
    tags: tuple[Tag, ...]
    clone: Clone | None


@dataclass(frozen=True)
class Location:
    """A root or base path: ``kind`` is ``root`` (a lane's root), ``dataset-root base`` or ``base``."""

    id: str
    path: str
    label: str
    kind: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Group:
    """The locations of one bucket or local directory."""

    id: str
    label: str
    locations: tuple[Location, ...]


@dataclass(frozen=True)
class Lineage:
    """Every dataset of the lineage (the one asked about first) and the locations their files live in."""

    datasets: tuple[DatasetLineage, ...]
    groups: tuple[Group, ...]

    @property
    def locations(self) -> list[Location]:
        return [loc for g in self.groups for loc in g.locations]

    def step_for(self, ref: VersionRef) -> Step | None:
        """The node showing ``ref``'s version (a collapsed one when it is collapsed)."""
        lane = self._lane(ref.root, ref.branch)
        if lane is None:
            return None
        return next((s for s in lane.steps if ref.version in s.versions), None)

    def location_for(self, path: str) -> Location | None:
        """The location ``path`` lies in (the deepest one), or None."""
        found = [loc for loc in self.locations if location(path) == loc.path or relative_to(path, loc.path)]
        return max(found, key=lambda loc: len(loc.path), default=None)

    def _lane(self, root: str, branch: str | None) -> Lane | None:
        for ds in self.datasets:
            if ds.root == root:
                return next((lane for lane in ds.lanes if lane.branch == branch), None)
        return None


def _usage(doc: Doc) -> tuple[tuple[Usage, ...], int]:
    """What ``doc``'s version resolves where: per location (data, deletion and index files), and how many
    files name a base id no base has."""
    bases = {b["id"]: location(b["path"]) for b in doc["bases"]}
    root = location(doc["uri"])
    counts: dict[str, list[int]] = {}
    unresolved = 0
    files = [(f["base_id"], f["size"]) for frag in doc["fragments"] for f in frag["files"]]
    files += [(frag["deletion"]["base_id"], None) for frag in doc["fragments"] if frag["deletion"]]
    files += [(f["base_id"], f["size"]) for f in doc["index_files"]]
    for base_id, size in files:
        where = root if base_id is None else bases.get(base_id)
        if where is None:
            unresolved += 1
            continue
        tally = counts.setdefault(where, [0, 0, 0])
        tally[0] += 1
        tally[1 if size is not None else 2] += size if size is not None else 1
    return tuple(Usage(where, *tally) for where, tally in counts.items()), unresolved


def _lanes_of(heads: Mapping[str, Doc]) -> dict[str, list[tuple[str | None, str]]]:
    """Main root -> [(branch, root)] in document order; a root no main root claims as a branch stands alone."""
    out: dict[str, list[tuple[str | None, str]]] = {}
    claimed: set[str] = set()
    for root, head in heads.items():
        if head["branch"] is not None:
            continue
        lanes: list[tuple[str | None, str]] = [(None, root)]
        for name in head["branches"]:
            try:
                lanes.append((name, location(branch_root(root, name))))
            except LanceSpecError:  # a name that would leave tree/: never read (docs/security.md)
                continue
        claimed |= {r for _, r in lanes[1:]}
        out[root] = lanes
    for root, head in heads.items():
        if root not in out and root not in claimed:
            out[root] = [(lane_name(head["branch"]), root)]
    return out


def _group_of(path: str, common: str) -> tuple[str, str]:
    """(key, label) of the group a location belongs to: its bucket, or for an absolute local path the
    directory below ``common`` it lies in (the corpus keeps its buckets as such directories)."""
    if scheme_of(path) != "file":
        parsed = urlparse(path)
        key = f"{parsed.scheme}://{parsed.netloc}"
        return key, f"bucket {key}"
    local = local_path(path)
    if not local.startswith("/"):
        return "", "relative paths"
    below = posixpath.relpath(local, common)
    key = common if below == "." else posixpath.join(common, below.split("/")[0])
    return key, f"file system {key}"


def _locations(docs: Sequence[Doc], lane_roots: Collection[str]) -> tuple[Group, ...]:
    """Every root and base path of ``docs``, grouped (``_group_of``), groups and members sorted by path."""
    names: dict[str, set[str]] = {}
    roots = set(lane_roots)
    dataset_roots = set()
    for doc in docs:
        roots.add(location(doc["uri"]))
        names.setdefault(location(doc["uri"]), set())
        for b in doc["bases"]:
            path = location(b["path"])
            names.setdefault(path, set()).update([b["name"]] if b["name"] else [])
            if b["is_dataset_root"]:
                dataset_roots.add(path)
    parents = [posixpath.dirname(local_path(p)) for p in names if scheme_of(p) == "file"]
    absolute = [p for p in parents if p.startswith("/")]
    common = posixpath.commonpath(absolute) if absolute else "/"
    grouped: dict[tuple[str, str], list[str]] = {}
    for path in sorted(names):
        grouped.setdefault(_group_of(path, common), []).append(path)
    groups = []
    n = 0
    for g, ((key, label), members) in enumerate(sorted(grouped.items())):
        members_out = []
        for path in members:
            inside = relative_to(local_path(path) if scheme_of(path) == "file" else path, key) if key else None
            kind = "root" if path in roots else "dataset-root base" if path in dataset_roots else "base"
            shown = inside or posixpath.basename(path) or path
            members_out.append(Location(f"loc{n}", path, shown, kind, tuple(sorted(names[path]))))
            n += 1
        groups.append(Group(f"cluster_g{g}", label, tuple(members_out)))
    return tuple(groups)


def _steps(lane_id: str, versions: Sequence[int], pinned: set[int], marks: Mapping[int, Mark],
           docs: Mapping[int, Doc]) -> tuple[Step, ...]:
    out = []
    for i, span in enumerate(spans(versions, pinned, marks)):
        doc = docs.get(span[0]) if len(span) == 1 else None
        usage, unresolved = _usage(doc) if doc is not None else ((), 0)
        out.append(Step(f"{lane_id}v{i}", span, doc["num_rows"] if doc is not None else None, usage, unresolved))
    return tuple(out)


def _node_of(lanes: Mapping[tuple[str, str | None], Lane], ref: VersionRef) -> str | None:
    lane = lanes.get((ref.root, ref.branch))
    if lane is None:
        return None
    return next((s.id for s in lane.steps if ref.version in s.versions), lane.id)


def build_lineage(docs: Sequence[Doc], marks: Mapping[VersionRef, Mark] | None = None) -> Lineage:
    """The lineage the inspect documents ``docs`` describe; a version in ``marks`` collapses only with
    neighbours marked alike."""
    marks = marks or {}
    by_root: dict[str, dict[int, Doc]] = {}
    for doc in docs:
        by_root.setdefault(location(doc["uri"]), {})[doc["version"]] = doc
    heads = {root: found[max(found)] for root, found in by_root.items()}
    refs = {ref for head in heads.values() if (ref := clone_source(head)) is not None}
    lanes_of = _lanes_of(heads)
    lanes: dict[tuple[str, str | None], Lane] = {}
    for d, (main, members) in enumerate(lanes_of.items()):
        for b, (branch, root) in enumerate(members):
            head = heads.get(root)
            versions = head["versions"] if head is not None else []
            lane_id = f"d{d}b{b}"
            steps = _steps(lane_id, versions, pinned_versions(heads[main], branch, refs),
                           lane_marks(marks, main, branch), by_root.get(root, {}))
            lanes[(main, branch)] = Lane(lane_id, branch, root, steps, None)
    for main in lanes_of:  # forks, once every lane has its steps
        for name, fork in heads[main]["branch_forks"].items():
            if (main, name) in lanes:
                parent = VersionRef(main, lane_name(fork["parent_branch"]), fork["parent_version"])
                lanes[(main, name)] = replace(lanes[(main, name)],
                                              fork=Fork(parent.branch, parent.version, _node_of(lanes, parent)))
    datasets = []
    for d, (main, members) in enumerate(lanes_of.items()):
        head = heads[main]
        tags = tuple(Tag(f"d{d}t{i}", name, lane_name(head["tag_branches"].get(name)), version,
                         _node_of(lanes, VersionRef(main, lane_name(head["tag_branches"].get(name)), version)))
                     for i, (name, version) in enumerate(head["tags"].items()))
        datasets.append(DatasetLineage(f"d{d}", main, tuple(lanes[(main, b)] for b, _ in members), tags,
                                       _clone(head, lanes, heads)))
    lane_roots = {lane.root for lane in lanes.values()}
    return Lineage(tuple(datasets), _locations(docs, lane_roots))


def _clone(head: Doc, lanes: Mapping[tuple[str, str | None], Lane], heads: Mapping[str, Doc]) -> Clone | None:
    clone = head["clone"]
    if clone is None:
        return None
    ref = VersionRef(source_root(clone), lane_name(clone["source_branch"]), clone["source_version"])
    target = _node_of(lanes, ref) if clone["shallow"] else None
    source_head = heads.get(ref.root)
    tagged = None if source_head is None or not clone["shallow"] else any(
        v == ref.version and lane_name(source_head["tag_branches"].get(name)) == ref.branch
        for name, v in source_head["tags"].items())
    return Clone(clone["shallow"], clone["source"], ref.branch, ref.version, target, tagged)
