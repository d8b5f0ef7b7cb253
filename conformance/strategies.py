"""Hypothesis strategies for the Lance table format, reusable by any property test
(``from conformance.strategies import ...``):

* **Base paths** (Storage Layout spec "Base Path System"): ``root_uris`` (local paths, ``file://``, ``s3://``, ``gs://``,
  ``az://``, ``memory://``), ``base_sets`` (unique ids, unique or absent names, ``is_dataset_root``, paths that
  never overlap, optionally below one root).
* **Files and manifests** (Table Format spec "Fragments"): ``data_file_names``, ``fragments`` (data files and deletion
  files carrying ``base_id`` or not), ``manifests`` (a ``Manifest`` holding bases and fragments).
* **Blobs** (the Blob v2 post "Thresholds"): ``thresholds``, ``sizes_around``, ``blob_payloads``, ``blob_columns``.
* **Operation sequences** over the language and model of ``conformance.operations``:
  ``operation_sequences`` draws a ``Create`` then operations the model calls valid; ``draw_operation`` draws
  one operation for a given model; ``DRAWERS`` draw one for a given source (the stateful machine of
  ``conformance.properties.machine`` draws its sources from Bundles). Divergences of pylance the
  model cannot express are never drawn, naming their finding.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from hypothesis import strategies as st

from conformance.model import KNOWN_FINDINGS, Model, VersionModel
from conformance.operations import (
    AddBase,
    Append,
    BaseSpec,
    Branch,
    Cleanup,
    Create,
    DeepClone,
    Delete,
    ModelOperation,
    Relocate,
    ShallowClone,
    Tag,
    Targets,
)
from reference.blob.routing import Thresholds
from reference.layout import DELETION_EXTENSIONS, Base, data_file_stem
from reference.proto import table_pb2

Draw = Callable[[st.SearchStrategy[Any]], Any]
T = TypeVar("T")

__all__ = [
    "ALL_KINDS",
    "DRAWERS",
    "SCHEMES",
    "base_sets",
    "blob_columns",
    "blob_payloads",
    "data_file_names",
    "draw_create",
    "draw_operation",
    "fragments",
    "manifests",
    "operation_sequences",
    "path_segments",
    "pick",
    "root_uris",
    "sizes_around",
    "sources",
    "thresholds",
]

# --- URIs and base-path sets -------------------------------------------------------------------------

SCHEMES = ("local", "file", "s3", "gs", "az", "memory")
"""Location styles: a bare absolute path, a ``file://`` URI and object-store URIs (docs/lance-format.md §10.1)."""

_SEGMENT_ALPHABET = string.ascii_lowercase + string.digits + "-"


def path_segments(min_size: int = 1, max_size: int = 3) -> st.SearchStrategy[list[str]]:
    """Directory names: lowercase letters, digits and ``-`` (never ``_``, which base markers use)."""
    return st.lists(st.text(_SEGMENT_ALPHABET, min_size=1, max_size=8), min_size=min_size, max_size=max_size)


@st.composite
def root_uris(draw: st.DrawFn, schemes: Sequence[str] = SCHEMES) -> str:
    """An absolute location in one of ``schemes`` (no trailing slash)."""
    scheme = draw(st.sampled_from(list(schemes)))
    segments = "/".join(draw(path_segments()))
    if scheme == "local":
        return f"/{segments}"
    if scheme == "file":
        return f"file:///{segments}"
    bucket = draw(st.text(string.ascii_lowercase, min_size=3, max_size=8))
    return f"{scheme}://{bucket}/{segments}"


@st.composite
def base_sets(draw: st.DrawFn, min_size: int = 0, max_size: int = 5, schemes: Sequence[str] = SCHEMES,
              ids: st.SearchStrategy[int] | None = None, allow_unnamed: bool = True,
              root_fraction: float | None = None) -> list[Base]:
    """Base-path entries as a manifest may hold them (Storage Layout spec "BasePath Message"): unique ids (0 allowed: it
    is what clones register, F-003), unique names or none, either kind. Paths never equal, contain or lie
    inside one another (BASE-007): each ends in its own ``b_{i}`` segment, a name no other segment can have.
    ``ids`` draws the ids (default 0..300); ``root_fraction`` fixes the share of dataset-root bases roughly
    (None: any mix)."""
    id_strategy = ids if ids is not None else st.integers(0, 300)
    chosen = draw(st.lists(id_strategy, min_size=min_size, max_size=max_size, unique=True))
    names = draw(st.lists(st.text(string.ascii_letters + string.digits + "-", min_size=1, max_size=6),
                          min_size=len(chosen), max_size=len(chosen), unique=True))
    out = []
    for i, (base_id, name) in enumerate(zip(chosen, names, strict=True)):
        unnamed = allow_unnamed and draw(st.booleans())
        roll = draw(st.integers(0, 99))
        is_root = roll % 2 == 0 if root_fraction is None else roll < int(root_fraction * 100)
        path = f"{draw(root_uris(schemes))}/b_{i}"
        out.append(Base(base_id, None if unnamed else name, path, is_root))
    return out


