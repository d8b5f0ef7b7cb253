"""Writing data files and describing them as fragments.

Column data is encoded by pylance's ``lance.file.LanceFileWriter`` (the codec); everything else is ours:
file names (Storage Layout spec "Data Files"), placement over bases (the multi-base post "round-robin across the set
of data buckets"; docs/lance-format.md §10.3 for pylance's exact rotation), and the ``DataFile`` fields (Table Format
spec "Data Files": fields, column_indices, file versions, file_size_bytes, base_id).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa
from lance.file import LanceFileWriter

from .blob.write import check_blob_table
from .codec import parse_footer
from .codec.datafile import FOOTER_VERSION_FOR, V2_FOOTER_SIZE
from .errors import CommitOutcomeUnknown, FormatError, UnknownTargetBase, ValidationError
from .layout import Base, FileKind, new_data_file_name, resolve
from .proto import file_pb2, table_pb2
from .schema import column_field_ids
from .store import Storage

DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024
DEFAULT_STORAGE_VERSION = "2.2"
STORAGE_VERSIONS = {"2.0": (2, 0), "2.1": (2, 1), "2.2": (2, 2), "2.3": (2, 3), "stable": (2, 2)}


def storage_version(name: str | None) -> tuple[str, tuple[int, int]]:
    """The ``data_format.version`` string and DataFile (major, minor) for a requested storage version."""
    key = name or DEFAULT_STORAGE_VERSION
    if key not in STORAGE_VERSIONS:
        raise ValidationError(f"unsupported data storage version {key!r}; use one of {sorted(STORAGE_VERSIONS)}")
    major, minor = STORAGE_VERSIONS[key]
    return f"{major}.{minor}", (major, minor)


def placement_targets(bases: Sequence[Base], target_bases: Sequence[str] | None,
                      target_all_bases: bool | None, where: str | None = None) -> list[int | None]:
    """The rotation of base ids (None = the dataset root) new data files are spread over, per file.

    ``target_bases`` entries name a base by name first, then by exact path. ``target_all_bases=True``
    rotates over the root then every base by ascending id; ``False`` over the registered bases only; in both,
    base id 0 (a clone's or branch's source) stands for the root. Neither given: the root alone.
    (docs/lance-format.md §10.3; F-027.) ``where``: the dataset written to (named by the errors).
    """
    if target_bases and target_all_bases is not None:
        raise ValidationError("target_all_bases cannot be combined with target_bases", where)
    if target_bases:
        rotation: list[int | None] = []
        for ref in target_bases:
            match = next((b for b in bases if b.name == ref), None) or next((b for b in bases if b.path == ref), None)
            if match is None:
                known = ", ".join(repr(b.name or b.path) for b in bases) or "none"
                raise UnknownTargetBase(f"target base {ref!r} is not a registered base (registered: {known})",
                                        where)
            rotation.append(match.id)
        return rotation
    # Base id 0 is the source a shallow clone or branch registers (F-003); in these rotations pylance 14.0.2
    # writes its turn to the writing root itself, never into the source (spec/findings.md F-027; CLONE-003).
    ordered: list[int | None] = [None if b.id == 0 else b.id for b in sorted(bases, key=lambda b: b.id)]
    if target_all_bases is True:
        return [None, *ordered]
    if target_all_bases is False and ordered:
        return ordered
    return [None]


@dataclass(frozen=True)
class WrittenFile:
    """A data file on storage and the fragment that describes it."""

    uri: str
    fragment: table_pb2.DataFragment


def encode_data_file(table: pa.Table, version: str) -> bytes:
    """Encode ``table`` as one Lance data file with pylance's file writer; return its bytes."""
    with tempfile.TemporaryDirectory(prefix="lancespec-encode-") as tmp:
        path = os.path.join(tmp, "file.lance")
        writer = LanceFileWriter(path, table.schema, version=version)
        writer.write_batch(table)
        writer.close()
        with open(path, "rb") as fh:
            return fh.read()


