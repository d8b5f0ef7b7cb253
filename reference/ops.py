"""Table operations of the reference writer, each one transaction: create, append, overwrite, delete,
add_bases and update_config. (Refs, clones and relocation live in ``refs``, ``clone`` and ``relocate``.)

Every operation validates its input before writing anything (a refused operation leaves storage
unchanged), writes its data or deletion files, then commits through ``reference.commit``. Rules cite
the multi-base post (multi-base writes), Storage Layout spec (layout, base paths), Table Format spec (manifest,
fragments, deletion files) and docs/lance-format.md §7, §9, §10 for pylance 14.0.2's exact behaviour.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from . import flags as feature_flags
from .apply import apply_transaction, assign_base_ids
from .codec import encode_deletions, file_type_for
from .commit import CommitResult, commit, new_transaction
from .errors import (
    CommitConflict,
    DatasetAlreadyExists,
    DuplicateBase,
    EmptyOperation,
    InvalidBasePath,
    SchemaMismatch,
    UnsupportedFeatureError,
    ValidationError,
)
from .layout import FileKind, ManifestNaming, deletion_file_name, resolve
from .predicate import parse_predicate
from .proto import table_pb2, transaction_pb2
from .read import read_fragment
from .schema import arrow_to_fields, same_shape, schema_metadata
from .store import Storage, open_store
from .store.uri import is_absolute, same_location
from .table import Dataset, Head, Snapshot, bases_of, deleted_offsets
from .writer import discarded_on_failure, placement_targets, storage_version, write_fragments

DEFAULT_DELETE_RETRIES = 10


@dataclass(frozen=True)
class DatasetBasePath:
    """A base to register, shaped like pylance's: ``id=None`` (or 0) means "assign one"."""

    path: str
    name: str | None = None
    is_dataset_root: bool = False
    id: int | None = None

    def to_proto(self) -> table_pb2.BasePath:
        return table_pb2.BasePath(id=self.id or 0, name=self.name, is_dataset_root=self.is_dataset_root, path=self.path)


def validate_new_bases(existing: Sequence[table_pb2.BasePath], new: Sequence[DatasetBasePath], where: str) -> None:
    """Refuse bases whose path is not an absolute URI, or whose id, name or path duplicates another's
    (Storage Layout spec "BasePath Message": unique ids, absolute paths; names and paths must be unique so that
    ``target_bases`` can find a base by either)."""
    seen_ids = {b.id for b in existing}
    seen_names = {b.name for b in existing if b.HasField("name")}
    seen_paths = [b.path for b in existing]
    for base in new:
        if not base.path or not is_absolute(base.path):
            raise InvalidBasePath(f"base path {base.path!r} is not an absolute path or URI", where)
        if base.id:
            if base.id in seen_ids:
                raise DuplicateBase(f"base id {base.id} is already used", where)
            seen_ids.add(base.id)
        if base.name is not None:
            if base.name in seen_names:
                raise DuplicateBase(f"base name {base.name!r} is already used", where)
            seen_names.add(base.name)
        if any(same_location(base.path, p) for p in seen_paths):
            raise DuplicateBase(f"base path {base.path!r} is already registered", where)
        seen_paths.append(base.path)


def _check_writable(snapshot: Head) -> None:
    unknown = feature_flags.unknown_bits(snapshot.manifest.writer_feature_flags)
    if unknown or snapshot.manifest.writer_feature_flags & feature_flags.STABLE_ROW_IDS:
        raise UnsupportedFeatureError(
            f"writer feature flags {snapshot.manifest.writer_feature_flags} need features the reference writer "
            "does not implement (stable row ids or unknown bits)",
            snapshot.manifest_uri,
        )