# --- files and manifests -------------------------------------------------------------------------------


def data_file_names() -> st.SearchStrategy[str]:
    """``{50-character stem}.lance`` from 16 random bytes (Storage Layout spec "Data Files")."""
    return st.binary(min_size=16, max_size=16).map(lambda raw: data_file_stem(raw) + ".lance")


@st.composite
def fragments(draw: st.DrawFn, bases: Sequence[Base], max_fragments: int = 6, max_files: int = 3,
              valid_only: bool = True, min_fragments: int = 0) -> list[table_pb2.DataFragment]:
    """Fragments with ids 0.., one to ``max_files`` data files each (``base_id`` absent or one of ``bases``;
    names unique across the fragments), and now and then a deletion file whose ``base_id`` is absent or
    names a dataset-root base (BASE-005; with ``valid_only=False`` also a non-root base or an unregistered
    id)."""
    base_ids: list[int | None] = [None, *(b.id for b in bases)]
    root_ids: list[int | None] = [None, *(b.id for b in bases if b.is_dataset_root)]
    if not valid_only:
        root_ids = [*base_ids, 10_000]
    count = draw(st.integers(min_fragments, max_fragments))
    out = []
    seen: set[str] = set()
    for fragment_id in range(count):
        rows = draw(st.integers(1, 100))
        fragment = table_pb2.DataFragment(id=fragment_id, physical_rows=rows)
        names = draw(st.lists(data_file_names().filter(lambda n: n not in seen), min_size=1, max_size=max_files,
                              unique=True))
        seen.update(names)
        for name in names:
            data_file = fragment.files.add(path=name, file_major_version=2, file_minor_version=0)
            base_id = draw(st.sampled_from(base_ids))
            if base_id is not None:
                data_file.base_id = base_id
        if draw(st.booleans()):
            deletion = fragment.deletion_file
            deletion.read_version = draw(st.integers(1, 50))
            deletion.id = draw(st.integers(1, 2**63 - 1))
            deletion.file_type = draw(st.sampled_from(sorted(DELETION_EXTENSIONS)))  # type: ignore[assignment]
            base_id = draw(st.sampled_from(root_ids))
            deletion.num_deleted_rows = draw(st.integers(1, rows))
            if base_id is not None:
                deletion.base_id = base_id
        out.append(fragment)
    return out


@st.composite
def manifests(draw: st.DrawFn, bases: st.SearchStrategy[list[Base]] | None = None, version: int = 1,
              max_fragments: int = 6, min_fragments: int = 0) -> table_pb2.Manifest:
    """A manifest holding a base set and fragments that refer to it."""
    chosen = draw(bases if bases is not None else base_sets())
    manifest = table_pb2.Manifest(version=version)
    for base in chosen:
        entry = manifest.base_paths.add(id=base.id, path=base.path, is_dataset_root=base.is_dataset_root)
        if base.name is not None:
            entry.name = base.name
    manifest.fragments.extend(draw(fragments(chosen, max_fragments=max_fragments, min_fragments=min_fragments)))
    if manifest.fragments:
        manifest.max_fragment_id = max(f.id for f in manifest.fragments)
    return manifest


# --- blobs ---------------------------------------------------------------------------------------------


@st.composite
def thresholds(draw: st.DrawFn, max_threshold: int = 3000) -> Thresholds:
    """Small routing thresholds (the Blob v2 post "Thresholds"), so that every kind is cheap to produce; the
    dedicated threshold may lie below the inline one (dedicated is checked first, docs/lance-format.md §14.4)."""
    inline = draw(st.integers(0, max_threshold))
    dedicated = draw(st.one_of(st.integers(inline + 1, inline + max_threshold), st.integers(1, max_threshold)))
    pack_file = draw(st.integers(1, 4 * max_threshold))
    return Thresholds(inline=inline, dedicated=dedicated, pack_file=pack_file)


def sizes_around(limits: Thresholds, spread: int = 2, upto: int | None = None) -> st.SearchStrategy[int]:
    """Blob sizes at and next to the thresholds (``t - spread .. t + spread`` of inline and dedicated, and 0),
    mixed with arbitrary sizes up to ``upto`` (default: twice the larger threshold)."""
    edges = sorted({max(0, t + d) for t in (0, limits.inline, limits.dedicated) for d in range(-spread, spread + 1)})
    top = upto if upto is not None else 2 * max(limits.inline, limits.dedicated) + 2
    return st.one_of(st.sampled_from(edges), st.integers(0, top))


