"""Test-suite wide configuration: Hypothesis settings profiles, chosen by HYPOTHESIS_PROFILE.

Tiers (markers in pyproject.toml): unit (pure, fast), interop (real pylance), s3 (embedded S3 server on
127.0.0.1), azure (Azurite on 127.0.0.1), gcs (fake-gcs-server on 127.0.0.1), spark (local Spark), slow (run
on request with ``-m slow``).
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, TypeVar

import pytest
from hypothesis import HealthCheck, settings

from simulator.emulators import AzuriteServer, EmulatorMissing, FakeGcsServer
from simulator.s3 import EmbeddedS3Server

pytest_plugins = ["pytester"]

class _Server(Protocol):
    def start(self) -> object: ...
    def stop(self) -> None: ...


ServerT = TypeVar("ServerT", bound=_Server)

# Shared test kits live in tests/ (on pythonpath); rewrite their asserts for readable failures.
pytest.register_assert_rewrite("store_contract", "report_kit")

# Hypothesis profiles (HYPOTHESIS_PROFILE; docs/properties.md). ``stateful_step_count`` bounds the writer
# machine's sequences (tests/properties/test_machine.py). The example database stays out of the repository:
# dev and thorough keep it in .hypothesis/ (git-ignored) so a failure replays first next time; ci runs
# without one, and prints a reproduction blob for every failure instead.
_SLOW_OK = [HealthCheck.too_slow]
settings.register_profile("dev", max_examples=20, deadline=None, stateful_step_count=12,
                          suppress_health_check=_SLOW_OK)
settings.register_profile("ci", max_examples=60, deadline=None, stateful_step_count=20, database=None,
                          print_blob=True, suppress_health_check=_SLOW_OK)
settings.register_profile("thorough", max_examples=1000, deadline=None, stateful_step_count=30,
                          suppress_health_check=_SLOW_OK)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


_SERVER_NEEDS = ("boto3", "moto", "flask", "flask_cors", "werkzeug")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[EmbeddedS3Server]:
    """One locked embedded S3 server (a child process on 127.0.0.1) for the whole session, started on first
    use; skipped, naming what is missing, when the packages it needs are not installed."""
    missing = [name for name in _SERVER_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"embedded S3 server needs {', '.join(missing)} (pip install 'lancespec[s3]')")
    yield from _serving(EmbeddedS3Server())


@pytest.fixture
def bucket(s3_server: EmbeddedS3Server) -> str:
    """The name of a new, empty bucket that this test alone uses."""
    name = f"t-{uuid.uuid4().hex[:24]}"
    s3_server.create_bucket(name)
    return name


@pytest.fixture(scope="session")
def azurite() -> Iterator[AzuriteServer]:
    """One Azurite (Azure Blob Storage emulator, in memory, a child process on 127.0.0.1) for the session,
    started on first use; skipped, saying what is missing, without node or Azurite (setup.sh installs it)."""
    yield from _serving(AzuriteServer())


@pytest.fixture
def az_container(azurite: AzuriteServer) -> str:
    """The URI ``az://NAME`` of a new, empty Azurite container that this test alone uses."""
    return azurite.create_container(f"t-{uuid.uuid4().hex[:24]}")


@pytest.fixture(scope="session")
def fake_gcs() -> Iterator[FakeGcsServer]:
    """One fake-gcs-server (in memory, a child process on 127.0.0.1) for the session, started on first use;
    skipped, saying what is missing, without it (the gcs extra). object_store reads from it but cannot write."""
    yield from _serving(FakeGcsServer())


def _serving(server: ServerT) -> Iterator[ServerT]:
    """``server`` started (the test skipped, saying what is missing, when an emulator is not installed), then
    stopped."""
    try:
        server.start()
    except EmulatorMissing as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def gcs_bucket(fake_gcs: FakeGcsServer) -> str:
    """The name of a new, empty fake-gcs-server bucket that this test alone uses."""
    name = f"t-{uuid.uuid4().hex[:24]}"
    fake_gcs.create_bucket(name)
    return name


_S3_DIRS = tuple(Path(__file__).resolve().parent / d for d in ("s3", "simulator"))


_SPARK_DIR = Path(__file__).resolve().parent / "spark"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/s3 and tests/simulator is marked ``s3`` (most start the embedded server). For
    a parallel run (pytest-xdist, ``--dist loadgroup``) every test gets the group of its file, so a file's
    module fixtures are made once, and the Spark tests one group, so one worker alone starts Spark."""
    for item in items:
        parents = Path(item.path).resolve().parents
        if any(d in parents for d in _S3_DIRS):
            item.add_marker(pytest.mark.s3)
        group = "spark" if _SPARK_DIR in parents else str(Path(item.path).resolve())
        item.add_marker(pytest.mark.xdist_group(group))
