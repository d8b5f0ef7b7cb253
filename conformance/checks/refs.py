"""Checks of the refs a main root keeps: tag and branch JSON under ``_refs/``, the versions they name and
the branch roots under ``tree/`` (catalogue area REF; docs/lance-format.md §11).

Refs live only at the main root, so both checks run once, on the main root's context, and look at every
branch root themselves. Each JSON file is decoded on its own: one bad file never hides the others.
"""

from __future__ import annotations

from collections.abc import Iterator

from reference.codec import decode_branch, decode_manifest_file, decode_tag
from reference.errors import InvalidRefName, LanceSpecError
from reference.layout import (
    BRANCHES_DIR,
    TAGS_DIR,
    branch_root,
    ref_name_from_file,
)
from reference.table import Dataset, VersionEntry

from . import DatasetContext, dataset_check

#: A ref naming branch "main" means the main branch, as null does (pylance 14.0.2 reads it so).
MAIN = "main"


def _is_main_root(ctx: DatasetContext) -> bool:
    return ctx.dataset.branch_name is None and ctx.dataset.uri == ctx.dataset.main_root


def _ref_files(ctx: DatasetContext, directory: str) -> Iterator[tuple[str, str]]:
    """``(file name, uri)`` of every ``*.json`` directly in ``directory`` of the main root."""
    for info in ctx.dataset.ref_files(directory):
        yield info.uri.rsplit("/", 1)[-1], info.uri


class _Roots:
    """The attached versions of the main root and of branch roots, listed once each."""

    def __init__(self, ctx: DatasetContext) -> None:
        self._ctx = ctx
        self._entries: dict[str | None, dict[int, VersionEntry]] = {}

    def root(self, branch: str | None) -> Dataset:
        main = self._ctx.dataset.main_root
        if branch is None or branch == MAIN:
            return Dataset(main, self._ctx.storage)
        return Dataset(branch_root(main, branch), self._ctx.storage, main_root=main, branch=branch)

    def entries(self, branch: str | None) -> dict[int, VersionEntry]:
        branch = None if branch == MAIN else branch
        if branch not in self._entries:
            listed = self.root(branch).version_entries(allow_mixed=True)
            self._entries[branch] = {e.version: e for e in listed}
        return self._entries[branch]


def _branch_label(branch: str | None) -> str:
    return "main" if branch in (None, MAIN) else f"branch {branch!r}"


@dataset_check("refs.tags", "REF-001", "REF-002", "REF-005")
def tags(ctx: DatasetContext) -> None:
    """Every ``_refs/tags/*.json`` is a JSON object with an integer version (REF-001); the version exists
    on the tag's branch, main or ``tree/{branch}`` (REF-002); SHOULD: manifestSize equals the size of
    that version's manifest file (REF-005). Runs on the main root only (tags live there)."""
    if not _is_main_root(ctx):
        return
    roots = _Roots(ctx)
    for file_name, uri in _ref_files(ctx, TAGS_DIR):
        name = ref_name_from_file(file_name)
        try:
            record = decode_tag(ctx.storage.get(uri), uri)
        except LanceSpecError as exc:  # a format error, or a file that is no regular file or too large
            ctx.finding("REF-001", uri, f"tag {name!r} does not parse: {exc.message}")
            continue
        try:
            entry = roots.entries(record.branch).get(record.version)
        except InvalidRefName as exc:
            ctx.finding("REF-002", uri, f"tag {name!r} names branch {record.branch!r}: {exc.message}",
                        code="tag_branch_invalid")
            continue
        if entry is None:
            ctx.finding("REF-002", uri, f"tag {name!r} names version {record.version} of "
                        f"{_branch_label(record.branch)}, which has no manifest", code="tag_version_missing")
            continue
        if record.manifest_size is None:
            ctx.finding("REF-005", uri, f"tag {name!r} records no manifestSize (the manifest of version "
                        f"{record.version} is {entry.size} bytes)", code="tag_manifest_size_absent")
        elif record.manifest_size != entry.size:
            ctx.finding("REF-005", uri, f"tag {name!r} records manifestSize {record.manifest_size}, but the "
                        f"manifest of version {record.version} is {entry.size} bytes",
                        code="tag_manifest_size_mismatch")


