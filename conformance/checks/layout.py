"""Checks of names and places: manifest names in ``_versions/``, data file names, transaction file names
and the directories of a dataset root (catalogue area LAYOUT; Storage Layout spec "Basic Layout", "File Naming
Conventions"; docs/lance-format.md §2, §5.1, §6)."""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Iterator

from reference.errors import LanceSpecError
from reference.layout import (
    DETACHED_BIT,
    STANDARD_DIRS,
    TRANSACTION_FILE_RE,
    TRANSACTIONS_DIR,
    VERSION_HINT_NAME,
    VERSIONS_DIR,
    ManifestNaming,
    bare_name_escape,
    branch_root,
    is_data_file_name,
    manifest_name,
    parse_manifest_name,
    path_escape,
)
from reference.store.uri import join, relative_to

from . import DatasetContext, Prefetch, VersionContext, dataset_check, version_check
from .portability import is_relative_path
from .screen import nonstandard_names, suspects

#: Top-level directories a dataset root may hold: the standard ones and blob v2's managed ``_blobs/``.
ROOT_DIRECTORIES = frozenset((*STANDARD_DIRS, "_blobs"))

#: Names of staging files writers leave beside their targets while writing (``.tmp-{uuid}``).
_STAGING_PREFIX = ".tmp"


@dataset_check("layout.manifest_names", "LAYOUT-001", "LAYOUT-002")
def manifest_names(ctx: DatasetContext) -> None:
    """Every manifest in ``_versions/`` is named by the V1 (``{version}.manifest``) or V2 (20 digits,
    u64::MAX - version) scheme, canonically, so that each version is one file (LAYOUT-001); a
    ``.manifest`` file whose name is neither is no version, and is reported. Detached versions
    (``d{n}.manifest``) must have the top bit of n set. Files that do not claim to be manifests (the
    version hint, staging files, anything not ending in ``.manifest``) are not versions and not judged.
    V1 and V2 names are not mixed in one ``_versions/`` (LAYOUT-002)."""
    directory = join(ctx.dataset.uri, VERSIONS_DIR)
    namings: Counter[ManifestNaming] = Counter()
    examples: dict[ManifestNaming, str] = {}
    for info in ctx.storage.list(directory, recursive=False):
        name = info.uri.rsplit("/", 1)[-1]
        if name == VERSION_HINT_NAME or name.startswith(_STAGING_PREFIX) or not name.endswith(".manifest"):
            continue
        parsed = parse_manifest_name(name)
        if parsed is None:
            ctx.finding("LAYOUT-001", info.uri, f"{name!r} is named like a manifest but follows neither the V1 "
                        "({version}.manifest) nor the V2 (20-digit u64::MAX - version) scheme: it is no version",
                        code="manifest_name_unknown_scheme")
            continue
        if parsed.detached:
            if not parsed.version & DETACHED_BIT:
                ctx.finding("LAYOUT-001", info.uri, f"{name!r} is named as a detached version, but {parsed.version} "
                            "does not have the top (detached) bit set", code="manifest_name_detached_bit")
            continue
        canonical = manifest_name(parsed.version, parsed.naming)
        if name != canonical:
            ctx.finding("LAYOUT-001", info.uri, f"{name!r} is not the canonical {parsed.naming.name} name of version "
                        f"{parsed.version} ({canonical!r}): one version may then have several files",
                        code="manifest_name_not_canonical")
            continue
        namings[parsed.naming] += 1
        examples.setdefault(parsed.naming, name)
    if len(namings) > 1:
        detail = ", ".join(f"{n} {naming.name} (e.g. {examples[naming]})" for naming, n in sorted(
            namings.items(), key=lambda item: item[0].name))
        ctx.finding("LAYOUT-002", directory, f"{VERSIONS_DIR}/ mixes manifest naming schemes: {detail}")


@version_check("layout.data_file_names", "LAYOUT-003", fragment_local=True)
def data_file_names(ctx: VersionContext) -> None:
    """SHOULD: a data file is named ``{stem}.lance`` with a 50-character stem, 24 binary digits then 26
    lowercase hex digits (LAYOUT-003), and DataFile.path is that bare name. A path that is not relative
    is PORT-001's; only its last component is judged here."""
    for fragment in suspects(ctx.snap, nonstandard_names):
        for data_file in fragment.proto.files:
            path = data_file.path
            name = path if is_relative_path(path) else path.rsplit("/", 1)[-1]
            if is_data_file_name(name):
                continue
            stem = name[: -len(".lance")] if name.endswith(".lance") else name
            if "/" in name:
                reason = "is not a bare file name"
            elif not name.endswith(".lance"):
                reason = "does not end in .lance"
            elif len(stem) != 50:
                reason = f"has a {len(stem)}-character stem, not 50"
            else:  # a .lance name that is_data_file_name refuses: its stem does not match DATA_FILE_STEM_RE
                reason = "has a stem that is not 24 binary then 26 lowercase hex digits"
            ctx.finding("LAYOUT-003", ctx.snap.manifest_uri, f"data file name {name!r} {reason}",
                        f"fragment {fragment.id} file {path}")


