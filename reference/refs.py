"""Tags and branches: named references to versions (docs/lance-format.md §11; clone-primitives post "In practice:
Stability with Tags" for why tags matter: cleanup keeps tagged versions).

Tags are JSON files at the main root, ``_refs/tags/{name}.json``. A branch is a shallow clone of its
fork version committed into ``tree/{name}`` with ``Manifest.branch`` set, plus a JSON record at
``_refs/branches/{name}.json`` (written after the clone commits; the JSON is the source of truth).

Name rules are pylance 14.0.2's, with one deliberate difference: tag names must be ASCII, because a
non-ASCII tag makes pylance unable to list any tag of the dataset (spec/findings.md F-006).
"""

from __future__ import annotations

import re
import time
import uuid as uuidlib
from collections.abc import Iterable
from datetime import UTC, datetime

from .clone import shallow_clone_into
from .codec import BranchRecord, TagRecord, decode_branch
from .codec.refs import rfc3339_nanos
from .errors import (
    DatasetAlreadyExists,
    InvalidRefName,
    ObjectAlreadyExists,
    RefAlreadyExists,
    RefInUse,
    RefNotFound,
)
from .layout import branch_ref_path, branch_root, tag_ref_path
from .store.uri import join
from .table import Dataset

#: A version on the current branch (int), a tag (str), or (branch or None for main, version or None).
Reference = int | str | tuple[str | None, int | None] | None

_TAG_CHARS = re.compile(r"^[A-Za-z0-9._-]+$")


def validate_tag_name(name: str, where: str | None = None) -> None:
    """Non-empty ASCII letters, digits, ``.``, ``-``, ``_``; no leading or trailing ``.``; no ``..``;
    not ending in ``.lock``. ``where``: the dataset the tag was meant for (named by the error)."""
    if not name:
        raise InvalidRefName("tag name is empty", where)
    if not _TAG_CHARS.match(name):
        raise InvalidRefName(f"tag name {name!r} may only hold ASCII letters, digits, '.', '-' and '_'", where)
    _common_rules(name, "tag", where)


def _common_rules(name: str, kind: str, where: str | None = None) -> None:
    if name.startswith(".") or name.endswith("."):
        raise InvalidRefName(f"{kind} name {name!r} may not begin or end with '.'", where)
    if ".." in name:
        raise InvalidRefName(f"{kind} name {name!r} may not contain '..'", where)
    if name.endswith(".lock"):
        raise InvalidRefName(f"{kind} name {name!r} may not end with '.lock'", where)


def validate_branch_name(name: str, where: str | None = None) -> None:
    """Segments separated by single ``/`` (none leading or trailing), each of letters, digits, ``.``,
    ``-``, ``_``; no ``..`` or ``\\``; not ending in ``.lock``; ``main`` is the default branch's name.
    ``where``: the dataset the branch was meant for (named by the error)."""
    if not name:
        raise InvalidRefName("branch name is empty", where)
    if name == "main":
        raise InvalidRefName("'main' is reserved for the default branch", where)
    if name.startswith("/") or name.endswith("/") or "//" in name:
        raise InvalidRefName(f"branch name {name!r} may not begin or end with '/' or contain '//'", where)
    if "\\" in name:
        raise InvalidRefName(f"branch name {name!r} may not contain '\\'", where)
    for segment in name.split("/"):
        if not all(c.isalnum() or c in "._-" for c in segment):
            raise InvalidRefName(f"branch name segment {segment!r} may only hold letters, digits, '.', '-', '_'",
                                 where)
        _common_rules(segment, "branch", where)


def resolve_reference(dataset: Dataset, reference: Reference) -> tuple[Dataset, int]:
    """The root holding the referenced version, and the version number. Raises RefNotFound and
    VersionNotFound (through ``snapshot``) for what does not exist."""
    main = dataset.main()
    if isinstance(reference, str):
        tag = main.tag(reference)
        return (main.branch(tag.branch) if tag.branch else main), tag.version
    if isinstance(reference, tuple):
        branch, version = reference
        root = main.branch(branch) if branch not in (None, "main") else main
        return root, root.latest_version() if version is None else version
    if reference is None:
        return dataset, dataset.latest_version()
    return dataset, reference


# --- tags ------------------------------------------------------------------------------------------


def _tag_record(root: Dataset, version: int, created_at: str | None = None,
                metadata: dict[str, str] | None = None) -> TagRecord:
    snapshot = root.snapshot(version, strict=False)
    now = rfc3339_nanos(datetime.now(UTC))
    return TagRecord(version=version, branch=root.branch_name, manifest_size=snapshot.manifest_file.size,
                     created_at=created_at or now, updated_at=now, metadata=dict(metadata or {}))


