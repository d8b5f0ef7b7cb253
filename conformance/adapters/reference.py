"""The reference writer and reader (``reference``) as an implementation: the oracle every other
writer is compared with."""

from __future__ import annotations

import contextlib
from datetime import timedelta
from typing import Any

from conformance import operations as lang
from conformance.payload import table
from reference import __version__, clone, gc, ops, refs
from reference.errors import (
    CommitOutcomeUnknown,
    LanceSpecError,
    ObjectAlreadyExists,
    ObjectNotFound,
    StorageError,
    ValidationError,
)
from reference.relocate import relocate
from reference.table import Dataset

from . import base, registry
from .base import Implementation, ReaderError, ReadResult, Site, Target, WriterRefusal


def _certain(exc: LanceSpecError) -> bool:
    """Whether nothing was committed for certain: not when the commit's answer was lost or the store failed
    (other than not-found / already-exists)."""
    if isinstance(exc, CommitOutcomeUnknown):
        return False
    return not isinstance(exc, StorageError) or isinstance(exc, ObjectNotFound | ObjectAlreadyExists)


class ReferenceSession(base.Session):
    """Operations on one site through one store (one S3 client for the whole session)."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.storage = site.storage
        self.staged: dict[int, tuple[int, list[Any]]] = {}
        root = site.locate("")
        if root:  # the store's client (object_store's, for a cloud URI) is made at session open, not later
            with contextlib.suppress(LanceSpecError):
                self.storage.backend(root)

    def _locate(self, location: str) -> str:
        return base.resolve(self.site, location)

    def _dataset(self, root: str) -> Dataset:
        family, branch = lang.split_root(root)
        main = Dataset(base.resolve(self.site, family), self.storage)
        return main.branch(branch) if branch else main

    def _bases(self, specs: Any) -> list[ops.DatasetBasePath]:
        return [ops.DatasetBasePath(base.registered_path(self.site, b), name=b.name, is_dataset_root=b.is_dataset_root,
                                    id=b.id) for b in specs]

    def apply(self, operation: lang.Operation) -> dict[str, Any]:
        try:
            return self._apply(operation)
        except LanceSpecError as exc:  # every refusal carries its contract error kind (reference.errors)
            raise WriterRefusal(exc.kind, str(exc), _certain(exc)) from exc

    def _apply(self, op: lang.Operation) -> dict[str, Any]:
        if isinstance(op, lang.Create):
            uri = base.resolve(self.site, op.root)
            storage_version = op.data_storage_version or ("2.2" if op.data is not None else None)
            result = ops.create(uri, table(op.start, op.count, op.data, self._locate), storage=self.storage,
                                initial_bases=self._bases(op.bases), data_storage_version=storage_version,
                                enable_v2_manifest_paths=op.manifest_naming != "v1",
                                **base.write_targets(self.site, op, uri))
            return {"version": result.version, "attempts": result.attempts}
        if isinstance(op, lang.Append | lang.Overwrite):
            dataset = self._dataset(op.root)
            write = ops.append if isinstance(op, lang.Append) else ops.overwrite
            result = write(dataset, table(op.start, op.count, op.data, self._locate),
                           **base.write_targets(self.site, op, dataset.uri))
            return {"version": result.version, "attempts": result.attempts}
        if isinstance(op, lang.Delete):
            deleted = ops.delete(self._dataset(op.root), op.predicate, storage_options=self.site.options)
            return {"noop": True} if deleted is None else {"version": deleted.version, "attempts": deleted.attempts}
        if isinstance(op, lang.AddBase | lang.AddBases):
            return {"version": ops.add_bases(self._dataset(op.root), self._bases(op.bases)).version}
        if isinstance(op, lang.Tag):
            change = refs.update_tag if op.move else refs.create_tag
            return {"tag_version": change(self._dataset(op.family), op.name, lang.reference_of(op)).version}
        if isinstance(op, lang.DropRef):
            drop = refs.delete_tag if isinstance(op, lang.DeleteTag) else refs.delete_branch
            drop(self._dataset(op.family), op.name)
        elif isinstance(op, lang.Branch):
            refs.create_branch(self._dataset(op.family), op.name, lang.reference_of(op))
        elif isinstance(op, lang.ShallowClone | lang.DeepClone):
            source, version = refs.resolve_reference(self._dataset(op.family), lang.reference_of(op))
            make = clone.shallow_clone if isinstance(op, lang.ShallowClone) else clone.deep_clone
            make(source, version, base.resolve(self.site, op.target))
            return {"version": version}
        elif isinstance(op, lang.Relocate):
            dataset = self._dataset(op.root)
            keys = base.base_keys(self.site, [old for old, _ in op.moves], lambda: dataset.snapshot().bases)
            moves: dict[int | str, str] = {key: base.resolve(self.site, new) for key, (_, new) in zip(keys, op.moves,
                                                                                                  strict=True)}
            adopt = None if op.adopt_from is None else base.resolve(self.site, op.adopt_from)
            return {"version": relocate(dataset, moves, adopt).version}
        elif isinstance(op, lang.UpdateConfig):
            return {"version": ops.update_config(self._dataset(op.root), dict(op.values)).version}
        elif isinstance(op, lang.Cleanup):
            policy = gc.CleanupPolicy(timedelta(0) if op.older_than_zero else None, op.retain_versions,
                                      op.delete_unverified, op.error_if_tagged)
            return {"removed_versions": gc.cleanup(self._dataset(op.root), policy).old_versions}
        elif isinstance(op, lang.Stage):
            return self._stage(op)
        elif isinstance(op, lang.CommitStaged):
            return self._commit_staged(op)
        else:  # an operation of the language this session does not know: refused, never done silently
            raise WriterRefusal("invalid_input", f"the reference session has no {type(op).__name__} operation")
        return {}

    def _stage(self, op: lang.Stage) -> dict[str, Any]:
        from reference.schema import arrow_to_fields, same_shape
        from reference.writer import placement_targets, write_fragments

        dataset = self._dataset(op.root)
        snapshot = dataset.snapshot()
        fields = list(snapshot.manifest.fields)
        rows = table(op.start, op.count, None, self._locate)
        if not same_shape(fields, arrow_to_fields(rows.schema)):
            raise ValidationError("the staged rows do not have the dataset's schema", dataset.uri)
        rotation = placement_targets(snapshot.bases, None, None, dataset.uri)
        written = write_fragments(self.storage, dataset.uri, snapshot.bases, rows, fields, rotation,
                                  data_storage_version=snapshot.manifest.data_format.version or None)
        self.staged[op.key] = (snapshot.version, [w.fragment for w in written])
        return {"read_version": snapshot.version}

    def _commit_staged(self, op: lang.CommitStaged) -> dict[str, Any]:
        from reference.apply import apply_transaction
        from reference.commit import commit, new_transaction

        if op.key not in self.staged:
            raise WriterRefusal("invalid_input", f"stage #{op.key} wrote nothing")
        read_version, fragments = self.staged.pop(op.key)
        txn = new_transaction(read_version)
        txn.append.fragments.extend(fragments)
        result = commit(self._dataset(op.root), txn, apply_transaction)
        return {"version": result.version, "read_version": read_version, "attempts": result.attempts}


class ReferenceReader(base.Reader):
    name = "reference"

    def read(self, target: Target) -> ReadResult:
        from reference.blob.read import BlobReader
        from reference.layout import FileKind
        from reference.read import read_snapshot

        try:
            dataset = Dataset.open(target.root)
            snapshot = dataset.snapshot(target.version, tag=target.tag, branch=target.branch)
            rows = read_snapshot(snapshot, dataset.storage)
            blobs: dict[str, list[bytes | None]] = {}
            reader = BlobReader(snapshot, dataset.storage)
            for name in target.blob_columns:
                handles = reader.take_blobs(name, list(range(rows.num_rows)))
                blobs[name] = [None if f is None else f.readall() for f in handles]
        except (LanceSpecError, OSError, ValueError) as exc:
            raise ReaderError(str(exc)) from exc
        keep = [c for c in rows.column_names if c not in target.blob_columns]
        files = sorted(f.uri for f in snapshot.files() if f.uri is not None and f.kind is not FileKind.INDEX)
        return ReadResult(rows.select(keep), blobs, files)


class ReferenceImplementation(Implementation):
    name = "reference"
    session = ReferenceSession
    reading = ReferenceReader

    def version(self) -> str:
        return f"lancespec {__version__}"


registry.register(ReferenceImplementation)
