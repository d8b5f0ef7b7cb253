"""Setup mistakes are "cannot read", never a breach (issue 27; docs/exit-codes.md): ``certify`` and ``inspect``
exit 2 with one line on stderr naming the cause and what to do, no requirement id and no "MUST", and
``certify --format json`` says ``outcome: cannot_read`` with no finding. Every store is the embedded S3
server or a closed port, both on 127.0.0.1: a missing endpoint is refused before any request."""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import lance
import pyarrow as pa
import pytest

from lancespec.cli import main
from simulator.s3 import EmbeddedS3Server

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "spec" / "certify-report.schema.json").read_text())
REQUIREMENT_ID = re.compile(r"\b[A-Z]+-[0-9]{3}\b")


def lancespec(*argv: str) -> subprocess.CompletedProcess[str]:
    """The command line run in this process (``main``), as a finished process would report it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's usage errors
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(["lancespec", *argv], code, out.getvalue(), err.getvalue())


def flags(options: dict[str, str]) -> list[str]:
    return [arg for k, v in options.items() for arg in ("--storage-option", f"{k}={v}")]


def assert_cannot_read(done: subprocess.CompletedProcess[str], *named: str) -> str:
    """Exit 2, nothing on stdout, one line on stderr naming each of ``named``, no requirement id, no MUST."""
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and done.stdout == "", done.stdout + done.stderr
    line = lines[0]
    assert "MUST" not in line and not REQUIREMENT_ID.search(line) and "Traceback" not in line
    for word in named:
        assert word in line, line
    return line


@pytest.fixture
def written(s3_server: EmbeddedS3Server, bucket: str) -> str:
    """A conformant dataset of 3 fragments written by pylance."""
    uri = f"s3://{bucket}/ds"
    lance.write_dataset(pa.table({"a": list(range(6))}), uri, storage_options=s3_server.storage_options(),
                        max_rows_per_file=2)
    return uri


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("command", ["certify", "inspect"])
def test_setup_mistakes_are_cannot_read(command: str, s3_server: EmbeddedS3Server, written: str) -> None:
    good = s3_server.storage_options()
    bucket_name = written.split("/")[2]
    without_http = {k: v for k, v in good.items() if k != "allow_http"}
    without_endpoint = {k: v for k, v in good.items() if k != "aws_endpoint"}
    half_keys = {k: v for k, v in good.items() if k != "aws_secret_access_key"}
    assert lancespec(command, written, *flags(good)).returncode == 0
    cases: list[tuple[list[str], tuple[str, ...]]] = [
        ([written, *flags(without_http)], ("cannot read", "allow_http=true")),
        ([written, *flags(without_endpoint)], ("cannot read", "aws_endpoint", "allow_http")),  # before any request
        ([written, *flags(half_keys)], ("cannot read", "aws_secret_access_key")),
        ([written.replace(bucket_name, "no-such-bucket"), *flags(good)], ("no such bucket", "aws_endpoint")),
        ([written + "-missing", *flags(good)], ("cannot read", "does not exist")),
        ([written.replace("s3://", "gs://"), *flags(good)], ("no GCS store is configured",)),
        ([written.replace("s3://", "az://"), *flags(good)], ("no Azure store is configured",)),
        ([written.replace("s3://", "hdfs://"), *flags(good)], ("no store for scheme 'hdfs'",)),
        ([written.replace("s3://", "s3:/"), *flags(good)], ("names no bucket", "s3://BUCKET/PATH")),
        ([written, *flags(good), "--max-fragments", "2"], ("cannot read", "--max-fragments")),
        ([written, *flags({**good, "aws_endpoint": f"http://127.0.0.1:{closed_port()}", "lancespec_max_attempts": "2",
                           "connect_timeout": "1s"})], ("cannot read", "running and reachable")),
    ]
    for argv, named in cases:
        assert_cannot_read(lancespec(command, *argv), *named)


def test_an_unknown_storage_option_is_refused_with_a_near_miss(s3_server: EmbeddedS3Server, written: str) -> None:
    """A typo never reaches a store: without the refusal the requests would go to AWS itself."""
    options = {k: v for k, v in s3_server.storage_options().items() if k != "aws_endpoint"}
    for command in ("certify", "inspect"):
        line = assert_cannot_read(lancespec(command, written, *flags({**options, "aws_endpont": "http://127.0.0.1:1"})),
                                  "unknown storage option 'aws_endpont'", "did you mean aws_endpoint?", "allow_http")
        assert line.startswith("lancespec: error: --storage-option")


@pytest.fixture
def guarded() -> Iterator[tuple[EmbeddedS3Server, str]]:
    """A server of its own (so the session's stays open) holding a dataset, then made to check credentials:
    moto then refuses keys it does not know with HTTP 403."""
    with EmbeddedS3Server() as server:
        uri = f"{server.create_bucket('guarded')}/ds"
        lance.write_dataset(pa.table({"a": [1, 2]}), uri, storage_options=server.storage_options())
        request = urllib.request.Request(f"{server.endpoint}/moto-api/reset-auth", data=b"0", method="POST",
                                         headers={"Content-Type": "text/plain"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
        yield server, uri


def test_access_denied_is_cannot_read(guarded: tuple[EmbeddedS3Server, str], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    server, uri = guarded
    # boto3's credential chain finds nothing here and never asks the instance-metadata address (not loopback)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    for command in ("certify", "inspect"):
        assert_cannot_read(lancespec(command, uri, *flags(server.storage_options())),
                           "cannot read", "HTTP 403", "aws_access_key_id")
    keyless = {k: v for k, v in server.storage_options().items() if not k.startswith(("aws_access", "aws_secret"))}
    keyless["lancespec_max_attempts"] = "1"  # moto answers an unsigned request with HTTP 500 once it checks keys
    assert_cannot_read(lancespec("certify", uri, *flags(keyless)), "cannot read", "no credentials were given")
    report = tmp_path / "report.json"
    done = lancespec("certify", uri, *flags(server.storage_options()), "--format", "json", "--output", str(report))
    assert_cannot_read(done, "HTTP 403")
    document = json.loads(report.read_text())
    jsonschema.validate(document, SCHEMA)
    assert document["outcome"] == "cannot_read" and document["exit_code"] == 2 and document["findings"] == []
    assert "HTTP 403" in document["cannot_read"] and document["conformant"] is False
