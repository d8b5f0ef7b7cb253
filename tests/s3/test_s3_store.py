"""S3Store against the embedded S3-compatible server: the store contract and S3-specific behaviour."""

from __future__ import annotations

import hashlib
import io
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from store_contract import StoreContract, payload, race_put_if_absent

from lancespec.reference.errors import ObjectAlreadyExists, ObjectNotFound, StorageError
from lancespec.reference.store import open_store
from lancespec.reference.store.base import ObjectStore
from lancespec.reference.store.s3 import CONFLICT_RETRIES, S3Store
from lancespec.simulator.s3 import EmbeddedS3Server, S3ServerError

pytestmark = pytest.mark.s3


class TestS3StoreContract(StoreContract):
    """The whole ObjectStore contract, on a fresh bucket per test."""

    @pytest.fixture
    def store(self, s3_store: S3Store) -> ObjectStore:
        return s3_store

    @pytest.fixture
    def root(self, bucket: str) -> str:
        return f"s3://{bucket}/root"


# --- configuration ----------------------------------------------------------------------------------


def test_http_endpoint_needs_allow_http(s3_server: EmbeddedS3Server) -> None:
    options = s3_server.storage_options()
    del options["allow_http"]
    with pytest.raises(StorageError, match="allow_http") as caught:
        S3Store(options)
    assert caught.value.where == s3_server.endpoint
    with pytest.raises(StorageError, match="allow_http"):
        S3Store({**options, "allow_http": "false"})
    with pytest.raises(StorageError, match="allow_http"):  # the router builds the backend on first use
        open_store(options).get("s3://any-bucket/key")


def test_endpoint_must_be_a_url() -> None:
    with pytest.raises(StorageError, match="http"):
        S3Store({"aws_endpoint": "127.0.0.1:9000", "allow_http": "true"})


def test_max_attempts_option() -> None:
    base = {"aws_access_key_id": "k", "aws_secret_access_key": "s"}
    assert S3Store(base).config.max_attempts == 5
    assert S3Store({**base, "lancespec_max_attempts": "7"}).config.max_attempts == 7
    for bad in ("0", "-1", "many"):
        with pytest.raises(StorageError, match="lancespec_max_attempts"):
            S3Store({**base, "lancespec_max_attempts": bad})


def test_timeout_and_parallelism_options() -> None:
    base = {"aws_access_key_id": "k", "aws_secret_access_key": "s"}
    config = S3Store(base).config
    assert (config.connect_timeout, config.read_timeout, config.io_parallelism) == (5.0, 10.0, 32)
    config = S3Store({**base, "connect_timeout": "500ms", "timeout": "2m", "lancespec_io_parallelism": "8"}).config
    assert (config.connect_timeout, config.read_timeout, config.io_parallelism) == (0.5, 120.0, 8)
    for key, bad in (("timeout", "soon"), ("connect_timeout", "-1s"), ("lancespec_io_parallelism", "0")):
        with pytest.raises(StorageError, match=key):
            S3Store({**base, key: bad})


def test_no_credential_lookup_without_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store nobody configured (no option, or only the run's tuning options) refuses every request before
    asking boto3's credential chain (which would read the environment and contact the instance-metadata
    address); one given options uses them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-the-environment")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    for options in ({}, {"lancespec_io_parallelism": "32", "timeout": "5s"}):
        store = S3Store(options)
        assert not store.config.configured
        with pytest.raises(StorageError, match="no S3 store is configured"):
            store.head("s3://bucket/key")
    configured = S3Store({"aws_region": "eu-west-1"}).config
    assert configured.configured
    assert configured.reader().credentials.access_key == "from-the-environment"


@pytest.mark.parametrize(
    "endpoint_key, region_key",
    [("endpoint", "region"), ("aws_endpoint_url", "aws_region"), ("AWS_ENDPOINT", "REGION")],
)
def test_option_aliases(s3_server: EmbeddedS3Server, bucket: str, endpoint_key: str, region_key: str) -> None:
    store = S3Store(
        {
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
            endpoint_key: s3_server.endpoint,
            region_key: "us-east-1",
            "allow_http": "true",
        }
    )
    assert store.config.endpoint == s3_server.endpoint
    store.put(f"s3://{bucket}/k", b"v")
    assert store.get(f"s3://{bucket}/k") == b"v"


