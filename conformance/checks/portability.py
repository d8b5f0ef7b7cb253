"""Checks that a dataset can be copied: relative file paths, and no absolute base naming the dataset's
own root (catalogue area PORT; Storage Layout spec "Dataset Portability"; multi-base post "Strict Portability";
docs/lance-format.md §10.4)."""

from __future__ import annotations

import functools
from urllib.parse import urlparse

from lancespec.reference.layout import path_escape
from lancespec.reference.store.uri import is_absolute

from . import VersionContext, version_check
from .bases import branch_family, dataset_root_locations, relation


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
    for fragment in ctx.snap.manifest.fragments:
        for data_file in fragment.files:
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
    """SHOULD: no absolute base path names the dataset's own root or a location inside it (PORT-002): a
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
