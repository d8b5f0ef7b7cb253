"""How a transaction turns the previous manifest into the next one (pure; no I/O).

Rules: Table Format spec "Manifest" (full fragment list per version, max_fragment_id, feature flags),
docs/lance-format.md §3.5 (ids in Append/Overwrite fragments are assigned at commit; UpdateBases ids of 0 are
assigned at commit as max(existing)+1 in order; Overwrite keeps the previous bases and max_fragment_id)
and §15 (flags recomputed on every commit).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from . import __version__ as REFERENCE_VERSION
from .errors import ValidationError
from .flags import compute_flags
from .proto import table_pb2, transaction_pb2

WRITER_LIBRARY = "lancespec"


def next_fragment_id(manifest: table_pb2.Manifest | None) -> int:
    """The id the next new fragment gets: max_fragment_id + 1, or 0 when no fragment was ever made."""
    if manifest is None or not manifest.HasField("max_fragment_id"):
        return 0
    return manifest.max_fragment_id + 1


def _assign_ids(target: table_pb2.Manifest, fragments: Iterable[table_pb2.DataFragment], first: int) -> None:
    next_id = first
    for fragment in fragments:
        added = target.fragments.add()
        added.CopyFrom(fragment)
        added.id = next_id
        next_id += 1
    if next_id > first:
        target.max_fragment_id = next_id - 1


def assign_base_ids(existing: Iterable[table_pb2.BasePath],
                    new: Iterable[table_pb2.BasePath]) -> list[table_pb2.BasePath]:
    """New bases with ids of 0 replaced by max(existing ids, earlier new ids) + 1, in order."""
    used = [b.id for b in existing]
    out = []
    for base in new:
        assigned = table_pb2.BasePath()
        assigned.CopyFrom(base)
        if assigned.id == 0:
            assigned.id = max(used, default=0) + 1
        used.append(assigned.id)
        out.append(assigned)
    return out


def apply_transaction(previous: table_pb2.Manifest | None, txn: transaction_pb2.Transaction,
                      data_format_version: str = "2.2") -> table_pb2.Manifest:
    """The manifest content (without version, timestamp, flags) after ``txn`` on ``previous``."""
    manifest = table_pb2.Manifest()
    if previous is not None:
        manifest.CopyFrom(previous)
        for cleared in ("index_section", "transaction_section", "transaction_section_deprecated", "transaction_file"):
            manifest.ClearField(cleared)
    else:
        manifest.data_format.file_format = "lance"
        manifest.data_format.version = data_format_version
    operation = txn.WhichOneof("operation")
    if operation == "overwrite":
        op = txn.overwrite
        del manifest.fragments[:]
        del manifest.fields[:]
        manifest.fields.extend(op.schema)
        manifest.schema_metadata.clear()
        manifest.schema_metadata.update(op.schema_metadata)
        manifest.config.update(op.config_upsert_values)
        manifest.base_paths.extend(op.initial_bases)
        _assign_ids(manifest, op.fragments, next_fragment_id(previous))
    elif operation == "append":
        _assign_ids(manifest, txn.append.fragments, next_fragment_id(previous))
    elif operation == "delete":
        updated = {f.id: f for f in txn.delete.updated_fragments}
        removed = set(txn.delete.deleted_fragment_ids)
        kept = [updated.get(f.id, f) for f in manifest.fragments if f.id not in removed]
        del manifest.fragments[:]
        manifest.fragments.extend(kept)
    elif operation == "update_bases":
        manifest.base_paths.extend(assign_base_ids(manifest.base_paths, txn.update_bases.new_bases))
    elif operation == "update_config" and not _touches_metadata(txn.update_config) \
            and not (txn.update_config.upsert_values or txn.update_config.delete_keys):
        _update_config(manifest.config, txn.update_config)
    else:
        raise ValidationError(f"the reference writer does not apply {operation or 'empty'} transactions")
    return manifest


def _touches_metadata(update: transaction_pb2.Transaction.UpdateConfig) -> bool:
    """Whether an UpdateConfig changes schema, field or table metadata (which the reference does not apply)."""
    updates = ("schema_metadata_updates", "table_metadata_updates")
    return bool(update.schema_metadata or update.field_metadata or update.field_metadata_updates) or any(
        update.HasField(u) for u in updates)


def _update_config(config: Any, update: transaction_pb2.Transaction.UpdateConfig) -> None:
    """An UpdateConfig on the manifest's config map, in the form pylance 14.0.2 and the reference write (not
    the deprecated upsert and delete lists): ``replace`` clears it first; an entry with a value sets its key,
    one without removes it."""
    if update.config_updates.replace:
        config.clear()
    for entry in update.config_updates.update_entries:
        if entry.HasField("value"):
            config[entry.key] = entry.value
        else:
            config.pop(entry.key, None)


def finalize(manifest: table_pb2.Manifest, version: int, transaction_file: str,
             now: datetime | None = None) -> table_pb2.Manifest:
    """Stamp version, commit time, writer, transaction file name and recomputed feature flags."""
    manifest.version = version
    manifest.transaction_file = transaction_file
    manifest.timestamp.FromDatetime((now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None))
    manifest.writer_version.library = WRITER_LIBRARY
    manifest.writer_version.version = REFERENCE_VERSION
    manifest.reader_feature_flags, manifest.writer_feature_flags = compute_flags(manifest)
    return manifest
