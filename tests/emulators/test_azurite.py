"""Azurite, Microsoft's Azure Storage emulator, as a real part (``simulator.emulators``): pylance
14.0.2 writes, appends and deletes on ``az://`` with the storage options ``AzuriteServer.storage_options`` gives,
once the container exists; ``lancespec serve az`` prints those options and stops on Ctrl-C. Everything on
127.0.0.1; skipped, saying why, without node or Azurite."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import Iterator

import lance
import pyarrow as pa
import pytest

from simulator.emulators import AZURITE_ACCOUNT, AzuriteServer, EmulatorError

pytestmark = [pytest.mark.azure, pytest.mark.interop]


def test_pylance_writes_appends_and_deletes_on_azurite(azurite: AzuriteServer, az_container: str) -> None:
    uri, options = f"{az_container}/ds", azurite.storage_options()
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), uri, storage_options=options)
    lance.write_dataset(pa.table({"a": [4]}), uri, mode="append", storage_options=options)
    lance.dataset(uri, storage_options=options).delete("a = 2")
    reread = lance.dataset(uri, storage_options=options)
    assert reread.version == 3
    assert sorted(reread.to_table().column("a").to_pylist()) == [1, 3, 4]


def test_a_dataset_in_one_container_is_not_in_another(azurite: AzuriteServer, az_container: str) -> None:
    """The container in the URI is where the objects go: another, new container holds no dataset."""
    options = azurite.storage_options()
    lance.write_dataset(pa.table({"a": [1]}), f"{az_container}/ds", storage_options=options)
    other = azurite.create_container(f"{az_container.removeprefix('az://')}-x")
    with pytest.raises(ValueError, match=r"(?i)not found|does not exist"):
        lance.dataset(f"{other}/ds", storage_options=options)


def test_creating_a_container_azure_refuses_names_says_why(azurite: AzuriteServer) -> None:
    """Azure's container names are 3 to 63 characters: Azurite's refusal comes back as one EmulatorError."""
    with pytest.raises(EmulatorError, match="refused to create container 'ab': HTTP 400"):
        azurite.create_container("ab")


@contextlib.contextmanager
def _serve_az(*extra: str) -> Iterator[subprocess.Popen[str]]:
    """``lancespec serve az --port 0 EXTRA...`` in a process of its own, killed if the test leaves it running."""
    proc = subprocess.Popen([sys.executable, "-m", "lancespec", "serve", "az", "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _ctrl_c(proc: subprocess.Popen[str]) -> str:
    """SIGINT, then its stderr once it ended."""
    proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=30)[1]


def test_serve_az_prints_options_pylance_writes_with_and_stops_on_ctrl_c(azurite: AzuriteServer) -> None:
    """``lancespec serve az --port 0 --format json``: one JSON line whose options reach a container pylance
    writes to; SIGINT stops it with one line on stderr and exit 0. (The session's ``azurite`` fixture only
    makes the test skip where Azurite is not installed.)"""
    with _serve_az("--format", "json") as proc:
        assert proc.stdout is not None
        printed = json.loads(proc.stdout.readline())
        options, container = printed["storage_options"], printed["bucket"]
        assert container == "az://lancespec" and options["account_name"] == AZURITE_ACCOUNT
        assert options["azure_endpoint"] == f"{printed['endpoint']}/{AZURITE_ACCOUNT}"
        assert printed["endpoint"].startswith("http://127.0.0.1:") and printed["endpoint"] != azurite.endpoint
        lance.write_dataset(pa.table({"a": [1, 2]}), f"{container}/ds", storage_options=options)
        assert lance.dataset(f"{container}/ds", storage_options=options).count_rows() == 2
        err = _ctrl_c(proc)
    assert proc.returncode == 0, err
    assert err.strip().splitlines()[-1] == "lancespec serve: stopped" and "Traceback" not in err


@pytest.mark.slow
def test_serve_az_text_lines_are_storage_option_flags(azurite: AzuriteServer) -> None:
    with _serve_az("--bucket", "other") as proc:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().strip() for _ in range(4)]
        err = _ctrl_c(proc)
    keys = {line.removeprefix("--storage-option ").partition("=")[0] for line in lines}
    assert all(line.startswith("--storage-option ") for line in lines)
    assert keys == {"account_name", "account_key", "azure_endpoint", "allow_http"}
    assert proc.returncode == 0 and "container az://other" in err
