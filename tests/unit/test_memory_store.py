"""``memory://`` through object_store's in-memory store (``reference.store.cloud``): the whole store contract,
and a dataset the reference writer commits there certified by the same process (pylance's memory store lives
in pylance's own process, so only a writer in lancespec's process can share one with it)."""

from __future__ import annotations

import uuid

import pytest
from store_contract import StoreContract

from conformance.certify import certify
from conformance.corpus.clean import rows
from reference import ops
from reference.errors import ObjectAlreadyExists
from reference.store import open_store
from reference.store.base import ObjectStore
from reference.table import Dataset


class TestMemoryStoreContract(StoreContract):
    """The ObjectStore contract on a fresh ``memory://`` root per test."""

    @pytest.fixture
    def store(self) -> ObjectStore:
        return open_store()

    @pytest.fixture
    def root(self) -> str:
        return f"memory://t-{uuid.uuid4().hex}/root"


def test_every_storage_of_the_process_sees_one_memory_store() -> None:
    uri = f"memory://t-{uuid.uuid4().hex}/obj"
    open_store().put_if_absent(uri, b"first")
    with pytest.raises(ObjectAlreadyExists):
        open_store().put_if_absent(uri, b"second")
    assert open_store({"lancespec_io_parallelism": "4"}).get(uri) == b"first"


def test_the_reference_writer_commits_in_memory_and_certify_reads_it() -> None:
    root = f"memory://t-{uuid.uuid4().hex}/ds"
    storage = open_store()
    ops.create(root, rows(0, 8), storage=storage, max_rows_per_file=4)
    ops.append(Dataset(root, storage), rows(8, 4))
    assert Dataset(root, open_store()).versions() == [1, 2]
    report = certify(root, all_versions=True)
    assert report.outcome == "conformant", [f.message for f in report.findings]


def test_no_request_starts_past_the_run_deadline() -> None:
    """``lancespec_run_timeout``: a run's deadline, checked before each request and while a listing waits."""
    import time

    from reference.errors import LimitExceeded

    uri = f"memory://t-{uuid.uuid4().hex}/obj"
    storage = open_store({"lancespec_run_timeout": "300ms"})
    storage.put(uri, b"x")
    assert storage.get(uri) == b"x"
    time.sleep(0.4)
    with pytest.raises(LimitExceeded, match="lancespec_run_timeout"):
        storage.get(uri)
    with pytest.raises(LimitExceeded, match="lancespec_run_timeout"):
        list(storage.list(uri.rsplit("/", 1)[0]))
