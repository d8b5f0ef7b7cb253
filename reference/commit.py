"""The commit protocol: make a transaction the next version, or fail cleanly.

Rules (docs/lance-format.md §7, Table Format spec "Manifest.transaction_file", Storage Layout spec "Transaction Files"):

1. Data, deletion and sidecar files are written before the commit; nothing is visible until the
   manifest exists.
2. Per attempt: find the latest version by listing; judge the pending transaction against the
   transaction of every version committed since its ``read_version`` (the conflict matrix,
   ``reference.conflicts``); rebase where the matrix allows, stop where it does not.
3. Write the transaction to ``_transactions/{read_version}-{uuid}.txn``, build the next manifest with an
   inline copy of the same bytes, and create ``_versions/{name of latest+1}`` with ``put_if_absent``,
   the one atomic primitive the protocol rests on.
4. A taken name means a lost race: back off and retry (bounded). If the name is taken by *our own*
   manifest (a retried request whose first answer was lost), the commit succeeded. Whether it is ours is
   read back; a read-back that keeps failing leaves the outcome unknown (CommitOutcomeUnknown), never
   "not ours": a retry would then commit the same transaction a second time. Another writer's manifest read
   back is what the retry judges and builds on; it is not read again.
   The manifest PUT is sent once (``put_if_absent(resend=False)``): a lost answer is resolved by reading
   (``_unanswered_is_ours``), never by sending it again, since a resend can take a name a cleanup freed in
   the meantime and commit a version older than the latest.
5. New datasets (create, clone, branch) get a single attempt: a taken name means the dataset exists.
6. After success, write the version hint (a hint only; failures are ignored) where Lance writes one: on a store
   whose listing is not lexically ordered (a local directory), not on S3, where the listing names the latest
   version first (§6; pylance 14.0.2 writes no hint on S3, observed against the embedded server).

A REBASE verdict of the conflict matrix (docs/lance-format.md §7.3) is a retryable CommitConflict here:
the one reference operation that can meet one, ``ops.delete`` (against a concurrent delete of the same
fragments), rebuilds its transaction from the newer version. What it then commits is what merging the two
deletion vectors gives (§7.2 step 3); where both deleted the same rows the matrix asks for a retry, which
the rebuild is.
"""

from __future__ import annotations

import contextlib
import random
import time
import uuid as uuidlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

from .apply import finalize
from .codec import ManifestFile, decode_transaction, encode_manifest_file, encode_transaction
from .codec.refs import encode_version_hint
from .codec.transaction import peek_transaction
from .conflicts import Resolution, judge
from .errors import (
    CommitConflict,
    CommitOutcomeUnknown,
    DatasetAlreadyExists,
    LanceSpecError,
    ObjectAlreadyExists,
    ObjectNotFound,
    StorageError,
)
from .layout import (
    TRANSACTIONS_DIR,
    VERSION_HINT_NAME,
    VERSIONS_DIR,
    ManifestNaming,
    manifest_name,
    transaction_file_name,
    transaction_uri,
)
from .proto import table_pb2, transaction_pb2
from .store import Storage
from .store.uri import join
from .table import Dataset

DEFAULT_MAX_RETRIES = 20

#: Builds the next manifest's content from the latest manifest (None for a new dataset) and the
#: transaction. Version, timestamp, flags and the transaction file name are stamped afterwards.
ManifestBuilder = Callable[[table_pb2.Manifest | None, transaction_pb2.Transaction], table_pb2.Manifest]


@dataclass(frozen=True)
class CommitResult:
    """What a successful commit made."""

    version: int
    manifest_uri: str
    transaction_uri: str
    attempts: int


def new_transaction(read_version: int) -> transaction_pb2.Transaction:
    """A transaction shell with a fresh lowercase hyphenated UUID v4."""
    return transaction_pb2.Transaction(read_version=read_version, uuid=str(uuidlib.uuid4()))


def transaction_kind(dataset: Dataset, version: int, manifest_uri: str | None = None,
                     decoded: ManifestFile | None = None) -> tuple[str, int] | None:
    """``(operation name, read_version)`` of the transaction ``load_transaction`` would return (None where it
    returns None), its operation not decoded where it is read from its ``_transactions/`` file
    (``codec.transaction.peek_transaction``): what a reader asks before it needs the whole transaction. Raises
    as ``load_transaction``; ``decoded`` as there."""
    found = _transaction_source(dataset, version, manifest_uri, decoded=decoded)
    if found is None or isinstance(found, transaction_pb2.Transaction):
        return None if found is None else (found.WhichOneof("operation") or "", found.read_version)
    data, uri = found
    peeked = peek_transaction(data)
    if peeked is not None:
        return peeked
    txn = decode_transaction(data, uri)
    return txn.WhichOneof("operation") or "", txn.read_version


