"""Writer processes: each runs its planned operations through the reference writer or pylance and
reports every invocation and completion on a queue.

A writer talks to the endpoint only through its own proxy port (its storage options name it) and only
while an operation is in flight; between operations it makes no request. Outcomes:

* ``ok``: the call returned; for a commit, ``version`` is the version it was told.
* ``failed``: the call raised an error that means nothing was committed for certain (a commit conflict,
  a validation error, a missing tag, nothing staged).
* ``unknown``: the reference's ``CommitOutcomeUnknown``, any transport error (reference ``StorageError``
  other than not-found / already-exists, an ``OSError`` from pylance that is no conflict), or anything
  unexpected: the checker resolves it from the storage.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from datetime import timedelta
from typing import Any

import pyarrow as pa

from .workload import Op

__all__ = ["SCHEMA", "classify_error", "rows_table", "writer_main"]

SCHEMA = pa.schema([("id", pa.int64()), ("writer", pa.int32()), ("op", pa.int32())])

_DEFINITE_PYLANCE = ("conflict", "too many concurrent writers", "incompatible", "already exists", "not found",
                     "retryable", "does not exist", "invalid user input", "no such", "cleanup error")


def rows_table(op: Op) -> pa.Table:
    """The rows an append, overwrite or stage writes."""
    n = len(op.ids)
    return pa.table({"id": pa.array(op.ids, pa.int64()), "writer": pa.array([op.writer] * n, pa.int32()),
                     "op": pa.array([op.index] * n, pa.int32())}, schema=SCHEMA)


def predicate(ids: tuple[int, ...]) -> str:
    return f"id IN ({', '.join(str(i) for i in ids)})"


def classify_error(kind: str, exc: BaseException) -> str:
    """``failed`` or ``unknown`` for an exception raised by a writer of ``kind``."""
    from lancespec.reference.errors import (
        CommitOutcomeUnknown,
        LanceSpecError,
        ObjectAlreadyExists,
        ObjectNotFound,
        StorageError,
    )

    if isinstance(exc, _NothingStaged):
        return "failed"
    if kind == "reference":
        if isinstance(exc, CommitOutcomeUnknown):
            return "unknown"
        if isinstance(exc, ObjectNotFound | ObjectAlreadyExists):
            return "failed"
        if isinstance(exc, StorageError):
            return "unknown"
        if isinstance(exc, LanceSpecError):
            return "failed"
        return "unknown"
    if isinstance(exc, ValueError | KeyError | TypeError):
        return "failed"
    text = str(exc).lower()
    if any(marker in text for marker in _DEFINITE_PYLANCE):
        return "failed"
    return "unknown"


class _NothingStaged(Exception):
    """A ``commit-staged`` whose ``stage`` wrote nothing (it failed): there is nothing to commit."""


class ReferenceExecutor:
    """Operations through lancespec's reference writer (``lancespec.reference``)."""

    kind = "reference"

    def __init__(self, bucket: str, storage_options: dict[str, str]) -> None:
        from lancespec.reference.store import open_store

        self.bucket = bucket
        self.options = storage_options
        self.storage = open_store(storage_options)
        self.staged: dict[int, tuple[int, list[Any]]] = {}

    def uri(self, name: str) -> str:
        return f"s3://{self.bucket}/{name}"

    def dataset(self, name: str) -> Any:
        from lancespec.reference.table import Dataset

        return Dataset(self.uri(name), self.storage)

    def run(self, op: Op) -> dict[str, Any]:
        from lancespec.reference import clone, gc, ops, refs
        from lancespec.reference.apply import apply_transaction
        from lancespec.reference.commit import commit, new_transaction

        ds = self.dataset(op.dataset)
        if op.kind == "append":
            result = ops.append(ds, rows_table(op))
            return {"version": result.version, "attempts": result.attempts}
        if op.kind == "overwrite":
            result = ops.overwrite(ds, rows_table(op))
            return {"version": result.version, "attempts": result.attempts}
        if op.kind == "delete":
            deleted = ops.delete(ds, predicate(op.ids), storage_options=self.options)
            return {"noop": True} if deleted is None else {"version": deleted.version, "attempts": deleted.attempts}
        if op.kind == "tag":
            if op.arg:
                refs.delete_tag(ds, op.name)
                return {}
            return {"tag_version": refs.create_tag(ds, op.name).version}
        if op.kind == "clone":
            record = refs.create_tag(ds, op.name)
            clone.shallow_clone(ds, record.version, self.uri(op.name))
            return {"version": record.version, "source_version": record.version}
        if op.kind == "cleanup":
            policy = gc.CleanupPolicy(older_than=timedelta(0), retain_versions=op.arg,
                                      error_if_tagged_old_versions=False)
            stats = gc.cleanup(ds, policy)
            return {"removed_versions": stats.old_versions}
        if op.kind == "stage":
            from lancespec.reference.schema import arrow_to_fields, same_shape
            from lancespec.reference.writer import placement_targets, write_fragments

            snapshot = ds.snapshot()
            fields = list(snapshot.manifest.fields)
            table = rows_table(op)
            if not same_shape(fields, arrow_to_fields(table.schema)):
                raise ValueError("the staged rows do not have the dataset's schema")
            rotation = placement_targets(snapshot.bases, None, None, ds.uri)
            written = write_fragments(self.storage, ds.uri, snapshot.bases, table, fields, rotation,
                                      data_storage_version=snapshot.manifest.data_format.version or None)
            self.staged[op.index] = (snapshot.version, [w.fragment for w in written])
            return {"read_version": snapshot.version}
        if op.kind == "commit-staged":
            assert op.ref is not None
            staged = self.staged.pop(op.ref, None)
            if staged is None:
                raise _NothingStaged(f"stage #{op.ref} wrote nothing")
            read_version, fragments = staged
            txn = new_transaction(read_version)
            txn.append.fragments.extend(fragments)
            result = commit(ds, txn, apply_transaction)
            return {"version": result.version, "read_version": read_version, "attempts": result.attempts}
        raise ValueError(f"unknown operation {op.kind!r}")


