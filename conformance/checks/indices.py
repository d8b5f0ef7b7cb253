"""Checks of a version's indices: the index directory each resolves to exists and holds the files its
metadata lists (catalogue IDX-001; the Storage Layout's Basic Layout ``_indices/{UUID}/`` and two-step
resolution; docs/lance-format.md §3.3), and an index covers no fragment rewritten since it was built
(IDX-002; the Table Format's Deletion Files: rewriting files invalidates row addresses and indices).
A base_id naming no base (BASE-003), an unusable base (BASE-001, BASE-002) or an absolute file path
(PORT-001) is another check's finding, and the index is skipped.
"""

from __future__ import annotations

from reference.conflicts import covered_fragments, covers
from reference.errors import LanceSpecError, ObjectNotFound
from reference.layout import FileKind, base_directory, index_directory_name
from reference.proto import table_pb2
from reference.store.uri import join

from . import DatasetContext, VersionContext, dataset_check, version_check
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


def _indexed_files(fragment: table_pb2.DataFragment, fields: frozenset[int]) -> tuple[str, ...]:
    """The paths of the fragment's data files that hold any of ``fields``."""
    return tuple(sorted(f.path for f in fragment.files if fields & set(f.fields)))


@dataset_check("indices.coverage", "IDX-002")
def coverage(ctx: DatasetContext) -> None:
    """An index covers a fragment only while the data files holding its fields are those of the version it
    was built on (IDX-002): a fragment rewritten under the same id (its indexed column in another file)
    leaves the index's coverage. Judged where that version is still attached; a fragment id the index
    covers that the built-on version does not hold (compaction remaps an index onto new fragments) is
    not judged."""
    seen: dict[int, str] = {}
    for snap in ctx.history():  # one manifest at a time; the index section and a built-on version read when needed
        seen[snap.version] = snap.manifest_uri
        if not snap.manifest.HasField("index_section"):
            continue
        try:
            section = ctx.dataset.manifest_file(snap.manifest_uri).index_section
        except LanceSpecError:
            continue
        for index in section.indices if section is not None else ():
            built_uri = seen.get(index.dataset_version)
            if built_uri is None or index.dataset_version == snap.version or not index.fields:
                continue
            try:
                built = ctx.dataset.manifest_file(built_uri).manifest
            except LanceSpecError:
                continue
            fields = frozenset(index.fields)
            then = {f.id: f for f in built.fragments}
            covered = covered_fragments(index)
            if covered is None:  # absent or undecodable: no coverage to judge
                continue
            for fragment in snap.manifest.fragments:
                if not covers(covered, fragment.id) or fragment.id not in then:
                    continue
                before, now = _indexed_files(then[fragment.id], fields), _indexed_files(fragment, fields)
                if before != now:
                    ctx.finding_at(snap.version, "IDX-002", snap.manifest_uri,
                                   f"index {index.name!r} (built on version {index.dataset_version}) still covers "
                                   f"fragment {fragment.id}, whose indexed column(s) now live in {list(now)}, "
                                   f"not {list(before)}", f"index {index.name}")