@dataset_check("refs.branches", "REF-003", "REF-004", "REF-005")
def branches(ctx: DatasetContext) -> None:
    """Every ``_refs/branches/*.json`` is a JSON object with an integer parentVersion, and ``tree/{name}``
    holds at least one manifest, each recording ``branch = name`` (REF-003); the fork point (parentBranch,
    null = main, at parentVersion) still has its manifest (REF-004); SHOULD: manifestSize equals the size
    of the manifest the branch names, the fork point's, which is what pylance 14.0.2 records (REF-005).
    Runs on the main root only (branch records live there)."""
    if not _is_main_root(ctx):
        return
    roots = _Roots(ctx)
    for file_name, uri in _ref_files(ctx, BRANCHES_DIR):
        name = ref_name_from_file(file_name)
        try:
            branch_root(ctx.dataset.main_root, name)
        except InvalidRefName as exc:
            ctx.finding("REF-003", uri, f"{exc.message}; it is not followed", code="branch_name_invalid")
            continue
        try:
            record = decode_branch(ctx.storage.get(uri), uri)
        except LanceSpecError as exc:  # a format error, or a file that is no regular file or too large
            ctx.finding("REF-003", uri, f"branch {name!r} does not parse: {exc.message}",
                        code="branch_file_undecodable")
        else:
            _fork_point(ctx, roots, name, uri, record.parent_branch, record.parent_version, record.manifest_size)
        _branch_root(ctx, roots, name)


def _fork_point(ctx: DatasetContext, roots: _Roots, name: str, uri: str, parent: str | None, version: int,
                manifest_size: int | None) -> None:
    try:
        entry = roots.entries(parent).get(version)
    except InvalidRefName as exc:
        ctx.finding("REF-004", uri, f"branch {name!r} names parent branch {parent!r}: {exc.message}",
                    code="branch_parent_invalid")
        return
    if entry is None:
        ctx.finding("REF-004", uri, f"branch {name!r} was forked from version {version} of "
                    f"{_branch_label(parent)}, which has no manifest", code="branch_fork_version_missing")
        return
    if manifest_size is None:
        ctx.finding("REF-005", uri, f"branch {name!r} records no manifestSize (the fork manifest, version "
                    f"{version} of {_branch_label(parent)}, is {entry.size} bytes)", code="branch_manifest_size_absent")
    elif manifest_size != entry.size:
        ctx.finding("REF-005", uri, f"branch {name!r} records manifestSize {manifest_size}, but the fork "
                    f"manifest (version {version} of {_branch_label(parent)}) is {entry.size} bytes",
                    code="branch_manifest_size_mismatch")


def _branch_root(ctx: DatasetContext, roots: _Roots, name: str) -> None:
    root = roots.root(name)
    entries = roots.entries(name)
    if not entries:
        ctx.finding("REF-003", root.uri, f"branch {name!r} has no dataset: tree/{name}/_versions holds no manifest",
                    code="branch_root_empty")
        return
    for version, entry in sorted(entries.items()):
        try:
            manifest = decode_manifest_file(ctx.storage.get(entry.uri), entry.uri,
                                            ctx.storage.limits).manifest
        except LanceSpecError:
            continue  # an unreadable manifest is history.manifests_readable's finding (HIST-001)
        recorded = manifest.branch if manifest.HasField("branch") else None
        if recorded != name:
            shown = "no branch" if recorded is None else f"branch {recorded!r}"
            ctx.finding("REF-003", entry.uri, f"version {version} in tree/{name} records {shown}, not {name!r}",
                        code="branch_name_mismatch")
