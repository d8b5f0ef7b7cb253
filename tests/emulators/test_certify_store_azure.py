"""``lancespec certify-store --uri az://CONTAINER`` on Azurite: the probes through lancespec's storage layer
(object_store's conditional create is Azure's ``If-None-Match: *``). Azurite holds every property, so the
command exits 0; tests/simulator/test_certify_store.py shows the same judge failing what S3 personalities
break. Skipped, saying why, without node or Azurite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from emulator_kit import option_flags

from lancespec.cli.main import main
from simulator.emulators import AzuriteServer
from simulator.store_judge import PROPERTIES

pytestmark = [pytest.mark.azure]


def test_certify_store_on_azurite_is_safe(azurite: AzuriteServer, az_container: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    flags = option_flags(azurite.storage_options())
    out = tmp_path / "verdict.json"
    code = main(["certify-store", "--uri", az_container, "--race-rounds", "5", "--format", "json",
                 "--output", str(out), *flags])
    verdict = json.loads(out.read_text())
    assert code == 0, capsys.readouterr()
    assert verdict["endpoint"] == az_container and verdict["commit_safe"] is True
    assert [p["name"] for p in verdict["properties"]] == [name for name, _, _ in PROPERTIES]
    assert all(p["passed"] for p in verdict["properties"]), verdict


def test_certify_store_uri_with_a_path_is_refused(azurite: AzuriteServer, az_container: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["certify-store", "--uri", f"{az_container}/some/path"])
    assert stopped.value.code == 2


def test_certify_store_on_a_missing_container_is_one_line_exit_2(azurite: AzuriteServer,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    flags = option_flags(azurite.storage_options())
    assert main(["certify-store", "--uri", "az://never-created-container", *flags]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cannot read" in err
