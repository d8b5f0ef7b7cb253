"""Writer certification tests: scenarios (docs/scenario-format.md) run against the reference, pylance and
the external example writer. Tests that run pylance carry ``interop``; tests on the embedded S3 server
carry ``s3`` (one server for the session, started on first use)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from lancespec.simulator.s3 import EmbeddedS3Server

_SERVER_NEEDS = ("boto3", "moto", "flask", "flask_cors", "werkzeug")


@pytest.fixture(scope="session")
def writer_s3() -> Iterator[EmbeddedS3Server]:
    """One locked embedded S3 server for the writer tests."""
    missing = [name for name in _SERVER_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"embedded S3 server needs {', '.join(missing)} (pip install 'lancespec[s3]')")
    server = EmbeddedS3Server()
    server.start()
    try:
        yield server
    finally:
        server.stop()