@version_check("layout.transaction_file_names", "LAYOUT-004")
def transaction_file_names(ctx: VersionContext) -> None:
    """The transaction file a manifest names is ``{read_version}-{uuid}.txn`` (decimal read version,
    hyphenated lowercase UUID), a bare name in ``_transactions/`` of the committing root, and, when the
    manifest carries the transaction inline, its read version and UUID are that transaction's
    (LAYOUT-004). An empty name (transaction files disabled) is not judged here; whether the file exists
    and matches the inline copy is history's (HIST-002, HIST-004)."""
    name = ctx.snap.manifest.transaction_file
    if not name:
        return
    where = ctx.snap.manifest_uri
    match = TRANSACTION_FILE_RE.match(name)
    if match is None:
        escape = bare_name_escape(name)
        hint = f" (it {escape}, so it is not read; a file in {TRANSACTIONS_DIR}/ is meant)" if escape else ""
        ctx.finding("LAYOUT-004", where, f"transaction file {name!r} is not named {{read_version}}-{{uuid}}.txn{hint}",
                    code="transaction_name_malformed")
        return
    txn = ctx.snap.manifest_file.transaction
    if txn is None:
        return
    read_version, txn_uuid = int(match.group(1)), match.group(2)
    if read_version != txn.read_version or txn_uuid != txn.uuid:
        ctx.finding("LAYOUT-004", where, f"transaction file {name!r} does not name the manifest's transaction "
                    f"(read_version {txn.read_version}, uuid {txn.uuid!r})", code="transaction_name_mismatch")


def _nested_branch_dirs(ctx: DatasetContext) -> set[str]:
    """For a branch root, the top-level directories that lead to other branch roots nested below it
    (branch ``a`` at ``tree/a`` and branch ``a/b`` at ``tree/a/b``: ``b/`` in ``a``'s root)."""
    if ctx.dataset.uri == ctx.dataset.main_root:
        return set()
    try:
        names = list(ctx.dataset.main().branches())
    except LanceSpecError:  # unreadable refs are the refs checks' findings
        return set()
    out = set()
    for name in names:
        if path_escape(name) is not None:
            continue  # refs.branches reports the name (REF-003)
        below = relative_to(branch_root(ctx.dataset.main_root, name), ctx.dataset.uri)
        if below:
            out.add(below.split("/", 1)[0])
    return out


def _root_listing(ctx: DatasetContext) -> Iterator[Prefetch]:
    """The walk of the whole root (the other listings of the run are cut out of it)."""
    storage, root = ctx.storage, ctx.dataset.uri
    yield ("list", root), lambda: list(storage.list(root, recursive=True))


def top_entries(uris: list[str], prefix: str) -> tuple[list[str], Counter[str]]:
    """What the listing ``uris`` holds directly below ``prefix`` (a directory's URI and ``/``): the names of its
    files, in listing order, and the number of objects below each of its subdirectories (by name). URIs outside
    ``prefix``, and ``prefix`` itself, count for nothing. A listing in URI order (as every store lists) is
    taken a subdirectory at a time: its objects lie side by side, found by bisection (a root's ``data/`` holds a
    million files); any other listing an object at a time."""
    files: list[str] = []
    dirs: Counter[str] = Counter()
    start = len(prefix)
    if any(map(str.__gt__, uris, itertools.islice(uris, 1, None))):  # not in order
        for uri in uris:
            below = uri[start:] if uri.startswith(prefix) else None
            if not below:
                continue
            top, _, rest = below.partition("/")
            if rest:
                dirs[top] += 1
            else:
                files.append(top)
        return files, dirs
    # every URI below prefix lies in [prefix, prefix less its "/" and then "0"): "0" is the character after "/"
    at, stop = bisect.bisect_left(uris, prefix), bisect.bisect_left(uris, prefix[:-1] + "0")
    while at < stop:
        top, slash, rest = uris[at][start:].partition("/")
        if rest:  # then every URI up to the first past "{prefix}{top}/" lies in that subdirectory, rest and all
            end = bisect.bisect_left(uris, f"{prefix}{top}0", at, stop)
            dirs[top] += end - at
            at = end
            continue
        if top or slash:
            files.append(top)
        at += 1
    return files, dirs


@dataset_check("layout.standard_directories", "LAYOUT-005", prefetch=_root_listing)
def standard_directories(ctx: DatasetContext) -> None:
    """SHOULD: a dataset root holds nothing but the standard subdirectories (``data/``, ``_versions/``,
    ``_transactions/``, ``_deletions/``, ``_indices/``, ``_refs/``, ``tree/``) and blob v2's ``_blobs/``
    (LAYOUT-005): files at the top of the root and unknown directories are reported, one finding per
    entry. Staging files (``.tmp*``) are transient and not judged; a branch root may hold the
    directories that lead to branch roots nested below it (branch ``a/b`` inside branch ``a``)."""
    root = ctx.dataset.uri
    prefix = root.rstrip("/") + "/"  # relative_to's, worked out once: a root holds a million files
    top_files, top_dirs = top_entries([info.uri for info in ctx.storage.list(root, recursive=True)], prefix)
    stray_files = [name for name in top_files if not name.startswith(_STAGING_PREFIX)]
    stray_dirs = Counter({name: n for name, n in top_dirs.items() if name not in ROOT_DIRECTORIES})
    if stray_dirs:
        for nested in _nested_branch_dirs(ctx):
            stray_dirs.pop(nested, None)
    for name in stray_files:
        ctx.finding("LAYOUT-005", join(root, name), f"file {name!r} lies at the top of the dataset root, where only "
                    "the standard directories belong", code="stray_file")
    for name, n in sorted(stray_dirs.items()):
        ctx.finding("LAYOUT-005", join(root, name), f"directory {name + '/'!r} ({n} object(s)) is not a standard "
                    "directory of a dataset root", code="stray_directory")