def create_tag(dataset: Dataset, name: str, reference: Reference = None) -> TagRecord:
    """Tag a version (default: the latest of ``dataset``'s branch). Refuses an invalid or taken name."""
    main = dataset.main()
    validate_tag_name(name, main.uri)
    root, version = resolve_reference(dataset, reference)
    record = _tag_record(root, version)
    uri = join(main.uri, tag_ref_path(name))
    try:
        main.storage.put_if_absent(uri, record.encode())
    except ObjectAlreadyExists:
        raise RefAlreadyExists(f"tag {name!r} already exists", uri) from None
    return record


def update_tag(dataset: Dataset, name: str, reference: Reference = None) -> TagRecord:
    """Point an existing tag at another version; its creation time and metadata are kept."""
    main = dataset.main()
    old = main.tag(name)
    root, version = resolve_reference(dataset, reference)
    record = _tag_record(root, version, old.created_at, old.metadata)
    main.storage.put(join(main.uri, tag_ref_path(name)), record.encode())
    return record


def delete_tag(dataset: Dataset, name: str) -> None:
    """Remove a tag; a missing tag is an error."""
    main = dataset.main()
    main.tag(name)
    main.storage.delete(join(main.uri, tag_ref_path(name)))


# --- branches --------------------------------------------------------------------------------------


def create_branch(dataset: Dataset, name: str, reference: Reference = None) -> Dataset:
    """Fork branch ``name`` from a version: a shallow clone into ``tree/{name}`` whose manifest keeps the
    fork version number and records ``branch = name``, then the branch's JSON record."""
    main = dataset.main()
    validate_branch_name(name, main.uri)
    ref_uri = join(main.uri, branch_ref_path(name))
    if main.storage.exists(ref_uri):
        raise RefAlreadyExists(f"branch {name!r} already exists", ref_uri)
    source, version = resolve_reference(dataset, reference)
    target = Dataset(branch_root(main.uri, name), main.storage, main_root=main.uri, branch=name)
    if target.version_entries():
        raise DatasetAlreadyExists(f"tree/{name} already holds a dataset without a branch record", target.uri)
    shallow_clone_into(source, version, target, branch_name=name)
    parent = source.branch_name
    lineage = decode_branch(main.storage.get(join(main.uri, branch_ref_path(parent))),
                            ref_uri).version_mapping if parent else ()
    record = BranchRecord(
        parent_version=version, parent_branch=parent,
        version_mapping=(*lineage, (version, uuidlib.uuid4().hex)),
        create_at=int(time.time()),
        # pylance 14.0.2 records the size of the fork manifest (the parent's, at parent_version).
        manifest_size=source.snapshot(version, strict=False).manifest_file.size,
    )
    try:
        main.storage.put_if_absent(ref_uri, record.encode())
    except ObjectAlreadyExists:
        _remove_tree(main, name, exclude=())
        raise RefAlreadyExists(f"branch {name!r} was created concurrently", ref_uri) from None
    return target


def _remove_tree(main: Dataset, name: str, exclude: Iterable[str]) -> None:
    """Delete the objects of ``tree/{name}``, except those of nested branches' own trees."""
    prefix = branch_root(main.uri, name)
    nested = [branch_root(main.uri, other) + "/" for other in exclude]
    for info in main.storage.list(prefix):
        if not any(info.uri.startswith(n) for n in nested):
            main.storage.delete(info.uri)


def delete_branch(dataset: Dataset, name: str) -> None:
    """Delete a branch: refused while another branch was forked from it or a tag points into it; the
    JSON record goes first, then the branch's tree (never another branch's tree nested under it)."""
    main = dataset.main()
    branches = main.branches()
    if name not in branches:
        raise RefNotFound(f"branch {name!r} does not exist", join(main.uri, branch_ref_path(name)))
    children = sorted(b for b, rec in branches.items() if rec.parent_branch == name)
    if children:
        raise RefInUse(f"branch {name!r} has branches forked from it: {', '.join(children)}", main.uri)
    tags = sorted(t for t, rec in main.tags().items() if rec.branch == name)
    if tags:
        raise RefInUse(f"branch {name!r} has tags pointing into it: {', '.join(tags)}", main.uri)
    main.storage.delete(join(main.uri, branch_ref_path(name)))
    nested = [b for b in branches if b != name and b.startswith(name + "/")]
    _remove_tree(main, name, exclude=nested)