def blob_payloads(sizes: st.SearchStrategy[int]) -> st.SearchStrategy[bytes]:
    """Bytes of the drawn size whose content identifies both the seed and the offset, so that a read of the
    wrong range or the wrong blob never passes for the right one."""

    def make(size: int, seed: int) -> bytes:
        return bytes((seed * 131 + i * 7 + (i >> 8)) % 256 for i in range(size))

    return st.builds(make, sizes, st.integers(0, 255))


def blob_columns(limits: Thresholds, min_rows: int = 1, max_rows: int = 12,
                 nulls: bool = True) -> st.SearchStrategy[list[bytes | None]]:
    """One blob column's values around ``limits`` (None rows are null blobs)."""
    value = blob_payloads(sizes_around(limits))
    return st.lists(st.one_of(st.none(), value) if nulls else value, min_size=min_rows, max_size=max_rows)


# --- drawing operations --------------------------------------------------------------------------------

ROOTED_KINDS = ("append", "delete", "add_base", "relocate", "cleanup")
ALL_KINDS = ("append", "delete", "add_base", "tag", "branch", "shallow_clone", "deep_clone", "relocate", "cleanup")


def pick(draw: Draw, items: Sequence[T]) -> T:
    """One of ``items``, drawn as its index: one choice however many there are (``sampled_from`` of a single
    item draws nothing), so that when Hypothesis deletes an earlier step of a program, and a later step finds
    fewer versions or roots to pick from, the choices after it still line up and the program keeps shrinking."""
    return items[draw(st.integers(0, len(items) - 1))]


def _draw_targets(draw: Draw, version: VersionModel, rotate_all: bool = True,
                  known: frozenset[str] = KNOWN_FINDINGS) -> Targets:
    """Targets for a write: the root, every base (``"all"``, ``"bases"``; not when ``rotate_all`` is false)
    or a sequence of user bases."""
    user = [b.dir for b in version.bases if b.dir.startswith("bases/")]
    choices = ["root", "all"] if rotate_all else ["root"]
    if rotate_all and (version.bases or "F-029" not in known):  # F-029: pylance refuses it without a base
        choices.append("bases")
    choice = pick(draw, [*choices, "some"] if user else choices)
    if choice == "root":
        return None
    if choice in ("all", "bases"):
        return "all" if choice == "all" else "bases"
    return tuple(pick(draw, user) for _ in range(draw(st.integers(1, 4))))


BASE_KINDS: tuple[tuple[bool, bool, bool], ...] = tuple(
    (named, is_root, file_uri) for file_uri in (False, False, False, True) for is_root in (False, True)
    for named in (True, True, True, True, True, False))
"""``(named, is_dataset_root, file_uri)`` of a drawn base: five in six named (several unnamed bases are accepted at
create, F-021), half dataset roots, one in four registered as a ``file://`` URI; simplest first."""


def _draw_base(draw: Draw, model: Model) -> BaseSpec:
    """A new base below ``bases/``, its kind drawn as one choice (``pick``): the step of the writer machine that
    adds one then has as few choices as Hypothesis's shrinker deletes at once, so an unneeded step goes whole."""
    key = model.fresh("bases/b")
    named, is_root, file_uri = pick(draw, BASE_KINDS)
    return BaseSpec(key, key.split("/")[1] if named else None, is_root, file_uri)


def draw_create(draw: Draw, model: Model, root: str = "ds") -> Create:
    bases = [_draw_base(draw, model) for _ in range(draw(st.integers(0, 3)))]
    count = draw(st.integers(1, 8))
    version = Model.initial_version(Create(root, 0, 0, tuple(bases)))
    return Create(root, model.next_row, count, tuple(bases), _draw_targets(draw, version, known=model.known),
                  draw(st.integers(1, 4)))


def sources(model: Model, kind: str) -> list[Any]:
    """What an operation of ``kind`` can act on in ``model`` (the last argument of its ``DRAWERS`` entry; none:
    nothing now): a ``(family, tag)`` to clone from, a root with a live row to delete, a root with a base to
    relocate, or any root (the root written, or whose version a tag, branch or deep clone names)."""
    if kind == "shallow_clone":
        return [(family, tag) for family in sorted(model.tags) for tag in sorted(model.tags[family])]
    roots = [model.roots[key] for key in sorted(model.roots)]
    if kind == "delete":
        roots = [r for r in roots if r.head.live_ids()]
    elif kind == "relocate":
        roots = [r for r in roots if any(b.dir.startswith("bases/") for b in r.head.bases)]
    return [r.dir for r in roots]


def draw_append(draw: Draw, model: Model, root_key: str) -> Append:
    root = model.roots[root_key]
    count = draw(st.integers(1, 6))
    # F-019: in a deep clone the reference keeps non-root bases pylance drops, so rotating over "all bases"
    # would differ by construction; such roots get explicit targets only.
    targets = _draw_targets(draw, root.head, rotate_all=not root.reference_only_bases, known=model.known)
    return Append(root.dir, model.next_row, count, targets, draw(st.integers(1, 3)))