def test_default_region() -> None:
    assert S3Store({"aws_access_key_id": "k", "aws_secret_access_key": "s"}).config.region == "us-east-1"


# --- S3-specific behaviour --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3_store(s3_server: EmbeddedS3Server) -> S3Store:
    return S3Store(s3_server.storage_options())


def test_copy_across_buckets(s3_server: EmbeddedS3Server, s3_store: S3Store, bucket: str) -> None:
    other = f"{bucket}-b"
    s3_server.create_bucket(other)
    s3_store.put(f"s3://{bucket}/src", b"travels")
    s3_store.copy(f"s3://{bucket}/src", f"s3://{other}/dir/dst")
    assert s3_store.get(f"s3://{other}/dir/dst") == b"travels"
    assert [i.uri for i in s3_store.list(f"s3://{other}")] == [f"s3://{other}/dir/dst"]


def test_list_whole_bucket(s3_store: S3Store, bucket: str) -> None:
    for key in ("top", "a/b", "a/c/d"):
        s3_store.put(f"s3://{bucket}/{key}", b"1")
    assert [i.uri for i in s3_store.list(f"s3://{bucket}")] == [
        f"s3://{bucket}/a/b",
        f"s3://{bucket}/a/c/d",
        f"s3://{bucket}/top",
    ]
    assert [i.uri for i in s3_store.list(f"s3://{bucket}/", recursive=False)] == [f"s3://{bucket}/top"]


def test_list_follows_pages(s3_store: S3Store, bucket: str) -> None:
    """More keys than one ListObjectsV2 page (1000) holds, in both listing modes."""
    names = [f"k{i:05d}" for i in range(1005)]
    for name in names:
        s3_store._client.put_object(Bucket=bucket, Key=f"p/{name}", Body=b"")
    expected = [f"s3://{bucket}/p/{n}" for n in names]
    assert [i.uri for i in s3_store.list(f"s3://{bucket}/p")] == expected
    assert [i.uri for i in s3_store.list(f"s3://{bucket}/p", recursive=False)] == expected


def test_list_names_odd_keys_as_boto3_does(s3_store: S3Store, bucket: str) -> None:
    """The lean listing asks for URL-encoded keys and decodes them; boto3's paginator (the second source of
    truth) lists the same names, sizes and times."""
    keys = ["o/a b", "o/plus+sign", "o/per%20cent", "o/\u00e9t\u00e9/x", "o/tab\tkey", "o/ctl\x01key", "o/amp&lt<"]
    for i, key in enumerate(keys):
        s3_store._client.put_object(Bucket=bucket, Key=key, Body=b"x" * i)
    theirs = sorted((f"s3://{bucket}/{item['Key']}", item["Size"], item["LastModified"])
                    for page in s3_store._client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="o/")
                    for item in page.get("Contents", ()))
    assert [(i.uri, i.size, i.last_modified) for i in s3_store.list(f"s3://{bucket}/o")] == theirs
    assert len(theirs) == len(keys)


def test_list_skips_directory_markers(s3_store: S3Store, bucket: str) -> None:
    s3_store._client.put_object(Bucket=bucket, Key="d/", Body=b"")
    s3_store._client.put_object(Bucket=bucket, Key="d/sub/", Body=b"")
    s3_store.put(f"s3://{bucket}/d/obj", b"1")
    assert [i.uri for i in s3_store.list(f"s3://{bucket}/d")] == [f"s3://{bucket}/d/obj"]
    assert [i.uri for i in s3_store.list(f"s3://{bucket}/d", recursive=False)] == [f"s3://{bucket}/d/obj"]


def test_missing_bucket(s3_store: S3Store) -> None:
    uri = "s3://no-such-bucket-here/key"
    calls = (lambda: s3_store.get(uri), lambda: s3_store.head(uri), lambda: s3_store.get_range(uri, 0, 2))
    for call in calls:
        with pytest.raises(ObjectNotFound) as caught:
            call()
        assert caught.value.where == uri
    with pytest.raises(ObjectNotFound, match="no such bucket"):
        list(s3_store.list("s3://no-such-bucket-here/dir"))
    s3_store.delete(uri)  # a missing object is not an error, whatever is missing


def test_copy_into_missing_bucket_names_destination(s3_store: S3Store, bucket: str) -> None:
    s3_store.put(f"s3://{bucket}/src", b"x")
    with pytest.raises(ObjectNotFound) as caught:
        s3_store.copy(f"s3://{bucket}/src", "s3://no-such-bucket-here/dst")
    assert caught.value.where == "s3://no-such-bucket-here/dst"


