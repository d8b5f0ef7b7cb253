"""Checks of deletion file metadata that need no file read (catalogue DEL-008; the Table Format's
DeletionFile read_version). Reading the files themselves is ``files.deletion_files``."""

from __future__ import annotations

from . import VersionContext, version_check
from .files import _with_deletion
from .screen import suspects


@version_check("deletions.read_version", "DEL-008")
def read_version(ctx: VersionContext) -> None:
    """A deletion file's read_version, the version it was built from, is below the version whose
    manifest records it (DEL-008)."""
    for fragment in suspects(ctx.snap, _with_deletion):
        deletion = fragment.deletion
        if deletion is not None and deletion.read_version >= ctx.snap.version:
            ctx.finding("DEL-008", ctx.snap.manifest_uri,
                        f"read_version {deletion.read_version} is not below version {ctx.snap.version}: the "
                        "deletion was not built from an earlier version",
                        f"fragment {fragment.id} deletion file {deletion.file.path}")
