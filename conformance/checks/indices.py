"""Checks of a version's indices: the index directory each resolves to exists and holds the files its
metadata lists (catalogue IDX-001; the Storage Layout's Basic Layout ``_indices/{UUID}/`` and two-step
resolution; docs/lance-format.md §3.3). A base_id naming no base (BASE-003), an unusable base (BASE-001,
BASE-002) or an absolute file path (PORT-001) is another check's finding, and the index is skipped.
"""

from __future__ import annotations

from lancespec.reference.errors import LanceSpecError, ObjectNotFound
from lancespec.reference.layout import FileKind, base_directory, index_directory_name
from lancespec.reference.store.uri import join

from . import VersionContext, version_check
from .bases import unusable_base_ids
from .portability import is_relative_path


@version_check("indices.files_exist", "IDX-001")
def files_exist(ctx: VersionContext) -> None:
    """Every index resolves to ``{root or dataset-root base}/_indices/{uuid}/`` (``{base}/{uuid}/`` for a
    non-root base), which holds at least one object, and every file its metadata lists exists there with
    the recorded size (IDX-001). A system index, which covers no field, lists no file and keeps its content
    in its inline details (the MemWAL index of LanceDB's LSM writes), has no directory to check."""
    section = ctx.snap.manifest_file.index_section
    if section is None:
        return
    bases = {b.id: b for b in ctx.snap.bases}
    unusable = unusable_base_ids(ctx.snap)
    for index in section.indices:
        name = index_directory_name(index.uuid.uuid)
        base_id = index.base_id if index.HasField("base_id") else None
        manifest, where = ctx.snap.manifest_uri, f"index {index.name or name}"
        if (base_id is not None and base_id in unusable) or not all(is_relative_path(f.path) for f in index.files):
            continue  # BASE-001/BASE-002's or PORT-001's finding
        if not index.fields and not index.files and index.HasField("index_details"):
            continue  # a system index: its details are its content
        try:
            directory = join(base_directory(ctx.snap.root, bases, base_id, FileKind.INDEX, manifest), name)
        except LanceSpecError:
            continue  # no such base: BASE-003
        listed = {info.uri.rstrip("/"): info.size for info in ctx.storage.list(directory + "/")}
        if not listed:
            files = ", ".join(join(directory, f.path) for f in index.files[:3]) + (" …" if len(index.files) > 3 else "")
            ctx.finding("IDX-001", directory, f"the index directory {directory}/ holds nothing"
                        + (f"; missing: {files}" if files else ""), where, code="index_directory_empty")
            continue
        for index_file in index.files:
            uri = join(directory, index_file.path)
            try:
                size = listed[uri] if uri in listed else ctx.storage.head(uri).size
            except ObjectNotFound:
                ctx.finding("IDX-001", uri, f"index file {uri} does not exist", where, code="index_file_missing")
                continue
            if index_file.size_bytes and size != index_file.size_bytes:
                ctx.finding("IDX-001", uri, f"index file {uri} is {size} bytes, the metadata records "
                            f"{index_file.size_bytes}", where, code="index_file_size_mismatch")