def _transaction_source(dataset: Dataset, version: int, manifest_uri: str | None = None, data: bytes | None = None,
                        decoded: ManifestFile | None = None
                        ) -> transaction_pb2.Transaction | tuple[bytes, str] | None:
    """The manifest's inline transaction (decoded with the manifest), else the bytes and URI of its
    ``_transactions/`` file, else None (``load_transaction``'s rules)."""
    if decoded is not None:
        return _named_transaction(dataset, decoded)
    if manifest_uri is None:
        found = dataset._find_manifest(version)
        if found is None:
            return None
        manifest_uri = found[0]
    try:
        manifest_file = dataset.manifest_file(manifest_uri, data)
    except ObjectNotFound:
        return None
    return _named_transaction(dataset, manifest_file)


def _named_transaction(dataset: Dataset, manifest_file: ManifestFile
                       ) -> transaction_pb2.Transaction | tuple[bytes, str] | None:
    """``manifest_file``'s inline transaction, else the bytes and URI of the ``_transactions/`` file it names,
    else None."""
    if manifest_file.transaction is not None:
        return manifest_file.transaction
    uri = transaction_uri(dataset.uri, manifest_file.manifest.transaction_file)
    if uri is None:
        return None
    try:
        return dataset.storage.get(uri), uri
    except ObjectNotFound:
        return None


def load_transaction(dataset: Dataset, version: int, manifest_uri: str | None = None,
                     data: bytes | None = None, decoded: ManifestFile | None = None
                     ) -> transaction_pb2.Transaction | None:
    """The transaction that made ``version``: the manifest's inline copy, else its ``_transactions/`` file.
    ``manifest_uri``: where the listing found the version's manifest (else its name is probed); one gone
    since (a cleanup removed it) is no transaction, as one the probe does not find. ``data``: the
    manifest's bytes, read already; ``decoded``: the manifest at ``manifest_uri``, decoded already (neither
    read nor decoded again)."""
    found = _transaction_source(dataset, version, manifest_uri, data, decoded)
    if found is None or isinstance(found, transaction_pb2.Transaction):
        return found
    return decode_transaction(*found)


def _backoff(attempt: int, unit: float) -> None:
    """Slot backoff after the ``attempt``-th lost race (docs/lance-format.md §7.2 step 5; Lance's
    ``SlotBackoff``, rust/lance-core/src/utils/backoff.rs): wait a random whole number of slots out of 4, 8,
    16, ..., doubling without a bound, a slot lasting ``unit`` seconds (1.1 x the first attempt's duration up to
    the taken name), so that colliding writers spread over as many attempt-long slots as there are of them,
    however slow the store is."""
    time.sleep(random.randrange(2 ** (attempt + 1)) * unit)


#: Reads of a manifest back after its write failed or found the name taken, before the outcome is unknown.
READ_BACK_ATTEMPTS = 3


def _is_ours(storage: Storage, manifest_uri: str, manifest: bytes, failure: str, *, taken: bool = False,
             theirs: Callable[[bytes], object] | None = None) -> bool:
    """Whether the object at ``manifest_uri`` is ``manifest``, the bytes this commit wrote (its transaction
    file name makes them unique). Other bytes are "not ours" (and are handed to ``theirs``); so is none there,
    unless the name was found ``taken``: then a manifest was there a moment ago and a cleanup has removed it
    since, and it may have been ours (a resend after a lost answer finds the name taken by its own first
    attempt), so the outcome is unknown. A read that fails is retried; when every attempt fails,
    CommitOutcomeUnknown (``failure`` says what happened to the write)."""
    problem = ""
    for attempt in range(READ_BACK_ATTEMPTS):
        if attempt:
            time.sleep(0.05 * 2**attempt)
        try:
            found = storage.get(manifest_uri)
        except ObjectNotFound:
            if taken:
                raise CommitOutcomeUnknown(f"{failure}, and no manifest is there now (a cleanup removed it); it "
                                           "may have been this commit's: the version may or may not have been "
                                           "committed", manifest_uri) from None
            return False
        except Exception as exc:  # a store, a connection or a timeout failing: the answer is still to come
            problem = f"{type(exc).__name__}: {exc}"
            continue
        if found == manifest:
            return True
        if theirs is not None:
            theirs(found)
        return False
    raise CommitOutcomeUnknown(
        f"{failure}, and reading the manifest back failed {READ_BACK_ATTEMPTS} times ({problem}); the version may "
        "or may not have been committed", manifest_uri)


