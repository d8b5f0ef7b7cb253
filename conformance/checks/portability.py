"""Checks that a dataset can be copied: relative file paths, no absolute base naming the dataset's own
root, and no branch reading a root outside its family, as the branches of a root copied with ``cp -r``
do (catalogue area PORT; Storage Layout spec "Dataset Portability"; multi-base post "Strict Portability";
docs/lance-format.md §10.4; spec/findings.md F-010)."""

from __future__ import annotations

import functools
from urllib.parse import urlparse

from reference.codec import decode_branch, decode_manifest_file
from reference.errors import InvalidRefName, LanceSpecError
from reference.layout import BRANCHES_DIR, TREE_DIR, Base, branch_root, path_escape, ref_name_from_file
from reference.store.uri import is_absolute, join
from reference.table import Dataset, bases_of

from . import DatasetContext, VersionContext, dataset_check, version_check
from .bases import branch_family, dataset_root_locations, relation
from .screen import nonstandard_names, suspects


@functools.lru_cache(maxsize=1 << 18)
def is_relative_path(path: str) -> bool:
    """Whether a recorded file path is relative to its directory and stays in it: no scheme (``s3:``,
    ``file:``, a drive letter), no leading slash, and nothing that could leave the directory
    (``layout.path_escape``: ``..`` segments, percent-encoded separators). Remembered: every version of a
    dataset asks again about the files it shares."""
    return (bool(path) and not path.startswith(("/", "\\")) and not urlparse(path).scheme
            and path_escape(path) is None)


def _escape_note(path: str) -> str:
    reason = path_escape(path)
    return f" (it {reason}; it is not followed)" if reason else ""


@version_check("portability.relative_paths", "PORT-001")
def relative_paths(ctx: VersionContext) -> None:
    """File paths inside the manifest are relative: every DataFile.path and every index file path has
    no scheme and no leading slash, and stays in its directory (no ``..`` segment, no percent-encoded
    separator) (PORT-001). Deletion file paths are derived from numbers, so they are
    relative by construction."""
    where = ctx.snap.manifest_uri
    for fragment in suspects(ctx.snap, nonstandard_names):
        for data_file in fragment.proto.files:
            if not is_relative_path(data_file.path):
                ctx.finding("PORT-001", where, f"data file path {data_file.path!r} is not relative to its data "
                            f"directory{_escape_note(data_file.path)}", f"fragment {fragment.id} file {data_file.path}",
                            code="data_file_path_not_relative")
    index_section = ctx.snap.manifest_file.index_section
    for index in index_section.indices if index_section is not None else ():
        for index_file in index.files:
            if not is_relative_path(index_file.path):
                ctx.finding("PORT-001", where, f"index file path {index_file.path!r} is not relative to its index "
                            f"directory{_escape_note(index_file.path)}",
                            f"index {index.name or '(unnamed)'} file {index_file.path}",
                            code="index_file_path_not_relative")


@version_check("portability.self_reference", "PORT-002")
def self_reference(ctx: VersionContext) -> None:
    """No absolute base path names the dataset's own root or a location inside it (PORT-002): a
    copy of the root would keep pointing at the original.

    A branch root (``{main}/tree/{name}``) registers the main root, and for a branch of a branch the
    parent's root, as dataset-root bases; those are other roots of the same family, not the branch's own
    root, and are no finding (``bases.branch_family``). Bases whose path is not absolute are BASE-002's.
    """
    own = ctx.dataset.uri
    roots = dataset_root_locations(ctx)
    for base in ctx.snap.bases:
        if not base.path or not is_absolute(base.path):
            continue
        rel = relation(base.path, own)
        if rel not in ("equals", "lies inside"):
            continue
        if base.is_dataset_root and branch_family(base.path, own, roots):
            continue
        ctx.finding("PORT-002", ctx.snap.manifest_uri,
                    f"base {base.id} path {base.path} {'is' if rel == 'equals' else 'lies inside'} the dataset's own "
                    f"root {own}: a copy of the root would keep using the original location", f"base {base.id}")


def _latest_bases(ctx: DatasetContext, root: str, versions: tuple[int, ...] = ()) -> list[Base] | None:
    """The bases the latest manifest of ``root`` (and those of ``versions`` of it that exist) register;
    None when the root holds no readable manifest."""
    try:
        entries = {e.version: e for e in Dataset(root, ctx.storage).version_entries(allow_mixed=True)}
    except LanceSpecError:
        return None
    if not entries:
        return None
    found: list[Base] = []
    for version in {max(entries), *(v for v in versions if v in entries)}:
        uri = entries[version].uri
        try:
            decoded = decode_manifest_file(ctx.storage.get(uri), uri, ctx.storage.limits)
            found += bases_of(decoded.manifest)
        except LanceSpecError:
            if version == max(entries):
                return None
    return found


def _in_family(path: str, main: str) -> bool:
    """Whether ``path`` is the main root ``main`` or lies below its ``tree/`` (a branch root of the family)."""
    return relation(path, main) == "equals" or relation(path, join(main, TREE_DIR)) == "lies inside"


@dataset_check("portability.branch_family", "PORT-002")
def copied_branches(ctx: DatasetContext) -> None:
    """A branch reads its family, not a copy's original (PORT-002): every dataset-root base the latest
    manifest of a branch registers is the main root or a branch root below its ``tree/``, or a root its
    parent registers too (a shallow clone's source, which a branch of the clone inherits). The branches
    of a root copied with ``cp -r`` keep the original's root as their parent base: the copy's branches
    read the original, and lose their data when it is cleaned up or removed (F-010).

    Runs on the main root (branch records live there) and judges each branch's latest version, what the
    branch reads now: ``relocate`` adopting a copy rewrites the bases in a new version. A branch or parent
    whose manifests cannot be read is not judged (HIST-001 and REF-003 report it)."""
    dataset = ctx.dataset
    if dataset.branch_name is not None or dataset.uri != dataset.main_root:
        return
    main = dataset.uri
    for info in ctx.storage.list(join(main, BRANCHES_DIR), recursive=False):
        if not info.uri.endswith(".json"):
            continue
        name = ref_name_from_file(info.uri.rsplit("/", 1)[-1])
        try:
            root = branch_root(main, name)
            record = decode_branch(ctx.storage.get(info.uri), info.uri)
            parent = main if record.parent_branch in (None, "main") else branch_root(main, record.parent_branch)
        except (InvalidRefName, LanceSpecError):
            continue  # REF-003 and REF-004 report it
        own = _latest_bases(ctx, root)
        inherited = _latest_bases(ctx, parent, (record.parent_version,))
        if own is None or inherited is None:
            continue
        for base in own:
            if (not base.is_dataset_root or not base.path or not is_absolute(base.path) or _in_family(base.path, main)
                    or any(relation(base.path, b.path) == "equals" for b in inherited if b.is_dataset_root)):
                continue
            ctx.finding("PORT-002", root, f"branch {name!r} reads base {base.id} at {base.path}, a dataset root "
                        f"outside its family (the main root {main} and its {TREE_DIR}/) that its parent does not "
                        "register: the branch still reads the root it was copied from", f"base {base.id}",
                        code="branch_reads_foreign_root")