def describe_data_file(name: str, data: bytes, fields: Sequence[file_pb2.Field], rows: int,
                       file_version: tuple[int, int], base_id: int | None) -> table_pb2.DataFragment:
    """The fragment (id 0: assigned at commit) for one freshly written data file."""
    footer = parse_footer(data[-V2_FOOTER_SIZE:], len(data), name)
    column_ids = column_field_ids(fields)
    if footer.num_columns != len(column_ids):
        raise FormatError(
            f"file writer produced {footer.num_columns} columns for {len(column_ids)} leaf fields", name
        )
    if (footer.major, footer.minor) != FOOTER_VERSION_FOR[file_version]:
        raise FormatError(f"file writer produced format {footer.major}.{footer.minor}, wanted {file_version}", name)
    data_file = table_pb2.DataFile(
        path=name,
        fields=column_ids,
        column_indices=list(range(len(column_ids))),
        file_major_version=file_version[0],
        file_minor_version=file_version[1],
        file_size_bytes=len(data),
        base_id=base_id,
    )
    return table_pb2.DataFragment(physical_rows=rows, files=[data_file])


def write_fragments(storage: Storage, root: str, bases: Sequence[Base], table: pa.Table,
                    fields: Sequence[file_pb2.Field], rotation: Sequence[int | None], *,
                    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
                    data_storage_version: str | None = None,
                    allow_external_blob_outside_bases: bool = False) -> list[WrittenFile]:
    """Split ``table`` into files of at most ``max_rows_per_file`` rows, place the i-th file on
    ``rotation[i % len(rotation)]`` (the rotation restarts on every call, as in pylance) and write them.
    Blob v2 columns are validated first, then routed per file, their sidecars written next to the data
    file (``reference.blob``).

    On any failure the files already written by this call are removed again.
    """
    if max_rows_per_file <= 0:
        raise ValidationError(f"max_rows_per_file must be positive, got {max_rows_per_file}")
    version_text, file_version = storage_version(data_storage_version)
    by_id = {b.id: b for b in bases}
    written: list[WrittenFile] = []
    blobs = check_blob_table(storage, table, fields, bases, file_version, where=root,
                             allow_external_blob_outside_bases=allow_external_blob_outside_bases)
    try:
        for index, start in enumerate(range(0, table.num_rows, max_rows_per_file)):
            chunk = table.slice(start, max_rows_per_file)
            base_id = rotation[index % len(rotation)]
            name = new_data_file_name()
            uri = resolve(root, by_id, base_id, FileKind.DATA, name)
            if blobs is not None:
                chunk = blobs.prepare(start, chunk.num_rows, uri)
            data = encode_data_file(chunk, version_text)
            fragment = describe_data_file(name, data, fields, chunk.num_rows, file_version, base_id)
            storage.put(uri, data)
            written.append(WrittenFile(uri, fragment))
    except BaseException:
        remove_files(storage, [w.uri for w in written] + (blobs.sidecars if blobs is not None else []))
        raise
    return written


@contextmanager
def discarded_on_failure(storage: Storage, uris: Sequence[str]) -> Iterator[None]:
    """Remove ``uris`` (files an operation wrote for its commit) when the block fails for certain; keep
    them when the commit's outcome is unknown or the process is interrupted, as the version that
    references them may have landed."""
    try:
        yield
    except CommitOutcomeUnknown:
        raise
    except Exception:
        remove_files(storage, uris)
        raise


def remove_files(storage: Storage, uris: Sequence[str]) -> None:
    """Best-effort removal of files a failed operation wrote (a data file's blob sidecars with it)."""
    for uri in uris:
        with contextlib.suppress(Exception):
            storage.delete(uri)
        if uri.endswith(".lance"):
            with contextlib.suppress(Exception):
                for sidecar in list(storage.list(uri[: -len(".lance")])):
                    storage.delete(sidecar.uri)
