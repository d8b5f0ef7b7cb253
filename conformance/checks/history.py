"""Checks of a root's history: every attached manifest readable and well framed, the transactions that
made the versions, and the commit timestamps (catalogue areas HIST and MAN-015; docs/lance-format.md §4, §8).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from google.protobuf.timestamp_pb2 import Timestamp

from reference import flags as feature_flags
from reference.codec import decode_manifest_file, decode_transaction_in_runs
from reference.commit import load_transaction
from reference.errors import FormatError, LanceSpecError, ObjectNotFound
from reference.layout import TRANSACTIONS_DIR, transaction_uri
from reference.proto import transaction_pb2
from reference.store.uri import join
from reference.table import Head

from . import DatasetContext, PastVersion, Prefetch, VersionContext, dataset_check, version_check


@dataset_check("history.manifests_readable", "HIST-001", "MAN-015")
def manifests_readable(ctx: DatasetContext) -> None:
    """Every attached manifest of the root can be read (HIST-001), also those not selected for
    certification; one that cannot is also reported as MAN-015 when its framing is at fault (footer,
    LANC magic, length prefixes, inline transaction or index section).

    The versions certify decoded are in ``ctx.snapshots`` and are skipped. A selected version certify
    could not decode is reported here with exactly certify's finding, so the two merge into one."""
    for entry in ctx.dataset.version_entries(allow_mixed=True):
        if entry.version in ctx.snapshots:
            continue
        try:  # the manifest decoded, its version checked: all a snapshot could add is resolution, never raised
            ctx.dataset.head(entry.version, strict=False)
        except LanceSpecError as exc:
            ctx.finding_at(entry.version, "HIST-001", exc.where or ctx.dataset.uri, exc.message)
        else:
            continue
        try:
            decode_manifest_file(ctx.storage.get(entry.uri), entry.uri, ctx.storage.limits)
        except FormatError as exc:
            ctx.finding_at(entry.version, "MAN-015", exc.where or entry.uri,
                           f"the manifest file is not framed as the format says: {exc.message}")
        except LanceSpecError:
            pass  # not there any more, or not readable: HIST-001 above says so


def transaction_file(ctx: VersionContext | DatasetContext, snapshot: Head) -> tuple[str, bytes | None] | None:
    """The URI and content (None when absent) of the transaction file the manifest names; None when it
    names none."""
    name = snapshot.manifest.transaction_file
    if not name:
        return None
    uri = transaction_uri(ctx.dataset.uri, name)
    if uri is None:  # a name that could leave _transactions/: LAYOUT-004's finding, and for HIST-004 missing
        return join(ctx.dataset.uri, TRANSACTIONS_DIR, name), None
    try:
        return uri, ctx.storage.get(uri)
    except ObjectNotFound:
        return uri, None


def transaction_of(ctx: DatasetContext, past: PastVersion) -> transaction_pb2.Transaction | None:
    """The transaction that made version ``past``, read as the reference's commit loop reads it
    (``commit.load_transaction``: the manifest's inline copy, else its ``_transactions/`` file); None when
    neither is there or it does not decode (HIST-002 reports that)."""
    try:
        return load_transaction(ctx.dataset, past.version, past.manifest_uri, decoded=past.decoded)
    except LanceSpecError:
        return None


def _transaction_prefetch(ctx: VersionContext | DatasetContext, snapshot: Head) -> Prefetch:
    """The prefetch of the transaction file ``snapshot``'s manifest names (``transaction_file``), keyed so that
    every check asking for it shares one read."""
    return ("transaction", snapshot.manifest_uri), functools.partial(transaction_file, ctx, snapshot)


def named_transaction_reads(ctx: DatasetContext) -> Iterator[Prefetch]:
    """The transaction file of every certified version whose manifest carries no inline copy: the one a
    reader of the version's transaction reads (``commit.load_transaction``)."""
    for snapshot in ctx.snapshots.values():
        if snapshot.manifest_file.transaction is None:
            yield _transaction_prefetch(ctx, snapshot)


def transaction_read(ctx: VersionContext) -> Iterator[Prefetch]:
    """The transaction file the version's manifest names."""
    yield _transaction_prefetch(ctx, ctx.snap)


