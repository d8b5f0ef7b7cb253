"""The model of what each operation of the language (``conformance.operations``) must do to storage.

``Model`` is the abstract table: per root and version the fragments (row ids, deleted offsets, where the data
and deletion files live), the bases, the refs of every family. ``Model.apply(op)`` says what the format
requires of ``op`` (rows of every version, placement, which versions a cleanup keeps) and returns the
expected ``Outcome``; it covers the operations the machine draws (``Create`` .. ``Cleanup`` with rows, not
blobs). Where pylance 14.0.2 knowingly diverges from the specification (spec/findings.md), the model names
the finding and either says what pylance does or marks the step ``divergent`` (``KNOWN_FINDINGS``). The
strategies that draw valid operations against a model are in ``conformance.strategies``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypeVar

from .operations import (
    AddBase,
    Append,
    Branch,
    Cleanup,
    Create,
    DeepClone,
    Delete,
    Operation,
    Relocate,
    ShallowClone,
    Tag,
    Targets,
    root_dir,
)

__all__ = [
    "KNOWN_FINDINGS", "BaseModel", "FragmentModel", "Model", "ModelError", "Outcome", "RootModel", "VersionModel",
]


_TRAILING_NUMBER = re.compile(r"(\d+)$")


class ModelError(Exception):
    """An operation the model calls invalid (a bug in a generator, never a finding)."""


@dataclass(frozen=True)
class FragmentModel:
    """A fragment: the ids of its physical rows in order, the deleted offsets, the directory holding its data
    file and the root whose ``_deletions/`` holds its deletion file (None: no deletion file)."""

    id: int
    rows: tuple[int, ...]
    deleted: frozenset[int] = frozenset()
    data_home: str = ""
    deletion_home: str | None = None

    def live(self) -> list[int]:
        return [r for i, r in enumerate(self.rows) if i not in self.deleted]


@dataclass(frozen=True)
class BaseModel:
    """A registered base: id, name, kind, world-relative directory and whether its path is a ``file://`` URI."""

    id: int
    name: str | None
    is_dataset_root: bool
    dir: str
    file_uri: bool = False


@dataclass(frozen=True)
class VersionModel:
    """What one version of a root holds."""

    fragments: tuple[FragmentModel, ...] = ()
    bases: tuple[BaseModel, ...] = ()
    max_fragment_id: int | None = None

    def live_ids(self) -> list[int]:
        return [r for f in self.fragments for r in f.live()]

    def base_by_dir(self, directory: str) -> BaseModel:
        for base in self.bases:
            if base.dir == directory:
                return base
        raise ModelError(f"no base at {directory}")


RootKind = Literal["main", "branch", "shallow", "deep"]


@dataclass
class RootModel:
    """A dataset root: its directory (also its key), its family (the main root holding its refs), its branch
    (None for a main root) and its versions."""

    dir: str
    family: str
    branch: str | None
    kind: RootKind
    versions: dict[int, VersionModel] = field(default_factory=dict)
    reference_only_bases: frozenset[str] = frozenset()
    """Base directories only the reference registers (a deep clone's non-root bases, F-019)."""

    @property
    def latest(self) -> int:
        return max(self.versions)

    @property
    def head(self) -> VersionModel:
        return self.versions[self.latest]


@dataclass
class Outcome:
    """What the model expects of an operation: ``ok``; ``refused`` by every writer; or ``divergent``: a known
    divergence (``finding`` names it) where pylance and the reference part ways (pylance refuses what the
    reference accepts, or commits where the reference commits nothing); the model then leaves the state
    unchanged and a side-by-side run checks each writer's side in a scratch copy."""

    kind: Literal["ok", "refused", "divergent"] = "ok"
    finding: str | None = None
    removed: tuple[int, ...] = ()
    mentions: tuple[str, ...] = ()
    """For a refusal: the words a writer's error must say (what was refused: the tags holding a cleanup back)."""
    refusal: str = "invalid_input"
    """For a refusal: the error kind (``WriterRefusal.kind``) a writer must refuse with."""