#: Manifests a commit reads at the same time when several versions landed since the one it judged last.
READ_AHEAD = 8


def _read_ahead(dataset: Dataset, uris: list[str | None]) -> dict[str, bytes]:
    """The bytes of the manifests at ``uris`` that ``dataset`` does not hold decoded, read in parallel
    (these reads lie between the listing and the conditional PUT, where a lost race is decided). A read
    that fails is left out: judging reads that manifest again, one at a time, and meets the failure there."""
    wanted = [uri for uri in uris if uri is not None and not dataset.has_manifest_file(uri)]
    if len(wanted) < 2:
        return {}
    with ThreadPoolExecutor(max_workers=min(len(wanted), READ_AHEAD)) as pool:
        futures = {uri: pool.submit(dataset.storage.get, uri) for uri in wanted}
    return {uri: future.result() for uri, future in futures.items() if future.exception() is None}


#: A listing after which more versions than this were judged is followed by another before the manifest is
#: written, at most ``CATCH_UP_LISTINGS`` times in a row. Reading and judging many versions (a retry after a long
#: backoff, a stale ``read_version``) takes long enough for others to commit meanwhile; written on at once, the
#: manifest would lose its race again. Listed again, the window between the last listing and the conditional PUT
#: holds only the few versions that landed during the reads. Every version is judged as before.
CATCH_UP_VERSIONS = 2
CATCH_UP_LISTINGS = 3


def _remember(dataset: Dataset, manifest_uri: str, data: bytes) -> None:
    """Keep the manifest that took our version's name, read back already, decoded in ``dataset``: the next
    attempt judges its transaction and builds on it without reading it again. One that does not decode is
    left for that attempt to read (and fail on) as it would any other."""
    with contextlib.suppress(LanceSpecError):
        dataset.manifest_file(manifest_uri, data)


def _unanswered_is_ours(dataset: Dataset, manifest_uri: str, manifest: bytes, version: int, exc: Exception) -> bool:
    """After a manifest PUT that got no answer (sent once: ``put_if_absent(resend=False)``), whether the
    manifest it wrote is there. False where the commit may try again from a listing: another writer's
    manifest holds the name (a lost race: a name is written at most once), or none does and no later version
    exists (a taken name is freed only by a cleanup, and a cleanup keeps the latest version). A free name
    below a later version was taken and freed since, perhaps by this very write: CommitOutcomeUnknown. (Why
    never a resend: step 4 of the module docstring; the simulator's lost-commit and version-reused anomalies,
    docs/simulator.md.)"""
    failure = f"writing the manifest of version {version} failed ({type(exc).__name__}: {exc})"
    theirs: list[bytes] = []
    if _is_ours(dataset.storage, manifest_uri, manifest, failure, theirs=theirs.append):
        return True
    if theirs:
        _remember(dataset, manifest_uri, theirs[0])
        return False
    try:
        later = dataset.version_entries(newer_than=version)[-1:]
    except Exception as listing:
        raise CommitOutcomeUnknown(f"{failure}, no manifest is there, and listing the versions failed "
                                   f"({type(listing).__name__}: {listing})", manifest_uri) from exc
    if later and later[0].version > version:
        raise CommitOutcomeUnknown(f"{failure}, and the name is free below version {later[0].version}: a "
                                   "cleanup freed it, and the version it held may have been this commit's",
                                   manifest_uri) from exc
    return False


