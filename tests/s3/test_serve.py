"""``lancespec serve s3``, as the README uses it: started in a process of its own, its printed storage options
reach a bucket where pylance writes a dataset that ``lancespec certify`` then judges; SIGINT (Ctrl-C) stops it
with one line and exit 0. Everything on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import lance
import pyarrow as pa
import pytest

from lancespec.cli.serve import DEFAULT_BUCKET

LAUNCH = [sys.executable, "-m", "lancespec", "serve", "s3", "--port", "0"]


def _start(*extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*LAUNCH, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


@pytest.fixture
def served() -> Iterator[tuple[subprocess.Popen[str], dict[str, str], str]]:
    proc = _start("--format", "json")
    try:
        assert proc.stdout is not None
        printed = json.loads(proc.stdout.readline())
        yield proc, printed["storage_options"], printed["bucket"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_s3_prints_options_that_certify_uses_and_stops_on_ctrl_c(
        served: tuple[subprocess.Popen[str], dict[str, str], str]) -> None:
    proc, options, bucket = served
    assert bucket == f"s3://{DEFAULT_BUCKET}"
    assert options["aws_endpoint"].startswith("http://127.0.0.1:") and options["allow_http"] == "true"
    lance.write_dataset(pa.table({"a": list(range(6))}), f"{bucket}/ds", storage_options=options, max_rows_per_file=2)
    flags = [arg for k, v in options.items() for arg in ("--storage-option", f"{k}={v}")]
    done = subprocess.run([sys.executable, "-m", "lancespec", "certify", f"{bucket}/ds", *flags],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.startswith(f"CONFORMANT: {bucket}/ds"), done.stdout + done.stderr
    code, err = _stop(proc)
    assert code == 0 and err.strip().splitlines()[-1] == "lancespec serve: stopped" and "Traceback" not in err


def test_serve_s3_text_lines_are_storage_option_flags() -> None:
    proc = _start("--bucket", "other")
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().strip() for _ in range(5)]
    finally:
        code, err = _stop(proc)
    keys = {line.removeprefix("--storage-option ").partition("=")[0] for line in lines}
    assert all(line.startswith("--storage-option ") for line in lines)
    assert keys == {"aws_access_key_id", "aws_secret_access_key", "aws_endpoint", "aws_region", "allow_http"}
    assert code == 0 and "bucket s3://other" in err


def test_serve_an_unknown_emulator_is_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "lancespec", "serve", "gcs"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "'s3'" in done.stderr


def test_serve_exits_1_when_the_server_ends_on_its_own(
        served: tuple[subprocess.Popen[str], dict[str, str], str]) -> None:
    proc = served[0]
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True, check=True)
    for pid in children.stdout.split():
        os.kill(int(pid), signal.SIGKILL)  # the moto child this serve started, and nothing else
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and err.strip().splitlines()[-1] == "lancespec serve: the S3 server ended on its own"


def test_serve_on_a_taken_port_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "lancespec", "serve", "s3", "--port", str(port)],
                              capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert f"--port {port} is taken" in done.stderr
