"""Breach builders for the checks fixed by issue 26 (item 3): each ``breach_<name>(root)`` writes a dataset
under the directory ``root`` with a real writer (pylance 14.0.2 or the reference writer), then breaks
exactly one statement the way an outside auditor would (an edited manifest, a deleted or truncated
object, a copied directory), and returns a ``Breach``: the URI to certify and the requirement certify
must report at MUST (nothing else at MUST). ``BREACHES`` lists them by name for the tests
(test_breaches_checks.py) and for anyone who wires them into a corpus.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import lance
import pyarrow as pa
from conformance_kit import build_reference_dataset, rewrite_manifest

from reference.proto import rowids_pb2, table_pb2


@dataclass(frozen=True)
class Breach:
    """A dataset that breaks one statement: certify ``uri`` (every version of every root) and expect
    ``requirement`` at MUST, and no other MUST."""

    uri: str
    requirement: str
    how: str


def _blob_table(values: list[object]) -> pa.Table:
    field = lance.blob_field("blob")
    return pa.Table.from_arrays([pa.array(range(len(values)), pa.int64()), lance.blob_array(values)],
                                schema=pa.schema([pa.field("id", pa.int64()), field]))


def _external_blobs(root: Path) -> tuple[str, Path]:
    """A pylance dataset with one blob v2 column of two external blobs under the registered non-root base
    ``external``: ``whole.bin`` (the whole 100-byte object) and ``ranged.bin`` bytes [10, 40) of 64."""
    external = root / "external"
    external.mkdir(parents=True)
    (external / "whole.bin").write_bytes(bytes(range(100)))
    (external / "ranged.bin").write_bytes(bytes(range(64)))
    uri = str(root / "ds")
    values = [str(external / "whole.bin"), lance.Blob.from_uri(str(external / "ranged.bin"), position=10, size=30)]
    lance.write_dataset(_blob_table(values), uri, data_storage_version="2.2",
                        initial_bases=[lance.DatasetBasePath(str(external), name="external")])
    return uri, external


def breach_external_blob_missing(root: Path) -> Breach:
    """BLOB-004: an external blob names an object that does not exist (deleted after pylance wrote it)."""
    uri, external = _external_blobs(root)
    (external / "whole.bin").unlink()
    return Breach(uri, "BLOB-004", "pylance 14.0.2 wrote an external blob; its object was deleted")


def breach_external_blob_range_past_end(root: Path) -> Breach:
    """BLOB-004: an external blob's range [10, 40) lies past the end of its object (truncated to 20 bytes)."""
    uri, external = _external_blobs(root)
    (external / "ranged.bin").write_bytes(bytes(range(20)))
    return Breach(uri, "BLOB-004", "pylance 14.0.2 wrote an external range blob; its object was truncated")


def breach_manifest_version_mismatch(root: Path) -> Breach:
    """MAN-003: the manifest of version 1 records version 7 (the reference writer's dataset, edited)."""
    uri = build_reference_dataset(root)
    rewrite_manifest(uri, 1, lambda manifest: setattr(manifest, "version", 7))
    return Breach(uri, "MAN-003", "the reference writer's version-1 manifest re-encoded with version = 7")


def stable_row_ids(root: Path, external: bytes | None = None) -> str:
    """A pylance dataset with stable row ids (two fragments of 4 rows, ids 0..7). With ``external``, the
    latest manifest stores fragment 1's row-id sequence in the file ``row_ids/seq.bin`` of the root (the
    given bytes, then the sequence at offset 8) instead of inline: a valid external sequence."""
    uri = str(root / "stable")
    table = pa.table({"id": pa.array(range(4), pa.int64())})
    lance.write_dataset(table, uri, enable_stable_row_ids=True)
    lance.write_dataset(pa.table({"id": pa.array(range(4, 8), pa.int64())}), uri, mode="append")
    if external is not None:
        def move(manifest: table_pb2.Manifest) -> None:
            fragment = manifest.fragments[1]
            encoded = fragment.inline_row_ids
            (root / "stable" / "row_ids").mkdir()
            (root / "stable" / "row_ids" / "seq.bin").write_bytes(external[:8].ljust(8, b"\0") + encoded + external[8:])
            fragment.external_row_ids.CopyFrom(table_pb2.ExternalFile(path="row_ids/seq.bin", offset=8,
                                                                      size=len(encoded)))

        rewrite_manifest(uri, 2, move)
    return uri


def breach_external_row_ids_missing(root: Path) -> Breach:
    """ROW-001: fragment 1's row-id sequence is stored in an external file that does not exist."""
    uri = stable_row_ids(root, external=b"")
    (root / "stable" / "row_ids" / "seq.bin").unlink()
    return Breach(uri, "ROW-001", "pylance 14.0.2 wrote stable row ids; fragment 1's sequence moved to an "
                  "external file, which was then deleted")


def breach_external_row_ids_past_end(root: Path) -> Breach:
    """ROW-001: fragment 1's external row-id sequence range lies past the end of its file."""
    uri = stable_row_ids(root, external=b"")
    seq = root / "stable" / "row_ids" / "seq.bin"
    seq.write_bytes(seq.read_bytes()[:9])
    return Breach(uri, "ROW-001", "pylance 14.0.2 wrote stable row ids; fragment 1's sequence moved to an "
                  "external file, which was then truncated")


def breach_external_row_ids_wrong(root: Path) -> Breach:
    """ROW-001: fragment 1's external row-id sequence (ids 0..3) duplicates fragment 0's live ids."""
    uri = stable_row_ids(root, external=b"")
    seq = rowids_pb2.RowIdSequence()
    seq.segments.add().range.CopyFrom(rowids_pb2.U64Segment.Range(start=0, end=4))
    encoded = seq.SerializeToString()
    (root / "stable" / "row_ids" / "seq.bin").write_bytes(bytes(8) + encoded)
    rewrite_manifest(uri, 2, lambda m: setattr(m.fragments[1].external_row_ids, "size", len(encoded)))
    return Breach(uri, "ROW-001", "pylance 14.0.2 wrote stable row ids; fragment 1's sequence moved to an "
                  "external file holding ids another fragment's live rows hold")


def branched(root: Path) -> Path:
    """A pylance root ``root/old`` with branch ``feat`` forked from version 1 and appended to."""
    table = pa.table({"id": pa.array(range(4), pa.int64())})
    lance.write_dataset(table, str(root / "old")).create_branch("feat")
    lance.write_dataset(table, str(root / "old" / "tree" / "feat"), mode="append")
    return root / "old"


def breach_copied_root_with_branch(root: Path) -> Breach:
    """PORT-002: a root with a branch copied with ``cp -r``; the copy's branch still reads the original root
    (F-010)."""
    copy_root(branched(root), root / "new")
    return Breach(str(root / "new"), "PORT-002", "pylance 14.0.2 wrote a root with a branch; cp -r to another "
                  "directory, the original kept")


BREACHES: dict[str, Callable[[Path], Breach]] = {
    "copied-root-with-branch": breach_copied_root_with_branch,
    "external-row-ids-missing": breach_external_row_ids_missing,
    "external-row-ids-past-end": breach_external_row_ids_past_end,
    "external-row-ids-wrong": breach_external_row_ids_wrong,
    "external-blob-missing": breach_external_blob_missing,
    "external-blob-range-past-end": breach_external_blob_range_past_end,
    "manifest-version-mismatch": breach_manifest_version_mismatch,
}


def copy_root(source: Path, target: Path) -> None:
    """``cp -r source target``."""
    shutil.copytree(source, target, symlinks=True)