def test_bad_uris(s3_store: S3Store) -> None:
    with pytest.raises(StorageError, match="not an s3"):
        s3_store.get("gs://bucket/key")
    with pytest.raises(StorageError, match="no bucket"):
        s3_store.get("s3:///key")
    with pytest.raises(StorageError, match="names no object"):
        s3_store.get("s3://bucket")
    with pytest.raises(StorageError, match="names no object"):
        s3_store.put("s3://bucket/dir/", b"")


def test_s3a_scheme_is_kept(s3_store: S3Store, bucket: str) -> None:
    s3_store.put(f"s3a://{bucket}/d/obj", b"1")
    assert s3_store.get(f"s3://{bucket}/d/obj") == b"1"
    assert [i.uri for i in s3_store.list(f"s3a://{bucket}/d")] == [f"s3a://{bucket}/d/obj"]


def test_routed_through_open_store(s3_server: EmbeddedS3Server, bucket: str, tmp_path: Path) -> None:
    storage = open_store(s3_server.storage_options())
    storage.put(f"s3://{bucket}/a", b"from s3")
    storage.copy(f"s3://{bucket}/a", str(tmp_path / "a"))  # across stores: get then put
    assert (tmp_path / "a").read_bytes() == b"from s3"
    assert isinstance(storage.backend(f"s3://{bucket}/a"), S3Store)


def test_a_writer_lists_versions_from_the_newest_page(s3_server: EmbeddedS3Server, bucket: str) -> None:
    """S3 lists in key order and V2 names put the newest manifest first: a writer that needs only the versions
    newer than one it knows stops at the first page that reaches it (Lance's latest-version discovery); the full
    listing reads everything, and a V1 name met on the way makes the early listing read everything too."""
    import math

    from lancespec.reference.errors import FormatError
    from lancespec.reference.layout import ManifestNaming, manifest_name
    from lancespec.reference.table import EARLY_PAGE, Dataset

    storage = open_store(s3_server.storage_options())
    uri = f"s3://{bucket}/ds"
    for v in range(1, 31):
        storage.put(f"{uri}/_versions/{manifest_name(v, ManifestNaming.V2)}", b"m")
    reader = storage.backend(uri)._reader  # type: ignore[attr-defined]
    real, lists = reader.get, []

    def get(bucket: str, key: str, uri: str, *args: Any, **kwargs: Any) -> Any:
        if not key:
            lists.append(kwargs["query"].get("max-keys"))
        return real(bucket, key, uri, *args, **kwargs)

    reader.get = get
    dataset = Dataset(uri, storage)
    assert [e.version for e in dataset.version_entries()] == list(range(1, 31)) and lists == [None]
    lists.clear()
    assert [e.version for e in dataset.version_entries(newer_than=27)] == list(range(31 - EARLY_PAGE, 31))
    assert [e.version for e in dataset.version_entries(newer_than=math.inf)][-1] == 30
    assert lists == [str(EARLY_PAGE)] * 2
    lists.clear()
    assert [e.version for e in dataset.version_entries(newer_than=15)] == list(range(1, 31))  # a second page
    assert lists == [str(EARLY_PAGE), None]
    storage.put(f"{uri}/_versions/1.manifest", b"m")  # sorts before the V2 names
    with pytest.raises(FormatError, match="mixes"):
        dataset.version_entries(newer_than=29)


# --- error mapping, with the connection pool replaced -------------------------------------------------


class _FakePool:
    """Answers a PUT from a script of (status, S3 error code) pairs or urllib3 exceptions (then 200), and a
    HEAD with an ETag; records the methods sent."""

    def __init__(self, script: list[tuple[int, str] | Exception], etag: str = '"0"') -> None:
        self.script = list(script)
        self.methods: list[str] = []
        self.etag = etag

    def urlopen(self, method: str, path: str, **kwargs: Any) -> Any:
        import urllib3

        self.methods.append(method)
        if method == "PUT":
            assert kwargs["headers"]["If-None-Match"] == "*"
        answer = (200, "") if method != "PUT" or not self.script else self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        status, code = answer
        body = f"<Error><Code>{code}</Code><Message>simulated {code}</Message></Error>".encode() if code else b""
        return urllib3.HTTPResponse(io.BytesIO(body), headers={"ETag": self.etag}, status=status,
                                    preload_content=False)