def commit(dataset: Dataset, txn: transaction_pb2.Transaction, build: ManifestBuilder, *,
           new_dataset: bool = False, naming: ManifestNaming | None = None, first_version: int | None = None,
           index_section: table_pb2.IndexSection | None = None,
           max_retries: int = DEFAULT_MAX_RETRIES) -> CommitResult:
    """Commit ``txn`` to ``dataset``'s root.

    ``new_dataset``: the root must hold no version yet; the first version is ``first_version`` (clones
    and branches keep their source's number) or 1. ``naming`` is used for a new dataset; an existing
    one keeps its own. Raises CommitConflict (``retryable`` says whether rebuilding may help; a REBASE
    verdict is retryable, see the module docstring), DatasetAlreadyExists and CommitOutcomeUnknown.
    ``max_retries`` bounds the attempts in all (at least one), as Lance's ``num_retries`` does
    (rust/lance/src/io/commit.rs, ``commit_transaction``).

    Index metadata lives in its own section of the manifest file: a new dataset gets ``index_section``;
    on an existing one every operation but an overwrite carries the latest version's indices over.
    """
    storage = dataset.storage
    attempts = 0
    started = time.monotonic()
    unit = 0.0
    checked = txn.read_version  # versions up to this one have been judged (and rebased onto) already
    relisted = 0
    txn_bytes = encode_transaction(txn)
    txn_name = transaction_file_name(txn.read_version, txn.uuid)
    txn_uri = join(dataset.uri, TRANSACTIONS_DIR, txn_name)
    while True:
        attempts += 1
        entries = dataset.version_entries(newer_than=checked)
        if new_dataset:
            if entries:
                raise DatasetAlreadyExists("a dataset already exists here", dataset.uri)
            previous = None
            indices = index_section
            version = first_version or 1
            use_naming = naming or ManifestNaming.V2
        else:
            if not entries:
                raise ObjectNotFound("no dataset to commit to: _versions/ holds no manifest", dataset.uri)
            latest = entries[-1]
            use_naming = latest.naming
            listed = {e.version: e.uri for e in entries}
            read = _read_ahead(dataset, [listed.get(v) for v in range(checked + 1, latest.version + 1)])
            for other_version in range(checked + 1, latest.version + 1):
                uri = listed.get(other_version)
                other = load_transaction(dataset, other_version, uri, read.get(uri) if uri else None)
                if other is None:
                    raise CommitConflict(
                        f"version {other_version} has no readable transaction to check against",
                        dataset.uri, retryable=False,
                    )
                verdict = judge(txn, other)
                if verdict.resolution is Resolution.REBASE:
                    raise CommitConflict(f"{verdict.reason}; rebuild the transaction on version {other_version}",
                                         dataset.uri, retryable=True)
                if verdict.resolution is not Resolution.COMPATIBLE:
                    raise CommitConflict(f"{verdict.reason} (version {other_version})", dataset.uri,
                                         retryable=verdict.resolution is Resolution.RETRYABLE)
            judged, checked = latest.version - checked, max(checked, latest.version)
            if judged > CATCH_UP_VERSIONS and relisted < CATCH_UP_LISTINGS:
                relisted += 1  # judged too many to write now: list again (the same attempt), see CATCH_UP_VERSIONS
                attempts -= 1
                continue
            relisted = 0
            latest_file = dataset.manifest_file(latest.uri)
            previous = latest_file.manifest
            indices = None if txn.WhichOneof("operation") == "overwrite" else latest_file.index_section
            version = latest.version + 1

        if attempts == 1:  # a retry writes it again before it lists (below)
            storage.put(txn_uri, txn_bytes)

        manifest = finalize(build(previous, txn), version, txn_name)
        manifest_uri = join(dataset.uri, VERSIONS_DIR, manifest_name(version, use_naming))
        payload = encode_manifest_file(manifest, txn_bytes, indices)
        try:
            storage.put_if_absent(manifest_uri, payload, resend=False)
            break
        except ObjectAlreadyExists:
            lost = time.monotonic()  # a slot lasts the attempt up to the taken name, not its read-back
            if _is_ours(storage, manifest_uri, payload, f"the name of version {version} was taken", taken=True,
                        theirs=partial(_remember, dataset, manifest_uri)):
                break
            if new_dataset:
                raise DatasetAlreadyExists("a dataset was created here concurrently", dataset.uri) from None
        except (StorageError, OSError) as exc:  # the store's answer never came: it may or may not have acted
            lost = time.monotonic()
            if _unanswered_is_ours(dataset, manifest_uri, payload, version, exc):
                break
        if attempts >= max_retries:
            raise CommitConflict(f"gave up after {attempts} attempts: other writers kept taking the next version",
                                 dataset.uri, retryable=True)
        if attempts == 1:
            unit = 1.1 * (lost - started)
        _backoff(attempts, unit)
        # the same bytes again, written before the next listing: what lies between that listing and the
        # conditional PUT is the window in which another writer can take the name
        storage.put(txn_uri, txn_bytes)
    if not storage.backend(dataset.uri).lexically_ordered:
        with contextlib.suppress(Exception):
            storage.put(join(dataset.uri, VERSIONS_DIR, VERSION_HINT_NAME), encode_version_hint(version))
    return CommitResult(version, manifest_uri, txn_uri, attempts)
