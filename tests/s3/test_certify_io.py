"""Certify on an object store through the simulator's proxy: about one request per object read, the same
verdict when the store drops, fails and throttles requests, and a bounded, one-line failure when it never
answers. The second source of truth is certify's lazy path straight to the server (no proxy, no plan)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator

import lance
import pyarrow as pa
import pytest

from conformance.certify import certify
from conformance.fetch import RunStorage
from conformance.findings import Report
from reference.errors import LimitExceeded, ObjectNotFound
from reference.limits import Limits
from reference.store import open_store
from simulator.faults import PROFILES
from simulator.proxy import FaultProxy
from simulator.s3 import EmbeddedS3Server

pytestmark = pytest.mark.s3


@pytest.fixture(scope="module")
def dataset(s3_server: EmbeddedS3Server) -> tuple[str, Report]:
    """A pylance dataset of three versions (two appends of one-row fragments, a deletion) and a tag, with
    the report of certifying it lazily, straight to the server."""
    uri = s3_server.create_bucket("certify-io") + "/ds"
    options = s3_server.storage_options()
    for start in (0, 12):
        table = pa.table({"id": pa.array(range(start, start + 12), pa.int64())})
        lance.write_dataset(table, uri, mode="append", max_rows_per_file=2, storage_options=options)
    ds = lance.dataset(uri, storage_options=options)
    ds.delete("id = 3")
    ds.tags.create("two", 2)
    return uri, certify(uri, all_versions=True, storage_options=options, lazy=True)


def _through(server: EmbeddedS3Server, uri: str, profile: str, attempts: int = 8) -> tuple[Report, FaultProxy]:
    with FaultProxy(server.endpoint, 1, seed=7, faults=PROFILES[profile]) as proxy:
        options = proxy.storage_options(0, {**server.storage_options(), "lancespec_max_attempts": str(attempts)})
        return certify(uri, all_versions=True, storage_options=options), proxy


def test_about_one_request_per_object_and_the_lazy_verdict(s3_server: EmbeddedS3Server,
                                                         dataset: tuple[str, Report]) -> None:
    uri, lazy = dataset
    report, proxy = _through(s3_server, uri, "none")
    assert report == lazy and report.exit_code == 0, report.findings
    spent = Counter({cls: n for (_, cls), n in proxy.requests.items()})
    objects = len(proxy.objects_read[0])
    assert objects >= 12 + 2 + 3 + 3  # data files, a deletion file, manifests, transactions
    assert sum(spent[c] for c in ("get", "head", "list")) <= 1.3 * objects, (spent, objects)
    assert spent["head"] == 0  # sizes come from the suffix reads and the listings


@pytest.mark.parametrize("profile", ["only-error500", "only-slowdown", "only-reset"])
def test_failed_and_dropped_requests_change_no_verdict(s3_server: EmbeddedS3Server, dataset: tuple[str, Report],
                                                       profile: str) -> None:
    uri, lazy = dataset
    report, proxy = _through(s3_server, uri, profile)
    assert proxy.fault_counts()[profile.removeprefix("only-")] > 0  # the store did misbehave
    assert report == lazy


def test_a_listing_answers_heads_and_gets_of_what_it_does_not_hold(s3_server: EmbeddedS3Server,
                                                                  bucket: str) -> None:
    root = f"s3://{bucket}/d"
    writer = RunStorage(s3_server.storage_options())
    for name, size in (("a", 1), ("b", 2), ("sub/c", 3)):
        writer.put(f"{root}/{name}", b"x" * size)
    storage = RunStorage(s3_server.storage_options())
    assert [i.uri for i in storage.list(root, recursive=False)] == [f"{root}/a", f"{root}/b"]
    writer.delete(f"{root}/b")  # behind the run's back: the listing, not the store, answers now
    assert storage.head(f"{root}/b").size == 2
    writer.put(f"{root}/late", b"new")
    with pytest.raises(ObjectNotFound):
        storage.head(f"{root}/late")
    with pytest.raises(ObjectNotFound):
        storage.get(f"{root}/late")
    assert storage.head(f"{root}/sub/c").size == 3  # sub/ was not listed: asked of the store


def test_an_object_larger_than_the_limit_is_refused_before_its_body_is_read(s3_server: EmbeddedS3Server,
                                                                          bucket: str) -> None:
    store = open_store(s3_server.storage_options(), Limits(max_object_bytes=1000))
    store.put(f"s3://{bucket}/big", b"x" * 5000)
    store.put(f"s3://{bucket}/small", b"x" * 10)
    assert store.get(f"s3://{bucket}/small") == b"x" * 10
    with pytest.raises(LimitExceeded, match="--max-object-bytes"):
        store.get(f"s3://{bucket}/big")
    assert store.get(f"s3://{bucket}/small") == b"x" * 10  # the pool still serves


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """A loopback port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    listener.close()


def test_a_store_that_never_answers_fails_in_one_line(silent_endpoint: str) -> None:
    """The timeouts and attempts the user set bound the wait; the error names the endpoint's bucket."""
    options = [f"aws_endpoint={silent_endpoint}", "allow_http=true", "aws_access_key_id=k",
               "aws_secret_access_key=s", "timeout=0.5s", "connect_timeout=0.5s", "lancespec_max_attempts=2"]
    run = subprocess.run([sys.executable, "-m", "lancespec", "certify", "s3://silent/ds",
                          *(f"--storage-option={o}" for o in options)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2, run.stderr
    lines = [line for line in (run.stdout + run.stderr).splitlines() if "s3://silent/ds" in line]
    assert lines and any("timed out" in line.lower() or "timeout" in line.lower() for line in lines), run.stdout
    assert "Traceback" not in run.stderr