def _as_table(data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    return pa.Table.from_batches(list(data))


def create(uri: str, data: pa.Table, *, storage: Storage | None = None,
           initial_bases: Sequence[DatasetBasePath] = (), target_bases: Sequence[str] | None = None,
           target_all_bases: bool | None = None, max_rows_per_file: int = 1024 * 1024,
           data_storage_version: str | None = None, enable_v2_manifest_paths: bool = True,
           allow_external_blob_outside_bases: bool = False) -> CommitResult:
    """Create a dataset at ``uri``: version 1, an Overwrite transaction carrying the schema, the
    fragments and the initial bases with their ids assigned (docs/lance-format.md §3.5, §10.2).
    ``allow_external_blob_outside_bases``: store blob URIs outside every registered base as absolute
    URIs instead of refusing them (``reference.blob``)."""
    storage = storage or open_store()
    dataset = Dataset(uri, storage)
    table = _as_table(data)
    if dataset.version_entries():
        raise DatasetAlreadyExists("a dataset already exists here", dataset.uri)
    validate_new_bases([], initial_bases, dataset.uri)
    version_text, _ = storage_version(data_storage_version)
    assigned = assign_base_ids([], [b.to_proto() for b in initial_bases])
    bases = bases_of(table_pb2.Manifest(base_paths=assigned))
    rotation = placement_targets(bases, target_bases, target_all_bases, dataset.uri)
    fields = arrow_to_fields(table.schema)
    written = write_fragments(storage, dataset.uri, bases, table, fields, rotation,
                              max_rows_per_file=max_rows_per_file, data_storage_version=data_storage_version,
                              allow_external_blob_outside_bases=allow_external_blob_outside_bases)
    txn = new_transaction(0)
    op = txn.overwrite
    op.fragments.extend(w.fragment for w in written)
    op.schema.extend(fields)
    op.schema_metadata.update(schema_metadata(table.schema))
    op.initial_bases.extend(assigned)
    naming = ManifestNaming.V2 if enable_v2_manifest_paths else ManifestNaming.V1
    with discarded_on_failure(storage, [w.uri for w in written]):
        return commit(dataset, txn, lambda prev, t: apply_transaction(prev, t, version_text),
                      new_dataset=True, naming=naming)


def _write_on_latest(dataset: Dataset, table: pa.Table, kind: str, *, target_bases: Sequence[str] | None,
                     target_all_bases: bool | None, max_rows_per_file: int,
                     allow_external_blob_outside_bases: bool = False) -> CommitResult:
    snapshot = dataset.head()
    _check_writable(snapshot)
    manifest = snapshot.manifest
    if kind == "append":
        fields = list(manifest.fields)
        if not same_shape(fields, arrow_to_fields(table.schema)):
            raise SchemaMismatch(f"appended data has schema {table.schema}, the dataset's differs", dataset.uri)
    else:
        fields = arrow_to_fields(table.schema)
    rotation = placement_targets(snapshot.bases, target_bases, target_all_bases, dataset.uri)
    written = write_fragments(storage := dataset.storage, dataset.uri, snapshot.bases, table, fields, rotation,
                              max_rows_per_file=max_rows_per_file,
                              data_storage_version=manifest.data_format.version or None,
                              allow_external_blob_outside_bases=allow_external_blob_outside_bases)
    txn = new_transaction(snapshot.version)
    if kind == "append":
        txn.append.fragments.extend(w.fragment for w in written)
    else:
        txn.overwrite.fragments.extend(w.fragment for w in written)
        txn.overwrite.schema.extend(fields)
        txn.overwrite.schema_metadata.update(schema_metadata(table.schema))
    with discarded_on_failure(storage, [w.uri for w in written]):
        return commit(dataset, txn, apply_transaction)


def append(dataset: Dataset, data: pa.Table, *, target_bases: Sequence[str] | None = None,
           target_all_bases: bool | None = None, max_rows_per_file: int = 1024 * 1024,
           allow_external_blob_outside_bases: bool = False) -> CommitResult:
    """Append rows as new fragments (ids assigned at commit) placed round-robin over the targets."""
    return _write_on_latest(dataset, _as_table(data), "append", target_bases=target_bases,
                            target_all_bases=target_all_bases, max_rows_per_file=max_rows_per_file,
                            allow_external_blob_outside_bases=allow_external_blob_outside_bases)


def overwrite(dataset: Dataset, data: pa.Table, *, target_bases: Sequence[str] | None = None,
              target_all_bases: bool | None = None, max_rows_per_file: int = 1024 * 1024,
              allow_external_blob_outside_bases: bool = False) -> CommitResult:
    """Replace every fragment (and the schema); bases and max_fragment_id carry over."""
    return _write_on_latest(dataset, _as_table(data), "overwrite", target_bases=target_bases,
                            target_all_bases=target_all_bases, max_rows_per_file=max_rows_per_file,
                            allow_external_blob_outside_bases=allow_external_blob_outside_bases)


def add_bases(dataset: Dataset, new_bases: Sequence[DatasetBasePath]) -> CommitResult:
    """Register bases on an existing dataset: an UpdateBases transaction, ids of 0 assigned at commit."""
    if not new_bases:
        raise EmptyOperation("add_bases needs at least one base", dataset.uri)
    snapshot = dataset.head()
    _check_writable(snapshot)
    validate_new_bases(list(snapshot.manifest.base_paths), new_bases, dataset.uri)
    txn = new_transaction(snapshot.version)
    txn.update_bases.new_bases.extend(b.to_proto() for b in new_bases)
    return commit(dataset, txn, apply_transaction)


def update_config(dataset: Dataset, values: Mapping[str, str | None]) -> CommitResult:
    """Set (a value) or remove (None) keys of the manifest's config: one UpdateConfig transaction, as pylance
    14.0.2's ``update_config`` writes it (no keys, or the removal of a key that is not there: a version all the
    same, as pylance commits one)."""
    snapshot = dataset.head()
    _check_writable(snapshot)
    txn = new_transaction(snapshot.version)
    txn.update_config.config_updates.SetInParent()  # no keys: an empty update, as pylance writes it
    for key, value in values.items():
        entry = txn.update_config.config_updates.update_entries.add(key=key)
        if value is not None:
            entry.value = value
    return commit(dataset, txn, apply_transaction)


# --- delete ----------------------------------------------------------------------------------------


def _matching_offsets(snapshot: Snapshot, predicate: pc.Expression, storage: Storage,
                      storage_options: Mapping[str, str] | None) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for fragment in snapshot.fragments:
        rows = read_fragment(snapshot, fragment, storage, storage_options, with_deleted=True)
        rows = rows.append_column("__offset", pa.array(range(rows.num_rows), pa.uint32()))
        hits = set(rows.filter(predicate).column("__offset").to_pylist())
        if hits:
            out[fragment.id] = hits
    return out


def _deletion_transaction(dataset: Dataset, snapshot: Snapshot, new_rows: Mapping[int, set[int]],
                          predicate_text: str) -> tuple[transaction_pb2.Transaction, list[str]]:
    """The Delete transaction and the deletion files it needs (written here, under this root)."""
    txn = new_transaction(snapshot.version)
    op = txn.delete
    op.predicate = predicate_text
    written: list[str] = []
    by_id = {f.id: f for f in snapshot.fragments}
    for fragment_id in sorted(new_rows):  # validate every fragment before writing any file
        fragment = by_id[fragment_id]
        bad = sorted(r for r in new_rows[fragment_id] if r < 0 or r >= fragment.physical_rows)
        if bad:
            raise ValidationError(f"fragment {fragment_id} has {fragment.physical_rows} rows; offsets {bad[:5]} "
                                  "are out of range", dataset.uri)
    for fragment_id in sorted(new_rows):
        fragment = by_id[fragment_id]
        rows = set(deleted_offsets(dataset.storage, fragment)) | set(new_rows[fragment_id])
        if len(rows) >= fragment.physical_rows:
            op.deleted_fragment_ids.append(fragment_id)
            continue
        file_type = file_type_for(len(rows))
        file_id = random.getrandbits(63) or 1
        name = deletion_file_name(fragment_id, snapshot.version, file_id, file_type)
        uri = resolve(dataset.uri, {}, None, FileKind.DELETION, name)
        dataset.storage.put(uri, encode_deletions(rows, file_type))
        written.append(uri)
        updated = op.updated_fragments.add()
        updated.CopyFrom(fragment.proto)
        updated.deletion_file.CopyFrom(table_pb2.DeletionFile(
            file_type=file_type,  # type: ignore[arg-type]
            read_version=snapshot.version, id=file_id, num_deleted_rows=len(rows)))
    return txn, written


def delete(dataset: Dataset, predicate: str | pc.Expression | None = None, *,
           rows: Mapping[int, Iterable[int]] | None = None, storage_options: Mapping[str, str] | None = None,
           max_attempts: int = DEFAULT_DELETE_RETRIES) -> CommitResult | None:
    """Delete rows matching ``predicate`` (a SQL-subset string or an Arrow expression) or the given
    ``rows`` (fragment id -> row offsets). Deletion files are cumulative per fragment, ``.arrow`` below
    5000 rows and ``.bin`` from 5000; a fragment whose every row is deleted is dropped. Returns None when
    nothing matches (no version is committed). A concurrent delete on the same fragments is rebased by
    recomputing against the newer version, at most ``max_attempts`` times."""
    if (predicate is None) == (rows is None):
        raise ValidationError("delete takes exactly one of a predicate or explicit rows", dataset.uri)
    expression = parse_predicate(predicate) if isinstance(predicate, str) else predicate
    text = predicate if isinstance(predicate, str) else (str(predicate) if predicate is not None else "")
    for attempt in range(1, max_attempts + 1):
        snapshot = dataset.snapshot()
        _check_writable(snapshot)
        if expression is not None:
            targets = _matching_offsets(snapshot, expression, dataset.storage, storage_options)
        else:
            known = {f.id for f in snapshot.fragments}
            targets = {int(k): set(map(int, v)) for k, v in (rows or {}).items() if v}
            missing = sorted(set(targets) - known)
            if missing:
                raise ValidationError(f"fragments {missing} do not exist at version {snapshot.version}", dataset.uri)
        if not targets:
            return None
        txn, written = _deletion_transaction(dataset, snapshot, targets, text)
        try:
            with discarded_on_failure(dataset.storage, written):
                return commit(dataset, txn, apply_transaction)
        except CommitConflict as exc:
            if not exc.retryable or attempt == max_attempts:
                raise
    raise AssertionError("unreachable")


__all__ = [
    "DatasetBasePath",
    "add_bases",
    "append",
    "create",
    "delete",
    "overwrite",
    "update_config",
    "validate_new_bases",
]