@version_check("history.transaction", "HIST-002", "HIST-003", prefetch=transaction_read)
def transaction(ctx: VersionContext) -> None:
    """The transaction file the manifest names, when it exists, decodes as a Transaction and equals the inline
    copy byte for byte when the manifest carries one (HIST-002); the transaction's read_version is below the
    version it made, or for a Clone equals the source version it was read from (HIST-003). What it finds on a
    version depends on that version alone: an incremental run carries it (``conformance.since``). A large
    operation is decoded a run of its fields at a time (``decode_transaction_in_runs``: the same verdict, not
    the whole Overwrite of a 1,000,000-fragment version held decoded at once)."""
    snapshot = ctx.snap
    inline = snapshot.manifest_file.transaction_bytes
    txn = snapshot.manifest_file.transaction
    found = transaction_file(ctx, snapshot)
    if found is not None and found[1] is not None:
        uri, content = found[0], found[1]
        try:
            from_file = decode_transaction_in_runs(content, uri)
        except FormatError as exc:
            ctx.finding("HIST-002", uri, f"the transaction file does not decode: {exc.message}",
                        code="transaction_undecodable")
        else:
            txn = txn if txn is not None else from_file
            if inline is not None and inline != content:
                ctx.finding("HIST-002", uri, f"the transaction file ({len(content)} bytes) differs from the "
                            f"manifest's inline copy ({len(inline)} bytes)", code="transaction_differs_from_inline")
    if txn is not None:
        _read_version(ctx, snapshot, txn)


def latest_transaction_read(ctx: DatasetContext) -> Iterator[Prefetch]:
    """The transaction file of the latest version, when it is certified."""
    latest = _latest(ctx)
    if latest in ctx.snapshots:
        yield _transaction_prefetch(ctx, ctx.snapshots[latest])


@dataset_check("history.latest_transaction", "HIST-004", prefetch=latest_transaction_read)
def latest_transaction(ctx: DatasetContext) -> None:
    """SHOULD: when the latest version is certified, its transaction file exists, unless the writer disabled
    transaction files (flag 32) (HIST-004). A dataset check: which version is the latest changes with every
    commit."""
    latest = _latest(ctx)
    if latest not in ctx.snapshots:
        return
    snapshot = ctx.snapshots[latest]
    found = transaction_file(ctx, snapshot)
    if found is None:
        if not snapshot.manifest.writer_feature_flags & feature_flags.DISABLE_TRANSACTION_FILE:
            ctx.finding_at(latest, "HIST-004", snapshot.manifest_uri, "the latest version names no transaction file",
                           code="transaction_not_named")
    elif found[1] is None:
        ctx.finding_at(latest, "HIST-004", found[0], "the latest version's transaction file is missing",
                       code="transaction_missing")


def _latest(ctx: DatasetContext) -> int | None:
    return max((e.version for e in ctx.dataset.version_entries(allow_mixed=True)), default=None)


def _read_version(ctx: VersionContext, snapshot: Head, txn: transaction_pb2.Transaction) -> None:
    version, read = snapshot.version, txn.read_version
    if txn.WhichOneof("operation") == "clone":
        if read != txn.clone.ref_version:
            ctx.finding("HIST-003", snapshot.manifest_uri,
                        f"the clone transaction has read_version {read}, not the source version "
                        f"{txn.clone.ref_version} it was cloned from", code="clone_read_version")
    elif read >= version:
        ctx.finding("HIST-003", snapshot.manifest_uri,
                    f"the transaction that made version {version} has read_version {read}: not an earlier version",
                    code="read_version_not_earlier")


@dataset_check("history.timestamps", "HIST-005")
def timestamps(ctx: DatasetContext) -> None:
    """SHOULD: commit timestamps do not decrease from one certified version to the next (HIST-005);
    versions that record no timestamp are skipped."""
    previous: tuple[int, tuple[int, int]] | None = None
    for version in sorted(ctx.snapshots):
        manifest = ctx.snapshots[version].manifest
        if not manifest.HasField("timestamp"):
            continue
        moment = (manifest.timestamp.seconds, manifest.timestamp.nanos)
        if previous is not None and moment < previous[1]:
            ctx.finding_at(version, "HIST-005", ctx.snapshots[version].manifest_uri,
                           f"committed at {_text(moment)}, before version {previous[0]} ({_text(previous[1])})")
        previous = (version, moment)


def _text(moment: tuple[int, int]) -> str:
    try:
        return Timestamp(seconds=moment[0], nanos=moment[1]).ToJsonString()
    except ValueError:  # outside the range a Timestamp may hold
        return f"{moment[0]} s + {moment[1]} ns"