@pytest.fixture
def offline_store() -> Iterator[S3Store]:
    yield S3Store({"aws_access_key_id": "k", "aws_secret_access_key": "s", "aws_endpoint": "http://127.0.0.1:9",
                   "allow_http": "true"})


def _script(store: S3Store, script: list[Any], etag: str = '"0"') -> _FakePool:
    store._reader._pool = _FakePool(script, etag)  # type: ignore[assignment]
    return store._reader._pool  # type: ignore[return-value]


def test_other_errors_name_the_code_and_uri(offline_store: S3Store) -> None:
    _script(offline_store, [(403, "AccessDenied")])
    with pytest.raises(StorageError) as caught:
        offline_store.put_if_absent("s3://b/k", b"x")
    assert not isinstance(caught.value, (ObjectNotFound, ObjectAlreadyExists))
    assert caught.value.where == "s3://b/k"
    assert "AccessDenied" in str(caught.value) and "403" in str(caught.value)


def test_conflict_is_retried(offline_store: S3Store) -> None:
    fake = _script(offline_store, [(409, "ConditionalRequestConflict")] * 2)
    offline_store.put_if_absent("s3://b/k", b"x")
    assert fake.methods == ["PUT"] * 3


def test_persistent_conflict_is_a_lost_race(offline_store: S3Store) -> None:
    fake = _script(offline_store, [(409, "ConditionalRequestConflict")] * CONFLICT_RETRIES)
    with pytest.raises(ObjectAlreadyExists, match="conflicted"):
        offline_store.put_if_absent("s3://b/k", b"x")
    assert fake.methods == ["PUT"] * CONFLICT_RETRIES


def test_412_after_a_resend_of_our_own_bytes_is_a_win(offline_store: S3Store) -> None:
    import urllib3

    ours = hashlib.md5(b"ours").hexdigest()
    lost = urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))
    fake = _script(offline_store, [lost, (412, "PreconditionFailed")], f'"{ours}"')
    offline_store.put_if_absent("s3://b/k", b"ours")  # the first, unanswered attempt landed
    assert fake.methods == ["PUT", "PUT", "HEAD"]
    _script(offline_store, [lost, (412, "PreconditionFailed")], '"other"')
    with pytest.raises(ObjectAlreadyExists):
        offline_store.put_if_absent("s3://b/k", b"ours")
    _script(offline_store, [(503, "SlowDown"), (412, "PreconditionFailed")], f'"{ours}"')
    offline_store.put_if_absent("s3://b/k", b"ours")  # any resend counts, as boto3's RetryAttempts did
    fake = _script(offline_store, [(412, "PreconditionFailed")], f'"{ours}"')
    with pytest.raises(ObjectAlreadyExists):  # no resend: someone else wrote identical bytes first
        offline_store.put_if_absent("s3://b/k", b"ours")
    assert fake.methods == ["PUT"]


# --- pylance through the server -----------------------------------------------------------------------


@pytest.mark.interop
def test_pylance_writes_and_store_reads_back(
    s3_server: EmbeddedS3Server, s3_store: S3Store, bucket: str
) -> None:
    lance = pytest.importorskip("lance", reason="pylance is not installed")
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    uri = f"s3://{bucket}/ds"
    table = pa.table({"a": [1, 2, 3]})
    lance.write_dataset(table, uri, storage_options=s3_server.storage_options())

    manifests = [i for i in s3_store.list(f"{uri}/_versions") if i.uri.endswith(".manifest")]
    assert len(manifests) == 1
    manifest = s3_store.get(manifests[0].uri)
    assert len(manifest) == manifests[0].size == s3_store.head(manifests[0].uri).size
    assert manifest.endswith(b"LANC")
    assert s3_store.get_range(manifests[0].uri, manifests[0].size - 4, 4) == b"LANC"
    data_files = [i.uri for i in s3_store.list(f"{uri}/data") if i.uri.endswith(".lance")]
    assert len(data_files) == 1
    assert s3_store.get(data_files[0]).endswith(b"LANC")
    assert [i.uri for i in s3_store.list(uri, recursive=False)] == []  # only directories at the top

    reread = lance.dataset(uri, storage_options=s3_server.storage_options())
    assert reread.to_table().equals(table)


# --- conditional writes under contention --------------------------------------------------------------


