"""Fixtures for tests against the embedded S3-compatible server; every test here is marked ``s3``."""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lancespec.simulator.s3 import EmbeddedS3Server

_HERE = Path(__file__).resolve().parent
_SERVER_NEEDS = ("boto3", "moto", "flask", "flask_cors", "werkzeug")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test collected from this directory with ``pytest.mark.s3``."""
    for item in items:
        if _HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.s3)


def require_server_packages() -> None:
    """Skip (naming what is missing) when the packages the embedded server needs are not installed."""
    missing = [name for name in _SERVER_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"embedded S3 server needs {', '.join(missing)} (pip install 'lancespec[s3]')")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[EmbeddedS3Server]:
    """One locked embedded S3 server (a child process on 127.0.0.1) for the whole session."""
    require_server_packages()
    server = EmbeddedS3Server()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def bucket(s3_server: EmbeddedS3Server) -> str:
    """The name of a new, empty bucket that this test alone uses."""
    name = f"t-{uuid.uuid4().hex[:24]}"
    s3_server.create_bucket(name)
    return name
