"""certify-store's judge (``simulator.store_judge``) against stores whose answers are known from elsewhere:
the embedded server with and without its write lock, the proxy's storage personalities in front of it
(each breaks one property by construction, simulator/proxy.py), and s3rver, a third-party S3 server from
npm (skipped, with the reason, when setup could not install it)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulator.preflight import s3_client
from simulator.proxy import FaultProxy
from simulator.s3 import EmbeddedS3Server
from simulator.store_judge import PROPERTIES, StoreVerdict, judge_store, judge_store_uri

S3RVER = Path(__file__).resolve().parents[2] / "tools" / "node" / "node_modules" / ".bin" / "s3rver"


def by_name(verdict: StoreVerdict) -> dict[str, bool]:
    return {p.name: p.passed for p in verdict.properties}


def test_the_locked_embedded_server_passes_every_property(s3_server: EmbeddedS3Server, bucket: str) -> None:
    verdict = judge_store(s3_server.endpoint, bucket, s3_server.storage_options(), race_rounds=20)
    assert [p.name for p in verdict.properties] == [name for name, _, _ in PROPERTIES]
    assert verdict.all_passed and verdict.commit_safe, verdict.to_json()


def test_the_unlocked_embedded_server_is_not_commit_safe() -> None:
    with EmbeddedS3Server(locked=False, switch_interval=1e-6) as server:  # as the pre-flight's own test
        server.create_bucket("unlocked")
        verdict = judge_store(server.endpoint, "unlocked", server.storage_options(), race_rounds=3000,
                              only=("conditional-create", "atomic-conditional-create"))
    assert by_name(verdict) == {"conditional-create": True, "atomic-conditional-create": False}, verdict.to_json()
    assert not verdict.commit_safe


@pytest.mark.parametrize(("personality", "broken"), [
    ("no-conditional", {"conditional-create", "atomic-conditional-create"}),
    ("lagging-list", {"list-after-write", "listing-pages"}),
])
def test_each_proxy_personality_breaks_what_it_plays(s3_server: EmbeddedS3Server, bucket: str, personality: str,
                                                     broken: set[str]) -> None:
    with FaultProxy(s3_server.endpoint, 1, personality=personality, list_lag_s=30.0) as proxy:
        verdict = judge_store(proxy.endpoint(0), bucket, s3_server.storage_options(), race_rounds=5)
    failed = {name for name, passed in by_name(verdict).items() if not passed}
    assert failed == broken, verdict.to_json()
    assert not verdict.commit_safe


@pytest.mark.parametrize(("personality", "broken"), [
    ("honest", set()),
    ("no-conditional", {"conditional-create", "atomic-conditional-create"}),
    ("lagging-list", {"list-after-write", "listing-pages"}),
])
def test_the_storage_layer_judge_breaks_what_each_personality_plays(
        s3_server: EmbeddedS3Server, bucket: str, personality: str, broken: set[str]) -> None:
    """``judge_store_uri`` (``--uri``: the probes through lancespec's storage layer, as on az:// and gs://) on
    s3:// fails exactly the properties the boto3 judge fails above, on the same personalities."""
    with FaultProxy(s3_server.endpoint, 1, personality=personality, list_lag_s=30.0) as proxy:
        options = {**s3_server.storage_options(), "aws_endpoint": proxy.endpoint(0)}
        verdict = judge_store_uri(f"s3://{bucket}", options, race_rounds=5)
    assert [p.name for p in verdict.properties] == [name for name, _, _ in PROPERTIES]
    failed = {name for name, passed in by_name(verdict).items() if not passed}
    assert failed == broken, verdict.to_json()
    assert verdict.commit_safe == (not broken)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def s3rver(tmp_path: Path) -> Iterator[str]:
    if shutil.which("node") is None:
        pytest.skip("node is not installed, so s3rver cannot run")
    if not S3RVER.exists():
        pytest.skip(f"s3rver is not installed at {S3RVER} (setup.sh runs npm install in tools/node)")
    port = _free_port()
    proc = subprocess.Popen([str(S3RVER), "-d", str(tmp_path), "-a", "127.0.0.1", "-p", str(port),
                             "--configure-bucket", "judged"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("s3rver did not listen within 30 s")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_s3rver_verdict(s3rver: str) -> None:
    """s3rver 3.7.1, as measured (docs/certify-store.md): it ignores If-None-Match (the last writer wins, so
    Lance must not commit there), answers a suffix range with one byte too many, and fails a listing page
    with a continuation token; listings, reads after writes, copies and deletes behave."""
    options = {"aws_access_key_id": "S3RVER", "aws_secret_access_key": "S3RVER"}
    # the two behaviours that fail, seen first through boto3 alone (a second source beside the judge)
    client = s3_client(s3rver, options)
    client.put_object(Bucket="judged", Key="raw", Body=b"first", IfNoneMatch="*")
    client.put_object(Bucket="judged", Key="raw", Body=bytes(range(200)), IfNoneMatch="*")  # no 412
    assert client.get_object(Bucket="judged", Key="raw", Range="bytes=-64")["Body"].read() != bytes(range(136, 200))
    verdict = judge_store(s3rver, "judged", options, race_rounds=5)
    assert by_name(verdict) == {
        "conditional-create": False, "atomic-conditional-create": False, "list-after-write": True,
        "read-after-write": True, "ranged-reads": False, "copy-object": True, "delete-semantics": True,
        "error-codes": True, "listing-pages": False,
    }, verdict.to_json()
    assert not verdict.commit_safe


def run_cli(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lancespec", *argv], capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_certify_store_command_exit_status_follows_the_commit_critical_verdict(
        s3_server: EmbeddedS3Server, bucket: str, tmp_path: Path) -> None:
    credentials = [f"--storage-option={k}={v}" for k, v in s3_server.storage_options().items()
                   if k in ("aws_access_key_id", "aws_secret_access_key")]
    out = tmp_path / "verdict.json"
    safe = run_cli("certify-store", "--endpoint", s3_server.endpoint, "--bucket", bucket, "--race-rounds", "5",
                   "--json", str(out), *credentials)
    assert safe.returncode == 0, safe.stdout + safe.stderr
    assert "safe on this store" in safe.stdout
    assert json.loads(out.read_text())["commit_safe"] is True
    with FaultProxy(s3_server.endpoint, 1, personality="no-conditional") as proxy:
        unsafe = run_cli("certify-store", "--endpoint", proxy.endpoint(0), "--bucket", bucket, "--race-rounds", "5",
                         *credentials)
    assert unsafe.returncode == 1, unsafe.stdout + unsafe.stderr
    assert "NOT safe" in unsafe.stdout and "conditional-create" in unsafe.stdout


def test_certify_store_command_unreachable_endpoint_is_one_line_exit_2() -> None:
    done = run_cli("certify-store", "--endpoint", f"http://127.0.0.1:{_free_port()}", "--bucket", "b", timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "cannot reach bucket" in done.stderr
