"""The operation language: what every writer is told to write.

Operations are frozen, JSON-serialisable values (``operation_to_dict``, ``operation_from_dict``): the one
language every writer is driven in. Scenarios (``scenarios.format`` turns each writer step into one), the
fixture cases, the pylance shapes, the simulator's workloads and the property machine all say what to write
as these values, and every implementation applies them through one entry (``adapters``: ``session.apply``).
Each type declares once (``_Declared``) its wire name and the feature it needs, which the converters read;
adding an operation is its dataclass here and its ``apply`` in each implementation that supports it.

Every location in an operation is *site-relative*: a name the run resolves to a URI (``ds``, ``bases/b3``
below the machine's scratch folder; ``main:ds``, ``cold:b1`` in a scenario's buckets; ``ds0`` in the
simulator's bucket). A branch's root is ``{family}/tree/{branch}`` (``root_dir``; ``split_root`` undoes it).
A version reference is ``tag`` when set, else ``(branch, version)`` (``version`` None: the latest of the
branch), as ``reference_of`` gives it to a writer. What each operation must do to storage is the model's
(``conformance.model``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar, Literal, get_args

from conformance.payload import Blob, Blobs

__all__ = [
    "BY_WIRE", "OPERATIONS", "AddBase", "AddBases", "Append", "BaseSpec", "Branch", "Cleanup", "CommitStaged",
    "Create", "DeepClone", "Delete", "DeleteBranch", "DeleteTag", "DropRef", "ModelOperation", "MoveTag",
    "Operation", "Overwrite", "Reference", "Relocate", "ShallowClone", "Stage", "Tag", "Targets", "UpdateConfig",
    "operation_from_dict", "operation_to_dict", "reference_of", "root_dir", "split_root",
]

# --- the operation language ----------------------------------------------------------------------------

Targets = tuple[str, ...] | Literal["all", "bases"] | None
"""Where new data files go: bases in rotation order, each named by its name or its location (``target_bases``);
``"all"`` (``target_all_bases=True``), ``"bases"`` (``target_all_bases=False``) or None (the root)."""

Reference = str | tuple[str | None, int | None]
"""A version as the writers' APIs take it: a tag name, or (branch or None for main, version or None for the
latest)."""


@dataclass(frozen=True)
class BaseSpec:
    """A base to register: its site-relative directory, name (None: unnamed) and kind; ``file_uri``
    registers the path as a ``file://`` URI rather than a bare path (both are absolute, BASE-002); ``raw``
    registers ``dir`` as written, unresolved (a relative path a writer must refuse); ``id`` asks for an id."""

    dir: str
    name: str | None
    is_dataset_root: bool
    file_uri: bool = False
    raw: bool = False
    id: int | None = None


class _Declared:
    """What each operation type declares once, as class keywords, and every converter reads: ``wire``, its
    snake_case name in scenario steps, JSON-lines messages and exported programs (``BY_WIRE``); ``feature``,
    the capability a writer needs for it (``adapters.base.needs``); ``external``: whether scenarios and the
    JSON-lines contract say it (not the simulator's two-phase writes). ``op.root`` is the root every operation
    acts on."""

    wire: ClassVar[str]
    feature: ClassVar[str]
    external: ClassVar[bool] = True

    def __init_subclass__(cls, wire: str | None = None, feature: str | None = None, external: bool = True,
                          **rest: Any) -> None:
        super().__init_subclass__(**rest)
        if wire is not None:
            cls.wire, cls.feature, cls.external = wire, feature or cls.feature, external


@dataclass(frozen=True)
class Create(_Declared, wire="create", feature="create"):
    """``write_dataset(rows(start, count), root, initial_bases=..., target..., max_rows_per_file)``; ``data``
    replaces the plain rows by a blob column (ids ``start`` on); ``max_rows_per_file`` None: the writer's
    default; ``manifest_naming`` ``"v1"`` turns V2 manifest paths off."""

    root: str
    start: int
    count: int
    bases: tuple[BaseSpec, ...] = ()
    targets: Targets = None
    max_rows_per_file: int | None = 1024
    data: Blobs | None = None
    manifest_naming: Literal["v1", "v2"] = "v2"
    data_storage_version: str | None = None


@dataclass(frozen=True)
class Delete(_Declared, wire="delete", feature="delete"):
    """``delete("id IN (...)")`` on ``root``, or ``delete(where)`` when ``where`` is given."""

    root: str
    ids: tuple[int, ...]
    where: str | None = None

    @property
    def predicate(self) -> str:
        return self.where if self.where is not None else f"id IN ({', '.join(str(i) for i in self.ids)})"


@dataclass(frozen=True)
class _Write(_Declared):
    """The fields an append and an overwrite share (a create has bases between them)."""

    root: str
    start: int
    count: int
    targets: Targets = None
    max_rows_per_file: int | None = 1024
    data: Blobs | None = None


@dataclass(frozen=True)
class Append(_Write, wire="append", feature="append"):
    """Append ``rows(start, count)`` (or ``data``) to ``root``."""


@dataclass(frozen=True)
class Overwrite(_Write, wire="overwrite", feature="overwrite"):
    """Replace ``root``'s rows by ``rows(start, count)`` (or ``data``) in a new version; bases stay."""


class _AtFamily(_Declared):
    """An operation on a dataset's refs or a copy of it, named by the main root ``family`` it acts on."""

    family: str

    @property
    def root(self) -> str:  # the root it acts on, as every operation's ``root``
        return self.family


@dataclass(frozen=True)
class DropRef(_AtFamily):
    """The deletion of a ref ``name`` at ``family``: a ``DeleteTag`` or a ``DeleteBranch``."""

    family: str
    name: str


@dataclass(frozen=True)
class DeleteTag(DropRef, wire="tag_delete", feature="tags"):
    """``tags.delete(name)`` at ``family``."""


@dataclass(frozen=True)
class DeleteBranch(DropRef, wire="branch_delete", feature="branches"):
    """``branches.delete(name)`` at ``family``."""


@dataclass(frozen=True)
class AddBase(_Declared, wire="add_bases", feature="bases"):
    """``add_bases([base])`` on ``root``."""

    root: str
    base: BaseSpec

    @property
    def bases(self) -> tuple[BaseSpec, ...]:
        return (self.base,)


@dataclass(frozen=True)
class AddBases(_Declared, wire="add_bases", feature="bases"):
    """``add_bases(bases)`` on ``root`` in one version (none, or several: what a writer must refuse)."""

    root: str
    bases: tuple[BaseSpec, ...]


@dataclass(frozen=True)
class Tag(_AtFamily, wire="tag_create", feature="tags"):
    """``tags.create(name, reference_of(op))`` at the main root ``family``."""

    move = False  # a class attribute (no annotation: not a field)

    family: str
    name: str
    branch: str | None
    version: int | None
    tag: str | None = None


@dataclass(frozen=True)
class MoveTag(Tag, wire="tag_update", feature="tags"):
    """``tags.update(name, reference_of(op))``: the tag ``name`` of ``family`` moves to another version."""

    move = True


@dataclass(frozen=True)
class Branch(_AtFamily, wire="branch_create", feature="branches"):
    """``create_branch(name, (parent, version))`` (or from ``tag``) at the main root ``family``."""

    family: str
    name: str
    parent: str | None
    version: int | None
    tag: str | None = None


@dataclass(frozen=True)
class ShallowClone(_AtFamily, wire="shallow_clone", feature="shallow_clone"):
    """``shallow_clone(target, tag)`` from the main root ``family``: from a tag, so that the source's cleanup
    keeps the files the clone depends on (the clone-primitives post "Stability with Tags"; CLONE-005); with
    ``tag`` None, from ``(branch, version)``."""

    family: str
    tag: str | None
    target: str
    branch: str | None = None
    version: int | None = None


@dataclass(frozen=True)
class DeepClone(_AtFamily, wire="deep_clone", feature="deep_clone"):
    """``deep_clone(target, (branch, version))`` (or from ``tag``) from the main root ``family``."""

    family: str
    branch: str | None
    version: int | None
    target: str
    tag: str | None = None


@dataclass(frozen=True)
class Relocate(_Declared, wire="relocate", feature="relocate"):
    """Relocate ``root``'s bases (each named by its name or location) onto new directories, rewriting paths
    only (``reference.relocate``; pylance 14.0.2 has no API for it, docs/lance-format.md §10.4); ``adopt_from``:
    the location the root was copied from. Whoever runs it copies the base directories first."""

    root: str
    moves: tuple[tuple[str, str], ...]
    adopt_from: str | None = None


@dataclass(frozen=True)
class Cleanup(_Declared, wire="cleanup", feature="cleanup"):
    """``cleanup_old_versions`` on ``root``: ``older_than=timedelta(0)`` when ``older_than_zero``, else the
    default 14 days (nothing this young is old); ``retain_versions``; ``delete_unverified``;
    ``error_if_tagged_old_versions``."""

    root: str
    older_than_zero: bool = True
    retain_versions: int | None = None
    delete_unverified: bool = False
    error_if_tagged: bool = False


@dataclass(frozen=True)
class UpdateConfig(_Declared, wire="config_update", feature="config", external=False):
    """``update_config(dict(values))`` on ``root``: each key set to its value, or removed (None). Not yet said
    in scenarios or JSON-lines messages: the corpus covers every scenario operation."""

    root: str
    values: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class Stage(_Declared, wire="stage", feature="two_phase", external=False):
    """The first phase of a distributed write: ``rows(start, count)`` written as data files of ``root`` and
    kept uncommitted under ``key``, with the version they were written against."""

    root: str
    start: int
    count: int
    key: int


@dataclass(frozen=True)
class CommitStaged(_Declared, wire="commit_staged", feature="two_phase", external=False):
    """The second phase: commit what ``Stage`` ``key`` wrote as an Append read at its version."""

    root: str
    key: int


ModelOperation = Create | Append | Delete | AddBase | Tag | Branch | ShallowClone | DeepClone | Relocate | Cleanup
"""The operations the model covers: what the property machine draws."""
Operation = (ModelOperation | Overwrite | AddBases | MoveTag | DeleteTag | DeleteBranch | UpdateConfig | Stage
             | CommitStaged)
OPERATIONS: dict[str, type[Operation]] = {cls.__name__: cls for cls in get_args(Operation)}
"""Every operation type under its class name (``operation_to_dict``'s ``op``)."""

BY_WIRE: dict[str, type[Operation]] = {cls.wire: cls for cls in get_args(Operation)
                                       if cls.external and cls is not AddBase}
"""Every operation a scenario step or a JSON-lines message names, under its wire name (``AddBase``, one base, is
said as the ``add_bases`` of ``AddBases``)."""

def root_dir(family: str, branch: str | None) -> str:
    return family if branch is None else f"{family}/tree/{branch}"


def split_root(root: str) -> tuple[str, str | None]:
    """``(family, branch)`` of a root location: the inverse of ``root_dir`` (a family never holds ``/tree/``)."""
    family, sep, branch = root.partition("/tree/")
    return (family, branch) if sep else (root, None)


def reference_of(op: Tag | Branch | ShallowClone | DeepClone) -> Reference:
    """The version ``op`` refers to, as the writers' APIs take it."""
    if op.tag is not None:
        return op.tag
    return (op.parent if isinstance(op, Branch) else op.branch), op.version


def operation_to_dict(op: Operation) -> dict[str, Any]:
    """``{"op": "Append", "root": "ds", ...}``: plain JSON values."""
    return {"op": type(op).__name__, **asdict(op)}


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def _decoded(name: str, value: Any) -> Any:
    """The JSON value of field ``name`` as an operation holds it."""
    if name == "bases":
        return tuple(BaseSpec(**b) for b in value)
    if name == "base":
        return BaseSpec(**value)
    if name == "data" and value is not None:
        return Blobs(tuple(None if v is None else Blob(**v) for v in value["values"]), _tuples(value["thresholds"]))
    return _tuples(value)


def operation_from_dict(data: Mapping[str, Any]) -> Operation:
    """The inverse of ``operation_to_dict``."""
    cls = OPERATIONS[data["op"]]
    return cls(**{f.name: _decoded(f.name, data[f.name]) for f in fields(cls) if f.name in data})
