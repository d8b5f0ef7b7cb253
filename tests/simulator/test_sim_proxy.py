"""The fault-injecting proxy: each fault type injected and observed by a client and by the endpoint, the
storage personalities, the seeded schedule, and the pre-flight check."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import BotoCoreError, ClientError

from simulator.faults import BURST_KINDS, FAULTS, FaultProfile, burst_of, decide, profile
from simulator.preflight import preflight
from simulator.proxy import FaultProxy, classify
from simulator.s3 import EmbeddedS3Server


def client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(s3={"addressing_style": "path"}, retries={"mode": "standard", "total_max_attempts": 1},
                      request_checksum_calculation="when_required", read_timeout=20, connect_timeout=5))


def exists(server: EmbeddedS3Server, bucket: str, key: str) -> bool:
    try:
        server.client().head_object(Bucket=bucket, Key=key)
    except ClientError:
        return False
    return True


@pytest.fixture
def proxy_for(s3_server: EmbeddedS3Server) -> Iterator[Any]:
    made: list[FaultProxy] = []

    def make(**kwargs: Any) -> FaultProxy:
        proxy = FaultProxy(s3_server.endpoint, 1, **kwargs).start()
        made.append(proxy)
        return proxy

    yield make
    for proxy in made:
        proxy.stop()


def test_schedule_is_a_pure_function_of_seed_client_class_and_count() -> None:
    prof = profile("default")
    first = [decide(prof, 7, 2, "manifest-put", n) for n in range(500)]
    assert first == [decide(prof, 7, 2, "manifest-put", n) for n in range(500)]
    assert first != [decide(prof, 8, 2, "manifest-put", n) for n in range(500)]
    assert first != [decide(prof, 7, 3, "manifest-put", n) for n in range(500)]
    kinds = {d.kind for d in first if d.kind}
    assert kinds >= {"latency", "lost-ack", "reset", "slowdown"}
    assert decide(profile("none"), 7, 2, "put", 0).kind is None


def test_a_burst_is_a_pure_function_too() -> None:
    prof = profile("lost-ack-bursts")
    drawn = [burst_of(prof, 7, 2, n) for n in range(400)]
    assert drawn == [burst_of(prof, 7, 2, n) for n in range(400)]
    assert {b[0] for b in drawn if b} == set(BURST_KINDS)
    assert {b[1] for b in drawn if b} == set(range(1, prof.burst + 1))
    assert burst_of(profile("lost-acks"), 7, 2, 0) is None


def test_request_classes() -> None:
    assert classify("PUT", "ds/_versions/18446744073709551614.manifest", "") == "manifest-put"
    assert classify("PUT", "ds/data/x.lance", "") == "put"
    assert classify("GET", "", "list-type=2&prefix=ds/") == "list"
    assert classify("GET", "ds/data/x.lance", "") == "get"
    assert classify("HEAD", "ds/data/x.lance", "") == "head"
    assert classify("DELETE", "ds/data/x.lance", "") == "delete"
    assert classify("POST", "", "delete") == "delete"
    assert classify("POST", "", "restype=container&comp=batch") == "delete"  # Azure's blob batch
    assert classify("POST", "", "restype=container&comp=list") == "other"


@pytest.mark.parametrize("kind", FAULTS)
def test_each_fault_type_is_injected_and_observed(kind: str, s3_server: EmbeddedS3Server, bucket: str,
                                                  proxy_for: Any) -> None:
    prof = FaultProfile(f"all-{kind}", {"manifest-put": {kind: 1.0}}, latency_s=0.2, pause_s=0.6)
    proxy = proxy_for(faults=prof, seed=1)
    s3 = client(proxy.endpoint(0))
    key = "ds/_versions/18446744073709551614.manifest"
    started = time.monotonic()
    error: Exception | None = None
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=b"manifest", IfNoneMatch="*")
    except (ClientError, BotoCoreError) as exc:
        error = exc
    elapsed = time.monotonic() - started
    stored = exists(s3_server, bucket, key)
    assert [(f.kind, f.request_class, f.n) for f in proxy.faults] == [(kind, "manifest-put", 0)]
    [write] = proxy.writes
    if kind == "latency":
        assert error is None and stored and elapsed >= 0.1
    elif kind == "pause":
        assert error is None and stored and elapsed >= 0.3
    elif kind in ("slowdown", "error500"):
        assert isinstance(error, ClientError) and not stored and write.status == 0
        expected = (503, "SlowDown") if kind == "slowdown" else (500, "InternalError")
        assert (error.response["ResponseMetadata"]["HTTPStatusCode"], error.response["Error"]["Code"]) == expected
    elif kind == "reset":
        assert isinstance(error, BotoCoreError) and not stored and write.status == 0
    elif kind == "lost-ack":
        # the request took effect; the client only saw its connection die
        assert isinstance(error, BotoCoreError) and stored and write.status == 200 and write.body == b"manifest"
    # other classes are untouched by this profile
    s3.put_object(Bucket=bucket, Key="ds/data/x.lance", Body=b"x")
    assert len(proxy.faults) == 1


def test_a_lost_ack_burst_fails_the_resends_or_the_reads(s3_server: EmbeddedS3Server, bucket: str,
                                                          proxy_for: Any) -> None:
    prof = FaultProfile("bursts", {"manifest-put": {"lost-ack": 1.0}}, burst=3)
    seeds = {drawn[0]: seed for seed in range(50) if (drawn := burst_of(prof, seed, 0, 0)) is not None}
    assert set(seeds) == set(BURST_KINDS)
    for kind, seed in sorted(seeds.items()):
        proxy = proxy_for(faults=prof, seed=seed)
        _, count = burst_of(prof, seed, 0, 0) or ("", 0)
        s3 = client(proxy.endpoint(0))
        key = f"ds-{kind}/_versions/18446744073709551614.manifest"
        with pytest.raises(BotoCoreError):  # the lost acknowledgement: it landed
            s3.put_object(Bucket=bucket, Key=key, Body=b"m", IfNoneMatch="*")
        if kind == "resends":
            for _ in range(count):
                with pytest.raises(BotoCoreError):
                    s3.put_object(Bucket=bucket, Key=key, Body=b"m", IfNoneMatch="*")
        else:
            with pytest.raises(ClientError) as caught:  # the resend goes through, whatever the schedule says
                s3.put_object(Bucket=bucket, Key=key, Body=b"m", IfNoneMatch="*")
            assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
            s3.put_object(Bucket=bucket, Key="ds/other", Body=b"x")  # another object: untouched
            for _ in range(count):
                with pytest.raises(BotoCoreError):
                    s3.head_object(Bucket=bucket, Key=key)
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"m"  # the burst is over
        assert [(f.kind, f.method) for f in proxy.faults] == [("lost-ack", "PUT")] + [
            ("reset", "PUT" if kind == "resends" else "HEAD")] * count


def test_faults_are_chosen_per_client(bucket: str, s3_server: EmbeddedS3Server) -> None:
    prof = FaultProfile("half", {"put": {"slowdown": 0.5}})
    with FaultProxy(s3_server.endpoint, 3, seed=4, faults=prof, faulty_clients=[0, 1]) as proxy:
        for c in range(3):
            s3 = client(proxy.endpoint(c))
            for i in range(12):
                with contextlib.suppress(ClientError):
                    s3.put_object(Bucket=bucket, Key=f"c{c}/{i}", Body=b"x")
        for c in (0, 1):
            assert proxy.faults_of(c) == [("put", n, "slowdown") for n in range(12)
                                          if decide(prof, 4, c, "put", n).kind == "slowdown"]
        assert proxy.faults_of(0) != proxy.faults_of(1)
        assert proxy.faults_of(2) == []  # the control client gets no faults


def test_no_conditional_personality_lets_the_last_writer_win(bucket: str, s3_server: EmbeddedS3Server,
                                                             proxy_for: Any) -> None:
    proxy = proxy_for(personality="no-conditional")
    s3 = client(proxy.endpoint(0))
    s3.put_object(Bucket=bucket, Key="k", Body=b"first", IfNoneMatch="*")
    s3.put_object(Bucket=bucket, Key="k", Body=b"second", IfNoneMatch="*")  # no 412
    assert s3_server.client().get_object(Bucket=bucket, Key="k")["Body"].read() == b"second"
    with pytest.raises(ClientError) as caught:  # the endpoint itself still enforces it
        client(s3_server.endpoint).put_object(Bucket=bucket, Key="k", Body=b"third", IfNoneMatch="*")
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412


def test_lagging_list_hides_recent_keys(bucket: str, s3_server: EmbeddedS3Server, proxy_for: Any) -> None:
    proxy = proxy_for(personality="lagging-list", list_lag_s=1.0)
    s3 = client(proxy.endpoint(0))
    s3.put_object(Bucket=bucket, Key="ds/_versions/old", Body=b"x")
    time.sleep(1.1)
    s3.put_object(Bucket=bucket, Key="ds/_versions/new", Body=b"y")

    def listed(c: Any) -> list[str]:
        return [o["Key"] for o in c.list_objects_v2(Bucket=bucket, Prefix="ds/").get("Contents", [])]

    assert listed(s3) == ["ds/_versions/old"]
    assert listed(s3_server.client()) == ["ds/_versions/new", "ds/_versions/old"]
    assert s3.get_object(Bucket=bucket, Key="ds/_versions/new")["Body"].read() == b"y"  # reads are current
    time.sleep(1.1)
    assert listed(s3) == ["ds/_versions/new", "ds/_versions/old"]


def test_preflight_vouches_for_the_locked_server(s3_server: EmbeddedS3Server, bucket: str) -> None:
    result = preflight(s3_server.endpoint, bucket, s3_server.storage_options(), rounds=40)
    assert result.vouched and result.sequential_ok and result.double_wins == 0 and result.rounds == 40


def test_preflight_catches_the_unlocked_server() -> None:
    with EmbeddedS3Server(locked=False, switch_interval=1e-6) as server:
        server.create_bucket("unlocked")
        result = preflight(server.endpoint, "unlocked", server.storage_options(), rounds=3000)
    assert result.sequential_ok  # one request at a time it behaves ...
    assert not result.vouched and result.double_wins >= 1  # ... under contention it does not
    assert "not atomic" in result.reason


def test_preflight_catches_an_endpoint_that_ignores_the_header(s3_server: EmbeddedS3Server, bucket: str,
                                                               proxy_for: Any) -> None:
    proxy = proxy_for(personality="no-conditional")
    result = preflight(proxy.endpoint(0), bucket, s3_server.storage_options(), rounds=5)
    assert not result.vouched and not result.sequential_ok
    assert "ignores If-None-Match" in result.reason


def test_an_answer_hook_sees_each_answer_and_may_replace_it(bucket: str, s3_server: EmbeddedS3Server,
                                                           proxy_for: Any) -> None:
    """The hook is shown the endpoint's answer (status, headers, body, the request's Range); a RawAnswer it
    returns reaches the client byte for byte, None leaves the answer as it was."""
    from simulator.proxy import RawAnswer, UpstreamAnswer

    s3_server.client().put_object(Bucket=bucket, Key="k", Body=b"0123456789")
    seen: list[UpstreamAnswer] = []

    def hook(answer: UpstreamAnswer) -> RawAnswer | None:
        seen.append(answer)
        if answer.request_headers.get("range") == "bytes=0-3":
            return RawAnswer((b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\n", b"ab", b"cd"),
                             pause_s=0.01)
        return None

    proxy = proxy_for(answer_hook=hook)
    via = client(proxy.endpoint(0))
    for wanted, expected in (("bytes=0-3", b"abcd"), ("bytes=2-4", b"234")):
        assert via.get_object(Bucket=bucket, Key="k", Range=wanted)["Body"].read() == expected
    assert [(a.method, a.key, a.status, a.body) for a in seen] == [("GET", "k", 206, b"0123"),
                                                                   ("GET", "k", 206, b"234")]
