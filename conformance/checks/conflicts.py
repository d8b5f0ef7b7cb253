"""The conflict rules judged on a root's history, from storage alone (COMMIT-002; docs/lance-format.md §7.2, §7.3).

A writer builds its transaction on ``read_version`` and, before its manifest may land as version ``v``, judges it
against the transaction of every version committed in between (``read_version < w < v``). A transaction that
the conflict matrix calls *incompatible* with one of them must fail; one it calls *retryable* must be rebuilt on
the newer version, which gives it a newer ``read_version``. So a committed transaction whose ``read_version``
still lies before a version it is incompatible with, or must be retried after, shows a commit that should have
been refused: the writer skipped judging what landed since it read (Table Format spec, "Transactions").

The matrix is the reference writer's own (:func:`reference.conflicts.judge`), so the judge and the
oracle cannot disagree. Rebases are accounted for as Lance performs them: a rebased Delete or Update is written
with ``read_version`` set to the version it was rebased on (rust/lance/src/io/commit/conflict_resolver.rs,
``finish_delete_update``), so nothing lies in between; a REBASE verdict found in a history is compatible.

What cannot be judged is left alone, never guessed: a Clone (the first commit of a new root; its
``read_version`` is the source's version), a non-strict Overwrite with ``read_version`` 0 (pylance does not
load a read version for it, §7.2 step 2, so what it saw is not recorded), a version whose transaction is gone
(no inline copy, no ``_transactions/`` file, or its manifest removed by a cleanup), and versions more than
:data:`MAX_IN_BETWEEN` before the committing one (a bound on the work a dataset can ask for).
"""

from __future__ import annotations

import bisect

from reference.commit import load_transaction, transaction_kind
from reference.conflicts import Resolution, judge
from reference.errors import LanceSpecError
from reference.proto import transaction_pb2

from . import DatasetContext, dataset_check
from .history import named_transaction_reads

#: The most versions in between that one committed transaction is judged against (the nearest ones).
MAX_IN_BETWEEN = 1000

#: Verdicts under which a transaction must not commit as it was built: how the finding says it, and its code
#: (``Finding.code``; a verdict's own code, naming a case of the matrix, comes first).
_REFUSED = {Resolution.INCOMPATIBLE: ("incompatible with", "committed_incompatible"),
            Resolution.RETRYABLE: ("had to be retried after", "committed_without_retry")}


def _judged_read_version(txn: transaction_pb2.Transaction, version: int) -> int | None:
    """The version the transaction was built on, when the history can judge what landed since; else None."""
    if _unjudged(txn.WhichOneof("operation") or "", txn.read_version, version):
        return None
    return txn.read_version


def _unjudged(operation: str, read_version: int, version: int) -> bool:
    """Whether the history cannot judge what landed since the transaction that made ``version`` read (no
    operation, a Clone, an Overwrite from version 0, a read_version not below ``version``: HIST-003's)."""
    return (operation in ("", "clone") or (operation == "overwrite" and read_version == 0)
            or read_version >= version)


@dataset_check("history.conflicts", "COMMIT-002", prefetch=named_transaction_reads)
def committed_despite_conflict(ctx: DatasetContext) -> None:
    """MUST: no certified version was committed on top of a version its transaction is incompatible with or
    must be retried after, according to the conflict matrix (COMMIT-002; docs/lance-format.md §7.3).

    A transaction is read as the reference's commit loop reads it (``commit.load_transaction``: the manifest's
    inline copy, else its ``_transactions/`` file); only the versions in between are kept while judging."""
    listed = {past.version: past for past in ctx.history()}
    order = sorted(listed)
    concurrent_of: dict[int, transaction_pb2.Transaction | None] = {}

    def transaction_of(version: int) -> transaction_pb2.Transaction | None:
        past = listed[version]
        try:
            return load_transaction(ctx.dataset, version, past.manifest_uri, decoded=past.decoded)
        except LanceSpecError:  # a transaction that does not decode: HIST-002 says so
            return None

    for version in sorted(ctx.snapshots):
        if version not in listed:
            continue
        try:  # what cannot be judged is known without decoding the operation (a first commit can be huge)
            kind = transaction_kind(ctx.dataset, version, listed[version].manifest_uri, listed[version].decoded)
        except LanceSpecError:
            continue
        if kind is None or _unjudged(*kind, version):
            continue
        start = bisect.bisect_right(order, kind[1])
        end = bisect.bisect_left(order, version)
        if start >= end:  # nothing attached lies between what it read and what it made: nothing to judge
            continue
        committing = transaction_of(version)
        read = None if committing is None else _judged_read_version(committing, version)
        if committing is None or read is None:
            continue
        for other in order[max(start, end - MAX_IN_BETWEEN):end]:
            if other not in concurrent_of:
                concurrent_of[other] = transaction_of(other)
            concurrent = concurrent_of[other]
            if concurrent is None or concurrent.WhichOneof("operation") is None:
                continue
            verdict = judge(committing, concurrent, concurrent_version=other)
            if verdict.resolution in _REFUSED:
                said, code = _REFUSED[verdict.resolution]
                ctx.finding_at(version, "COMMIT-002", ctx.snapshots[version].manifest_uri,
                               f"version {version} was built on version {read} and committed after version "
                               f"{other}, which it is {said}: {verdict.reason}",
                               detail=f"read_version {read}; concurrent version {other}", code=verdict.code or code)
