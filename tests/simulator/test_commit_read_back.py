"""A lost acknowledgement of a manifest PUT is resolved by reading, never by sending the PUT again, and a
read-back that fails commits the transaction at most once (reference/commit.py).

The reference writer appends through the fault proxy to the embedded S3 server under a written-out fault
schedule: its first manifest PUT lands but its answer is lost, and then the reads of the manifest back
fail. A commit that took the failed read for "not ours" would retry and commit the same transaction as the
next version; one that resent the PUT could take a name a cleanup had freed meanwhile (seed 52 of the
lost-ack-bursts battery, docs/simulator.md). The schedule's counts come from a calibration append on a twin
dataset (same requests, no faults).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from reference import ops
from reference.codec import decode_manifest_file
from reference.errors import CommitOutcomeUnknown, StorageError
from reference.store import open_store
from reference.table import Dataset
from simulator.faults import FaultProfile
from simulator.proxy import FaultProxy
from simulator.s3 import EmbeddedS3Server

ATTEMPTS = 2
"""Per request, attempts of boto3 and of the lean GET path (``lancespec_max_attempts``)."""


def _append_through(proxy: FaultProxy, client: int, server: EmbeddedS3Server, uri: str) -> None:
    options = proxy.storage_options(client, {**server.storage_options(), "lancespec_max_attempts": str(ATTEMPTS)})
    ops.append(Dataset(uri, open_store(options)), pa.table({"a": [3]}))


@pytest.fixture
def twins(s3_server: EmbeddedS3Server, bucket: str) -> Iterator[tuple[str, dict[str, int]]]:
    """A dataset at version 1, and the requests per class (GET, HEAD) an append to its twin made before its
    manifest PUT (a clean append makes none after it)."""
    storage = open_store(s3_server.storage_options())
    for name in ("twin", "ds"):
        ops.create(f"s3://{bucket}/{name}", pa.table({"a": [1, 2]}), storage=storage)
    with FaultProxy(s3_server.endpoint, 1) as clean:
        _append_through(clean, 0, s3_server, f"s3://{bucket}/twin")
        counts = {cls: clean.requests[(0, cls)] for cls in ("get", "head", "manifest-put")}
    assert counts["manifest-put"] == 1
    yield f"s3://{bucket}/ds", counts


def _versions(server: EmbeddedS3Server, uri: str) -> list[tuple[int, str]]:
    """Every committed version of ``uri`` with the transaction file its manifest names."""
    dataset = Dataset(uri, open_store(server.storage_options()))
    out = []
    for entry in dataset.version_entries():
        manifest = decode_manifest_file(dataset.storage.get(entry.uri), entry.uri).manifest
        out.append((entry.version, manifest.transaction_file))
    return out


@pytest.mark.parametrize("failed_reads", [ATTEMPTS, 3 * ATTEMPTS], ids=["read-back-recovers", "read-back-fails"])
def test_a_lost_acknowledgement_then_a_failed_read_back_commits_once(
        s3_server: EmbeddedS3Server, twins: tuple[str, dict[str, int]], failed_reads: int) -> None:
    uri, before = twins
    schedule = FaultProfile("lost-ack-then-failed-reads", script={
        "manifest-put": {0: "lost-ack"},
        "get": {before["get"] + k: "error500" for k in range(failed_reads)},
    })
    with FaultProxy(s3_server.endpoint, 1, faults=schedule) as proxy:
        if failed_reads > ATTEMPTS:  # every read-back attempt fails: the outcome cannot be told
            with pytest.raises(CommitOutcomeUnknown, match="may or may not"):
                _append_through(proxy, 0, s3_server, uri)
        else:
            _append_through(proxy, 0, s3_server, uri)
        injected = sorted((f.request_class, f.kind) for f in proxy.faults)
        assert proxy.requests[(0, "manifest-put")] == 1  # never sent again
    assert injected == sorted([("manifest-put", "lost-ack")] + [("get", "error500")] * failed_reads)
    versions = _versions(s3_server, uri)
    assert [v for v, _ in versions] == [1, 2], versions  # the append landed once, as version 2
    assert len({txn for _, txn in versions}) == 2  # no transaction committed twice
    assert Dataset(uri, open_store(s3_server.storage_options())).snapshot().num_rows == 3


@pytest.mark.parametrize("resend", [True, False])
def test_a_conditional_put_whose_answer_is_lost_is_resent_only_when_asked(
        s3_server: EmbeddedS3Server, bucket: str, resend: bool) -> None:
    """``put_if_absent(resend=True)`` sends the PUT again and recognises its own landed write by ETag;
    ``resend=False`` (the commit's manifest PUT) raises at once, for the caller to read what happened."""
    uri = f"s3://{bucket}/refs/_versions/1.manifest"
    lost = FaultProfile("lost", script={"manifest-put": {0: "lost-ack"}})
    with FaultProxy(s3_server.endpoint, 1, faults=lost) as proxy:
        storage = open_store(proxy.storage_options(0, {**s3_server.storage_options(),
                                                       "lancespec_max_attempts": str(ATTEMPTS)}))
        if resend:
            storage.put_if_absent(uri, b"ours")
        else:
            with pytest.raises(StorageError, match="got no answer"):
                storage.put_if_absent(uri, b"ours", resend=False)
        assert proxy.requests[(0, "manifest-put")] == (2 if resend else 1)
    assert open_store(s3_server.storage_options()).get(uri) == b"ours"  # the one write landed either way