def _race_rounds(server: EmbeddedS3Server, bucket: str, rounds: int, writers: int) -> list[int]:
    """Winners per round of ``writers`` threads, each with its own S3Store, racing on a fresh name."""
    stores: list[ObjectStore] = [S3Store(server.storage_options()) for _ in range(writers)]
    winners: list[int] = []
    for r in range(rounds):
        uri = f"s3://{bucket}/_versions/{r}.manifest"
        result = race_put_if_absent(stores, uri)
        assert result.errors == {}, f"round {r}: unexpected errors {result.errors!r}"
        assert len(result.winners) + len(result.losers) == writers
        assert len(result.winners) >= 1, f"round {r}: nobody won"
        assert stores[0].get(uri) in {payload(w) for w in result.winners}
        winners.append(len(result.winners))
    return winners


@pytest.fixture(scope="module")
def contended_servers(s3_server: EmbeddedS3Server) -> Iterator[tuple[EmbeddedS3Server, EmbeddedS3Server]]:
    """A locked and an unlocked server, both switching threads as often as possible to provoke races.

    (Depending on ``s3_server`` makes these tests skip, with its reason, where the server cannot run.)
    """
    with EmbeddedS3Server(switch_interval=1e-6) as locked, EmbeddedS3Server(
        locked=False, switch_interval=1e-6
    ) as unlocked:
        yield locked, unlocked


Servers = tuple[EmbeddedS3Server, EmbeddedS3Server]


def test_locked_server_has_exactly_one_winner(contended_servers: Servers) -> None:
    locked, _ = contended_servers
    locked.create_bucket("race-locked")
    winners = _race_rounds(locked, "race-locked", rounds=50, writers=8)
    assert winners == [1] * 50


def test_unlocked_server_race_is_reported(
    contended_servers: Servers,
    record_property: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without the lock two conditional PUTs can both succeed; timing-dependent, so reported, not asserted."""
    _, unlocked = contended_servers
    unlocked.create_bucket("race-unlocked")
    winners = _race_rounds(unlocked, "race-unlocked", rounds=50, writers=8)
    double = sum(1 for w in winners if w > 1)
    record_property("unlocked_rounds_with_several_winners", double)
    with capsys.disabled():
        print(f"\n[s3] unlocked server: {double} of 50 rounds had several winners (max {max(winners)})")


# --- the embedded server's lifecycle ----------------------------------------------------------------


class _ScriptedServer(EmbeddedS3Server):
    """An EmbeddedS3Server whose child runs a given Python snippet instead of the real server."""

    def __init__(self, code: str, timeout: float) -> None:
        super().__init__(startup_timeout=timeout)
        self.code = code

    def command(self) -> list[str]:
        return [sys.executable, "-c", self.code]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_server_failure_reports_stderr() -> None:
    server = _ScriptedServer("import sys; sys.stderr.write('cannot bind, sorry'); sys.exit(3)", timeout=20)
    with pytest.raises(S3ServerError, match="cannot bind, sorry") as caught:
        server.start()
    assert "exited with code 3" in str(caught.value)
    assert not server.running


def test_server_startup_timeout_kills_the_child() -> None:
    code = "import sys, time; sys.stderr.write('stuck'); sys.stderr.flush(); time.sleep(60)"
    server = _ScriptedServer(code, timeout=1.0)
    started = time.monotonic()
    with pytest.raises(S3ServerError, match="within 1 s") as caught:
        server.start()
    assert time.monotonic() - started < 10
    assert "stuck" in str(caught.value)
    assert not server.running


def test_server_lifecycle(s3_server: EmbeddedS3Server) -> None:
    assert s3_server.endpoint.startswith("http://127.0.0.1:")
    with EmbeddedS3Server() as server:
        pid, endpoint = server.pid, server.endpoint
        assert endpoint.startswith("http://127.0.0.1:") and endpoint != s3_server.endpoint
        assert server.storage_options() == {
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
            "aws_endpoint": endpoint,
            "aws_region": "us-east-1",
            "allow_http": "true",
        }
        assert _alive(pid)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    with pytest.raises(S3ServerError, match="not running"):
        _ = server.endpoint
    server.stop()  # stopping twice is fine


def test_server_exits_when_its_parent_is_gone() -> None:
    """The child watches its stdin pipe: closing it (as the parent's death would) ends the server."""
    server = EmbeddedS3Server().start()
    try:
        proc = server._running_proc()
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    finally:
        server.stop()
