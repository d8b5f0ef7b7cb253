"""What the simulator found, reproduced deterministically (spec/findings.md).

F-026: a commit whose manifest PUT is delayed past a cleanup that removed that version's manifest takes the
freed name: ``If-None-Match: *`` succeeds (the key is absent again), the writer is told it committed
version v, and no later version descends from it. pylance 14.0.2 and the reference writer alike (it is a
property of put-if-absent on reusable names, not of one writer). Found by
``lancespec simulate --writers 8 --ops 400 --seed 5 --writer mixed --faults default`` (two such commits:
``ds0 v27`` by a reference writer, ``ds1 v44`` by a pylance writer).

Here the delay is a proxy pause on writer A's manifest PUT; while it is held, writer B commits v2 and v3
and a cleanup (``older_than=0, retain_versions=1``) removes v1 and v2; then A's PUT of v2 lands.

F-037: pylance's cleanup deletes a removed version's data files before its manifest, does not resend a
manifest DELETE whose connection was reset, and reports success (``failed_deletes`` in its stats, no
error): the version stays listed and names files that are gone. Found by
``lancespec simulate --writers 3 --ops 36 --seed 12 --writer pylance --faults heavy --preflight-rounds 0``
(about one run in 15 on a loaded machine: ``unreadable-version`` and ``gc-deleted-reachable`` of ``ds1 v3``).
Here the proxy resets every delete after the first two (the transaction file and the data file).

F-052: a tag created while a cleanup runs can name a version the cleanup then removes: the cleanup read the tags
when it planned, the tag's writer found the version still there, and nothing orders the two. pylance 14.0.2 and
the reference writer alike. Found by the deterministic run of the mutation battery with pylance writers
(``lancespec simulate --writer pylance --writers 6 --ops 90 --datasets 1 --seed 4 --faults default --weights
append=30,delete=8,overwrite=6,tag=4,clone=5,cleanup=10,stage=12,pinned-stage=6 --deterministic``, once: pylance's
own parallel requests keep such a run from repeating): ``format-breach``, MUST REF-002, tag ``w3-t13`` names
version 19, which has no manifest. Here the proxy holds the cleanup's deletes while the tag is created.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import lance
import pyarrow as pa
import pytest

from reference import gc, ops, refs
from reference.store import open_store
from reference.table import Dataset
from simulator.faults import FaultProfile
from simulator.proxy import FaultProxy
from simulator.s3 import EmbeddedS3Server


def table(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def start_until_held(target: Callable[[], None], proxy: FaultProxy, missing: str) -> threading.Thread:
    """Run ``target`` in a thread and return once the proxy holds its first faulted request (``missing`` if it
    never comes)."""
    thread = threading.Thread(target=target)
    thread.start()
    deadline = time.monotonic() + 30
    while not proxy.faults and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proxy.faults, missing
    return thread


@pytest.mark.parametrize("writer", ["pylance", "reference"])
def test_f026_a_delayed_commit_takes_a_version_cleanup_freed(writer: str, s3_server: EmbeddedS3Server,
                                                              bucket: str) -> None:
    uri = f"s3://{bucket}/ds"
    direct = s3_server.storage_options()
    lance.write_dataset(table(1), uri, storage_options=direct)
    hold = FaultProfile("hold-manifest", {"manifest-put": {"pause": 1.0}}, pause_s=6.0)  # held 3 to 9 s
    with FaultProxy(s3_server.endpoint, 2, seed=0, faults=hold, faulty_clients=[0]) as proxy:
        slow = proxy.storage_options(0, direct)
        told: dict[str, Any] = {}

        def slow_append() -> None:
            try:
                if writer == "pylance":
                    told["version"] = lance.write_dataset(table(100), uri, mode="append", storage_options=slow).version
                else:
                    told["version"] = ops.append(Dataset(uri, open_store(slow)), table(100)).version
            except Exception as exc:  # pragma: no cover - reported below
                told["error"] = exc

        thread = start_until_held(slow_append, proxy, "the slow writer's manifest PUT never arrived")
        # Meanwhile: B commits v2 and v3, and a cleanup removes every version but the latest.
        fast = proxy.storage_options(1, direct)
        lance.write_dataset(table(2), uri, mode="append", storage_options=fast)
        ds = lance.write_dataset(table(3), uri, mode="append", storage_options=fast)
        assert ds.version == 3
        ds.cleanup_old_versions(older_than=timedelta(0), retain_versions=1, error_if_tagged_old_versions=False)
        assert [v["version"] for v in lance.dataset(uri, storage_options=direct).versions()] == [3]
        thread.join(timeout=60)
    assert "error" not in told, told
    # The divergence: the slow writer is told it committed version 2 ...
    assert told["version"] == 2
    versions = [v["version"] for v in lance.dataset(uri, storage_options=direct).versions()]
    assert versions == [2, 3]
    # ... version 2 is its manifest (the freed name was taken) ...
    assert lance.dataset(uri, version=2, storage_options=direct).to_table().column("id").to_pylist() == [1, 100]
    # ... and the latest version does not descend from it: its row is in no later version.
    assert sorted(lance.dataset(uri, storage_options=direct).to_table().column("id").to_pylist()) == [1, 2, 3]


def test_f037_a_cleanup_whose_manifest_delete_fails_leaves_an_unreadable_version(s3_server: EmbeddedS3Server,
                                                                                  bucket: str) -> None:
    uri = f"s3://{bucket}/ds"
    direct = s3_server.storage_options()
    lance.write_dataset(table(1), uri, storage_options=direct)
    lance.write_dataset(table(2), uri, mode="overwrite", storage_options=direct)  # v1's data file is now old
    reset = FaultProfile("reset-manifest-deletes", {}, script={"delete": dict.fromkeys(range(2, 64), "reset")})
    with FaultProxy(s3_server.endpoint, 1, faults=reset) as proxy:
        ds = lance.dataset(uri, storage_options=proxy.storage_options(0, direct))
        stats = ds.cleanup_old_versions(older_than=timedelta(0), retain_versions=1, error_if_tagged_old_versions=False)
        deletes = sorted(proxy.writes, key=lambda w: w.t)
    # The divergence: the data file went first, the manifest's only DELETE was reset and not sent again ...
    assert [(w.key.split("/")[1], w.applied) for w in deletes if "/_transactions/" not in w.key] == [
        ("data", True), ("_versions", False)]
    # ... and the cleanup reported success, the failure only counted in its stats ...
    assert stats.data_files_removed == 1 and stats.old_versions == 0 and stats.failed_deletes == 1
    # ... so version 1 is still listed, and cannot be read.
    assert [v["version"] for v in lance.dataset(uri, storage_options=direct).versions()] == [1, 2]
    with pytest.raises(pa.ArrowInvalid, match="Not found"):
        lance.dataset(uri, version=1, storage_options=direct).to_table()


@pytest.mark.parametrize("writer", ["pylance", "reference"])
def test_f052_a_tag_created_during_a_cleanup_names_a_version_it_removes(writer: str, s3_server: EmbeddedS3Server,
                                                                         bucket: str) -> None:
    uri = f"s3://{bucket}/ds"
    direct = s3_server.storage_options()
    lance.write_dataset(table(1), uri, storage_options=direct)
    lance.write_dataset(table(2), uri, mode="append", storage_options=direct)
    # The cleanup's deletes are held 3 to 9 s: pylance sends them side by side (all are held), the reference one at a
    # time (its first is held).
    held = dict.fromkeys(range(64) if writer == "pylance" else range(1), "pause")
    hold = FaultProfile("hold-deletes", {}, pause_s=6.0, script={"delete": held})
    with FaultProxy(s3_server.endpoint, 1, faults=hold) as proxy:
        slow = proxy.storage_options(0, direct)
        done: dict[str, Any] = {}

        def clean() -> None:
            try:
                if writer == "pylance":
                    lance.dataset(uri, storage_options=slow).cleanup_old_versions(
                        older_than=timedelta(0), retain_versions=1, error_if_tagged_old_versions=False)
                else:
                    gc.cleanup(Dataset(uri, open_store(slow)), gc.CleanupPolicy(older_than=timedelta(0),
                                                                                 retain_versions=1))
            except Exception as exc:  # pragma: no cover - reported below
                done["error"] = exc

        thread = start_until_held(clean, proxy, "the cleanup's first delete never arrived")
        # Meanwhile (the cleanup planned already: it removes version 1), version 1 is tagged; it still exists.
        if writer == "pylance":
            lance.dataset(uri, storage_options=direct).tags.create("pinned", 1)
        else:
            refs.create_tag(Dataset(uri, open_store(direct)), "pinned", 1)
        thread.join(timeout=60)
    assert "error" not in done, done
    # The divergence: the tag names version 1 ...
    assert lance.dataset(uri, storage_options=direct).tags.list()["pinned"]["version"] == 1
    # ... and the cleanup removed it: its manifest is gone.
    assert [v["version"] for v in lance.dataset(uri, storage_options=direct).versions()] == [2]
