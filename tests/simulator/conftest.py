"""Fixtures for the simulator's tests; every test here is marked ``s3`` (most start the embedded server)."""

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


@pytest.fixture(scope="session")
def sim_server() -> Iterator[EmbeddedS3Server]:
    """One locked embedded S3 server for the simulator tests that talk to S3 directly."""
    missing = [name for name in _SERVER_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"embedded S3 server needs {', '.join(missing)} (pip install 'lancespec[s3]')")
    server = EmbeddedS3Server()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def sim_bucket(sim_server: EmbeddedS3Server) -> str:
    """A new, empty bucket for this test."""
    name = f"sim-{uuid.uuid4().hex[:20]}"
    sim_server.create_bucket(name)
    return name