def draw_delete(draw: Draw, model: Model, root_key: str) -> Delete:
    live = model.roots[root_key].head.live_ids()
    ids = {pick(draw, live) for _ in range(draw(st.integers(1, 4)))}
    if "F-022" not in model.known and draw(st.integers(0, 3)) == 0:
        ids = {model.next_row + 1000}  # matches nothing
    return Delete(root_key, tuple(sorted(ids)))  # matches a live row while F-022 is known


def draw_add_base(draw: Draw, model: Model, root_key: str) -> AddBase:
    return AddBase(root_key, _draw_base(draw, model))


def draw_tag(draw: Draw, model: Model, root_key: str) -> Tag:
    root = model.roots[root_key]
    version = pick(draw, sorted(root.versions))
    return Tag(root.family, model.fresh("t"), root.branch, version)  # ASCII names only (F-006)


def draw_branch(draw: Draw, model: Model, root_key: str) -> Branch:
    parent = model.roots[root_key]
    version = pick(draw, sorted(parent.versions))
    name = model.fresh("f")
    if parent.branch is not None and draw(st.booleans()):
        name = f"{parent.branch}/{name}"  # nested names make nested tree/ directories (docs/lance-format.md §11.2)
    return Branch(parent.family, name, parent.branch, version)


def draw_shallow_clone(draw: Draw, model: Model, tagged: tuple[str, str]) -> ShallowClone:
    family, tag = tagged
    return ShallowClone(family, tag, model.fresh("c"))


def draw_deep_clone(draw: Draw, model: Model, root_key: str) -> DeepClone:
    root = model.roots[root_key]
    version = pick(draw, sorted(root.versions))
    return DeepClone(root.family, root.branch, version, model.fresh("d"))


def draw_relocate(draw: Draw, model: Model, root_key: str) -> Relocate:
    user = sorted(b.dir for b in model.roots[root_key].head.bases if b.dir.startswith("bases/"))
    moved = sorted({pick(draw, user) for _ in range(draw(st.integers(1, 4)))})
    return Relocate(root_key, tuple((old, model.fresh("bases/m")) for old in moved))


def draw_cleanup(draw: Draw, model: Model, root_key: str) -> Cleanup:
    retain = draw(st.one_of(st.none(), st.integers(1, 4)))
    older_than_zero = True if retain is None else draw(st.booleans())
    return Cleanup(root_key, older_than_zero, retain, draw(st.booleans()), draw(st.integers(0, 3)) == 0)


DRAWERS: dict[str, Callable[[Draw, Model, Any], ModelOperation]] = {
    "append": draw_append,
    "delete": draw_delete,
    "add_base": draw_add_base,
    "tag": draw_tag,
    "branch": draw_branch,
    "shallow_clone": draw_shallow_clone,
    "deep_clone": draw_deep_clone,
    "relocate": draw_relocate,
    "cleanup": draw_cleanup,
}
"""Each kind's drawer, given the model and a source it acts on (``sources``)."""


def draw_operation(draw: Draw, model: Model, kind: str, root: str | None = None) -> ModelOperation | None:
    """One operation of ``kind`` that is valid for ``model`` (None when the model offers none: no live row
    to delete, no tag to clone from, no base to relocate). ``root`` fixes the root for the kinds that act on
    one (append, delete, add_base, relocate, cleanup).

    Known divergences the model does not express are never drawn: tag names are ASCII (F-006); base paths are
    absolute (F-012); a delete always matches a live row (F-022); a shallow clone is always made from a
    tag (CLONE-005), because cleaning an untagged source may legitimately break the clone (the clone-primitives
    post)."""
    found = sources(model, kind)
    if root is not None and kind in ROOTED_KINDS:
        found = [s for s in found if s == root]
    return DRAWERS[kind](draw, model, pick(draw, found)) if found else None


@st.composite
def operation_sequences(draw: st.DrawFn, min_size: int = 1, max_size: int = 12,
                        kinds: Iterable[str] = ALL_KINDS) -> list[ModelOperation]:
    """A ``Create`` of ``ds`` then up to ``max_size`` operations of ``kinds``, each valid when its turn comes
    (the model is advanced as they are drawn)."""
    model = Model()
    allowed = list(kinds)
    first = draw_create(draw, model)
    model.apply(first)
    ops: list[ModelOperation] = [first]
    for _ in range(draw(st.integers(min_size, max_size))):
        op = draw_operation(draw, model, draw(st.sampled_from(allowed)))
        if op is None:
            continue
        model.apply(op)
        ops.append(op)
    return ops