KNOWN_FINDINGS = frozenset({"F-022", "F-027", "F-028", "F-029", "F-030", "F-031"})
"""Divergences the model can leave out (``Model(known=...)``), to find them again: without F-027 base id 0
rotates like any base; without F-022 deletes may match nothing (and then commit nothing, as the reference
does); without F-028 a second unnamed base is expected to register; without F-029 ``target_all_bases=False``
is drawn without bases (the reference writes to the root); without F-030 a deep clone of files in a
dataset-root base registered as a ``file://`` URI is expected to succeed; without F-031 a cleanup with
``delete_unverified`` is expected to keep files that a branch forked from a retained version wrote into the
cleaned root. F-009, F-003, F-006, F-011, F-012
and F-019 are always modelled (the reference mirrors them, or they are never drawn)."""


_T = TypeVar("_T")
_BEYOND: dict[str, object] = {"data": None, "where": None, "move": False, "adopt_from": None, "manifest_naming": "v2",
                              "data_storage_version": None}
"""Fields the model covers only at these values (and ``tag``, which only a ``ShallowClone`` sets)."""


class Model:
    """The abstract table: every root's versions, the refs of every family, and counters for fresh names.

    ``apply(op)`` changes the model as the format (and pylance 14.0.2 where the two differ, with the
    finding named) says the operation must change storage, and returns the expected ``Outcome``.
    ``known`` lists the findings of ``KNOWN_FINDINGS`` the model branches on (all, by default).
    """

    def __init__(self, known: Iterable[str] = KNOWN_FINDINGS) -> None:
        self.known = frozenset(known)
        self.roots: dict[str, RootModel] = {}
        self.tags: dict[str, dict[str, tuple[str | None, int]]] = {}
        self.branches: dict[str, dict[str, tuple[str | None, int]]] = {}
        self.next_row = 0
        self.counter = 0

    # --- helpers --------------------------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def lineage(self, family: str, branch: str) -> list[tuple[int, str]]:
        parent, version = self.branches[family][branch]
        return [*(self.lineage(family, parent) if parent else []), (version, branch)]

    def descendants(self, root: RootModel) -> list[tuple[str, int]]:
        """``(branch, version of ``root`` it depends on)`` for every branch below ``root``: a branch forked from
        it depends on its fork version, a branch of that branch on the same version (docs/lance-format.md §11.2,
        §13 "referenced_branches")."""
        own = self.lineage(root.family, root.branch) if root.branch else []
        lines = {name: self.lineage(root.family, name) for name in sorted(self.branches.get(root.family, {}))}
        return [(name, line[len(own)][0]) for name, line in lines.items()
                if len(line) > len(own) and line[: len(own)] == own]

    # --- placement ------------------------------------------------------------------------------

    @staticmethod
    def initial_version(op: Create) -> VersionModel:
        """The (empty) version a ``Create`` writes against: its initial bases with ids 1, 2, ... (§10.2)."""
        bases = tuple(BaseModel(i + 1, b.name, b.is_dataset_root, b.dir, b.file_uri) for i, b in enumerate(op.bases))
        return VersionModel((), bases)

    def rotation(self, version: VersionModel, targets: Targets) -> list[BaseModel | None]:
        """The bases new data files rotate over, file by file, restarting on every call (F-009).

        ``"all"``: the root, then every base by ascending id; ``"bases"``: every base by ascending id (the
        root when there is none). Base id 0 (the source a clone or branch registers, F-003) stands for the
        writing root itself in both rotations, as pylance 14.0.2 writes it (F-027)."""
        zero = "F-027" in self.known
        ordered: list[BaseModel | None] = [None if zero and b.id == 0 else b
                                           for b in sorted(version.bases, key=lambda b: b.id)]
        if targets == "all":
            return [None, *ordered]
        if targets == "bases":
            return ordered or [None]  # no base: the root (the reference; pylance refuses, F-029)
        if targets is None:
            return [None]
        return [version.base_by_dir(d) for d in targets]

    @staticmethod
    def home(root: str, base: BaseModel | None) -> str:
        """The directory a data file written for ``base`` lives in (Storage Layout spec two-step resolution)."""
        if base is None:
            return f"{root}/data"
        return f"{base.dir}/data" if base.is_dataset_root else base.dir

    def _write(self, root: str, version: VersionModel, start: int, count: int, targets: Targets,
               max_rows_per_file: int | None) -> list[FragmentModel]:
        per_file = _given(max_rows_per_file)
        rotation = self.rotation(version, targets)
        first = 0 if version.max_fragment_id is None else version.max_fragment_id + 1
        out = []
        for i, offset in enumerate(range(0, count, per_file)):
            rows = tuple(range(start + offset, start + min(count, offset + per_file)))
            out.append(FragmentModel(first + i, rows, frozenset(), self.home(root, rotation[i % len(rotation)])))
        return out

    # --- operations -----------------------------------------------------------------------------

    def apply(self, op: Operation) -> Outcome:
        """Raises ModelError for what the model does not cover (operations and forms the machine never draws:
        blobs, predicates, moved tags, references by tag or to the latest version, ...)."""
        handler = getattr(self, f"_apply_{type(op).__name__.lower()}", None)
        beyond = [f.name for f in fields(op) if f.name in _BEYOND and getattr(op, f.name) != _BEYOND[f.name]]
        if not isinstance(op, ShallowClone) and getattr(op, "tag", None) is not None:
            beyond.append("tag")
        if handler is None or beyond or any(b.raw or b.id is not None for b in getattr(op, "bases", ())):
            raise ModelError(f"the model does not cover {op}")
        outcome: Outcome = handler(op)
        self._observe(op)
        return outcome

    def _observe(self, value: Any) -> None:
        """Keep ``fresh`` names fresh after replaying operations drawn against another model: the counter
        passes every number that ends a name or directory the operation uses."""
        if isinstance(value, str):
            match = _TRAILING_NUMBER.search(value)
            if match:
                self.counter = max(self.counter, int(match.group(1)))
        elif isinstance(value, tuple):
            for item in value:
                self._observe(item)
        elif hasattr(value, "__dataclass_fields__"):
            for f in fields(value):
                self._observe(getattr(value, f.name))

    def _add_family(self, root: RootModel) -> None:
        """A new main root: its versions, and no tags or branches yet."""
        self.roots[root.dir] = root
        self.tags[root.dir] = {}
        self.branches[root.dir] = {}

    def _commit(self, root: RootModel, version: VersionModel) -> None:
        root.versions[root.latest + 1] = version

    def _without_bases(self, version: VersionModel, targets: Targets) -> bool:
        """F-029: pylance 14.0.2 refuses ``target_all_bases=False`` when no base is registered (the reference
        writes to the root)."""
        return "F-029" in self.known and targets == "bases" and not version.bases

    def _apply_create(self, op: Create) -> Outcome:
        if op.root in self.roots:
            raise ModelError(f"{op.root} exists")
        empty = self.initial_version(op)
        if self._without_bases(empty, op.targets):
            return Outcome("divergent", "F-029")
        frags = tuple(self._write(op.root, empty, op.start, op.count, op.targets, op.max_rows_per_file))
        top = frags[-1].id if frags else None
        self._add_family(RootModel(op.root, op.root, None, "main", {1: VersionModel(frags, empty.bases, top)}))
        self.next_row = max(self.next_row, op.start + op.count)
        return Outcome()

    def _apply_append(self, op: Append) -> Outcome:
        root = self.roots[op.root]
        head = root.head
        if self._without_bases(head, op.targets):
            return Outcome("divergent", "F-029")
        new = self._write(op.root, head, op.start, op.count, op.targets, op.max_rows_per_file)
        top = new[-1].id if new else head.max_fragment_id
        self._commit(root, VersionModel(head.fragments + tuple(new), head.bases, top))
        self.next_row = max(self.next_row, op.start + op.count)
        return Outcome()

    def _apply_delete(self, op: Delete) -> Outcome:
        root = self.roots[op.root]
        head = root.head
        wanted = set(op.ids)
        kept = []
        touched = False
        for frag in head.fragments:
            hits = {i for i, r in enumerate(frag.rows) if r in wanted and i not in frag.deleted}
            if not hits:
                kept.append(frag)
                continue
            touched = True
            deleted = frag.deleted | hits
            if len(deleted) < len(frag.rows):  # a fully deleted fragment is dropped (DEL-006)
                kept.append(replace(frag, deleted=frozenset(deleted), deletion_home=op.root))
        if not touched:
            # F-022: pylance 14.0.2 commits a version for a delete that matches nothing; the reference
            # commits none. Generators never draw such a delete while the finding is known.
            return Outcome("divergent", "F-022") if "F-022" in self.known else Outcome()
        self._commit(root, VersionModel(tuple(kept), head.bases, head.max_fragment_id))
        return Outcome()

    def _apply_addbase(self, op: AddBase) -> Outcome:
        root = self.roots[op.root]
        head = root.head
        if "F-028" in self.known and op.base.name is None and any(b.name is None for b in head.bases):
            # F-028: pylance 14.0.2 compares names as optionals, so a second unnamed base is refused.
            return Outcome("divergent", "F-028")
        new_id = max((b.id for b in head.bases), default=0) + 1
        base = BaseModel(new_id, op.base.name, op.base.is_dataset_root, op.base.dir, op.base.file_uri)
        self._commit(root, VersionModel(head.fragments, (*head.bases, base), head.max_fragment_id))
        return Outcome()

    def _apply_tag(self, op: Tag) -> Outcome:
        root = self.roots[root_dir(op.family, op.branch)]
        if op.version not in root.versions or op.name in self.tags[op.family]:
            raise ModelError(f"cannot tag {op}")
        self.tags[op.family][op.name] = (op.branch, _given(op.version))
        return Outcome()

    @staticmethod
    def _inherit(version: VersionModel, source_dir: str, source_branch: str | None) -> VersionModel:
        """A shallow clone's (or branch's) first version: the source's, plus the source root registered as a
        dataset-root base under the smallest unused id and the source's branch name (F-003)."""
        used = {b.id for b in version.bases}
        new_id = next(i for i in range(len(used) + 1) if i not in used)
        source = BaseModel(new_id, source_branch, True, source_dir)
        return VersionModel(version.fragments, (*version.bases, source), version.max_fragment_id)

    def _apply_branch(self, op: Branch) -> Outcome:
        parent = self.roots[root_dir(op.family, op.parent)]
        target = root_dir(op.family, op.name)
        version = _given(op.version)
        if version not in parent.versions or target in self.roots or op.name in self.branches[op.family]:
            raise ModelError(f"cannot branch {op}")
        root = RootModel(target, op.family, op.name, "branch", reference_only_bases=parent.reference_only_bases)
        root.versions[version] = self._inherit(parent.versions[version], parent.dir, op.parent)
        self.roots[target] = root
        self.branches[op.family][op.name] = (op.parent, version)
        return Outcome()

    def _apply_shallowclone(self, op: ShallowClone) -> Outcome:
        branch, version = self.tags[op.family][_given(op.tag)]
        source = self.roots[root_dir(op.family, branch)]
        if op.target in self.roots:
            raise ModelError(f"{op.target} exists")
        self._add_family(RootModel(op.target, op.target, None, "shallow",
                                   {version: self._inherit(source.versions[version], source.dir, branch)},
                                   source.reference_only_bases))
        return Outcome()

    def _apply_deepclone(self, op: DeepClone) -> Outcome:
        source = self.roots[root_dir(op.family, op.branch)]
        number = _given(op.version)
        version = source.versions[number]
        if any(not f.data_home.endswith("/data") for f in version.fragments):
            # F-011: pylance 14.0.2 looks for files of a non-root base under {base}/data/ and fails.
            return Outcome("divergent", "F-011")
        file_roots = {f"{b.dir}/data" for b in version.bases if b.is_dataset_root and b.file_uri}
        if "F-030" in self.known and any(f.data_home in file_roots for f in version.fragments):
            # F-030: pylance 14.0.2 cannot copy from a dataset-root base whose path is a file:// URI.
            return Outcome("divergent", "F-030")
        frags = tuple(replace(f, data_home=f"{op.target}/data",
                              deletion_home=op.target if f.deletion_home else None) for f in version.fragments)
        # F-019: pylance registers no base in a deep clone (the reference keeps non-root ones).
        self._add_family(RootModel(op.target, op.target, None, "deep",
                                   {number: VersionModel(frags, (), version.max_fragment_id)},
                                   source.reference_only_bases.union(b.dir for b in version.bases
                                                                     if not b.is_dataset_root)))
        return Outcome()

    def _apply_relocate(self, op: Relocate) -> Outcome:
        root = self.roots[op.root]
        head = root.head
        moves = dict(op.moves)
        bases = tuple(replace(b, dir=moves[b.dir], file_uri=False) if b.dir in moves else b for b in head.bases)

        def moved(home: str) -> str:
            for old, new in moves.items():
                if home == old or home.startswith(old + "/"):
                    return new + home[len(old):]
            return home

        frags = tuple(replace(f, data_home=moved(f.data_home)) for f in head.fragments)
        self._commit(root, VersionModel(frags, bases, head.max_fragment_id))
        return Outcome()

    def references(self, root: RootModel, of: RootModel) -> bool:
        """Whether any version of ``root`` holds a data or deletion file that lives in ``of``'s root."""
        return any(f.data_home == f"{of.dir}/data" or f.deletion_home == of.dir
                   for v in root.versions.values() for f in v.fragments)

    def _unconsulted_files(self, root: RootModel, working: set[int], old: Callable[[int], bool]) -> bool:
        """Whether a descendant branch that pylance does not consult (its fork version here is gone or not
        ``old``) holds a data file in ``root``'s ``data/`` that no working version of ``root`` and no consulted
        branch holds (files are told apart by their rows: every row id is written once)."""
        here = f"{root.dir}/data"

        def files(r: RootModel) -> set[tuple[int, ...]]:
            return {f.rows for v in r.versions.values() for f in v.fragments if f.data_home == here}

        kept = {f.rows for v in working for f in root.versions[v].fragments if f.data_home == here}
        unread: set[tuple[int, ...]] = set()
        for name, fork_version in self.descendants(root):
            branch = self.roots[root_dir(root.family, name)]
            consulted = fork_version in root.versions and old(fork_version)
            (kept if consulted else unread).update(files(branch))
        return bool(unread - kept)

    def _apply_cleanup(self, op: Cleanup) -> Outcome:
        """docs/lance-format.md §13, as pylance 14.0.2 does it: old versions (all, with ``older_than=0``; those
        below the n-th newest, with ``retain_versions=n``) go, except the latest, tagged versions of this
        root's branch and fork points that a descendant branch still reads files of (GC-001)."""
        root = self.roots[op.root]
        numbers = sorted(root.versions)
        latest = numbers[-1]
        if not op.older_than_zero and op.retain_versions is None:
            return Outcome()  # the default older_than of 14 days: nothing is that old
        before = None if op.retain_versions is None else numbers[max(0, len(numbers) - op.retain_versions)]

        def old(v: int) -> bool:
            return before is None or v < before

        tagged = {v for b, v in self.tags[root.family].values() if b == root.branch}
        blocking = sorted(name for name, (b, v) in self.tags[root.family].items()
                          if b == root.branch and v in numbers and old(v) and v != latest)
        if op.error_if_tagged and blocking:
            return Outcome("refused", mentions=tuple(blocking))
        working = {v for v in numbers if v == latest or not old(v) or v in tagged}
        candidates = set(numbers) - working
        forks = {fork_version for name, fork_version in self.descendants(root)
                 if fork_version in candidates and self.references(self.roots[root_dir(root.family, name)], root)}
        if "F-031" in self.known and op.delete_unverified and self._unconsulted_files(root, working, old):
            # F-031: pylance 14.0.2 reads only branches forked from old versions, so it deletes (as unverified)
            # files a branch forked from a retained version wrote into this root; every descendant's files
            # stay (GC-001), as the reference keeps them.
            return Outcome("divergent", "F-031")
        removed = tuple(sorted(candidates - forks))
        for v in removed:
            del root.versions[v]
        return Outcome(removed=removed)


def _given(value: _T | None) -> _T:
    if value is None:  # an operation drawn for the model always sets it
        raise ModelError("the model needs an explicit value here")
    return value