class PylanceExecutor:
    """Operations through pylance (``lance``)."""

    kind = "pylance"

    def __init__(self, bucket: str, storage_options: dict[str, str]) -> None:
        self.bucket = bucket
        self.options = {k: v for k, v in storage_options.items() if not k.startswith("lancespec_")}
        self.staged: dict[int, tuple[int, list[Any]]] = {}

    def uri(self, name: str) -> str:
        return f"s3://{self.bucket}/{name}"

    def run(self, op: Op) -> dict[str, Any]:
        import lance

        uri = self.uri(op.dataset)
        if op.kind in ("append", "overwrite"):
            ds = lance.write_dataset(rows_table(op), uri, mode=op.kind, storage_options=self.options)
            return {"version": ds.version}
        ds = lance.dataset(uri, storage_options=self.options)
        if op.kind == "delete":
            before = ds.version
            ds.delete(predicate(op.ids))
            return {"noop": True} if ds.version == before else {"version": ds.version}
        if op.kind == "tag":
            if op.arg:
                ds.tags.delete(op.name)
                return {}
            ds.tags.create(op.name, ds.version)
            return {"tag_version": ds.version}
        if op.kind == "clone":
            version = ds.version
            ds.tags.create(op.name, version)
            ds.shallow_clone(self.uri(op.name), op.name, storage_options=self.options)
            return {"version": version, "source_version": version}
        if op.kind == "cleanup":
            stats = ds.cleanup_old_versions(older_than=timedelta(0), retain_versions=op.arg,
                                            error_if_tagged_old_versions=False)
            return {"removed_versions": int(stats.old_versions)}
        if op.kind == "stage":
            import lance.fragment

            fragments = lance.fragment.write_fragments(rows_table(op), uri, schema=SCHEMA,
                                                       storage_options=self.options)
            self.staged[op.index] = (ds.version, list(fragments))
            return {"read_version": ds.version}
        if op.kind == "commit-staged":
            assert op.ref is not None
            staged = self.staged.pop(op.ref, None)
            if staged is None:
                raise _NothingStaged(f"stage #{op.ref} wrote nothing")
            read_version, fragments = staged
            out = lance.LanceDataset.commit(uri, lance.LanceOperation.Append(fragments), read_version=read_version,
                                            storage_options=self.options)
            return {"version": out.version, "read_version": read_version}
        raise ValueError(f"unknown operation {op.kind!r}")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:400]


def writer_main(writer: int, kind: str, bucket: str, storage_options: dict[str, str], ops: list[dict[str, Any]],
                start: Any, results: Any, time_limit: float, start_timeout: float = 300.0) -> None:
    """A writer process: open the executor, report ``ready``, wait for ``start``, then run every planned
    operation, reporting ``("event", writer, type, time, op index, value)``; start no operation later than
    ``time_limit`` seconds after the start (report ``("cut", writer, op index)`` instead); always finish
    with ``("done", writer, error or None)``. Ctrl-C is the parent's to handle (it stops the writers), so
    a writer ignores SIGINT rather than print a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("LANCE_LOG", "error")
    error: str | None = None
    try:
        executor: ReferenceExecutor | PylanceExecutor
        executor = ReferenceExecutor(bucket, storage_options) if kind == "reference" else PylanceExecutor(
            bucket, storage_options)
        import lance  # noqa: F401  (import cost before the start, not inside the first operation)

        results.put(("ready", writer))
        if not start.wait(timeout=start_timeout):
            raise TimeoutError("the run never started")
        deadline = time.monotonic() + time_limit
        for raw in ops:
            op = Op.from_json(raw)
            if time.monotonic() >= deadline:
                results.put(("cut", writer, op.index))
                break
            results.put(("event", writer, "invoke", time.monotonic(), op.index, {}))
            try:
                value = executor.run(op)
                outcome = "ok"
            except Exception as exc:
                outcome = classify_error(kind, exc)
                value = {"error": _one_line(exc)}
            results.put(("event", writer, outcome, time.monotonic(), op.index, value))
    except BaseException as exc:  # report, then end: the parent must never wait for a dead writer
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
    finally:
        results.put(("done", writer, error))
