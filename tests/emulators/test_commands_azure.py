"""lancespec's commands on ``az://``, on Azurite (127.0.0.1), with the storage options pylance takes: a dataset
pylance wrote there is inspected and certified (exit 0), a misspelt option exits 2 naming it, certify-writer runs
the scenarios in Azurite containers for the reference writer and pylance, and spark-certify judges the dataset
as certify does. Skipped, saying why, without node or Azurite."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from emulator_kit import option_flags

from lancespec.cli.main import main
from simulator.emulators import AzuriteServer

pytestmark = [pytest.mark.azure, pytest.mark.interop]

#: certify-writer's scenarios run here: a create, appends and an overwrite; deletions; a deep clone; bases; a
#: refusal (storage unchanged); tags. (docs/stores.md has the verdicts of every scenario.)
SCENARIOS = ("create-append-overwrite", "deletions-arrow-and-bitmap", "deep-clone", "bases-round-robin",
             "refuse-existing", "tags-lifecycle")


@pytest.fixture
def pylance_dataset(azurite: AzuriteServer, az_container: str) -> str:
    """Three versions written by pylance on Azurite: a create in three files, an append, a deletion."""
    uri, options = f"{az_container}/ds", azurite.storage_options()
    lance.write_dataset(pa.table({"a": list(range(6))}), uri, storage_options=options, max_rows_per_file=2)
    lance.write_dataset(pa.table({"a": [6, 7]}), uri, mode="append", storage_options=options)
    lance.dataset(uri, storage_options=options).delete("a = 1")
    return uri


def test_certify_a_pylance_dataset_on_azurite(azurite: AzuriteServer, pylance_dataset: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["certify", pylance_dataset, "--all-versions", *option_flags(azurite.storage_options())])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith(f"CONFORMANT: {pylance_dataset}"), out
    assert "versions checked: 1-3;" in out


def test_inspect_a_pylance_dataset_on_azurite(azurite: AzuriteServer, pylance_dataset: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """inspect's JSON against pylance's own view of the same dataset (the second source of truth)."""
    options = azurite.storage_options()
    assert main(["inspect", pylance_dataset, "--format", "json", *option_flags(options)]) == 0
    shown = json.loads(capsys.readouterr().out)
    expected = lance.dataset(pylance_dataset, storage_options=options)
    assert shown["version"] == expected.version == 3
    assert len(shown["fragments"]) == len(expected.get_fragments()) == 4
    data_files = {f["path"] for frag in shown["fragments"] for f in frag["files"]}
    assert data_files == {d.path for frag in expected.get_fragments() for d in frag.data_files()}


def test_a_misspelt_azure_option_exits_2_naming_it(azurite: AzuriteServer, pylance_dataset: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Refused as argparse refuses a flag (SystemExit 2, one line), before any request."""
    options = {**azurite.storage_options(), "azure_endpiont": azurite.endpoint}
    with pytest.raises(SystemExit) as stopped:
        main(["certify", pylance_dataset, *option_flags(options)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "unknown storage option 'azure_endpiont'" in err and "did you mean azure_endpoint?" in err


def test_certify_names_a_missing_container(azurite: AzuriteServer, capsys: pytest.CaptureFixture[str]) -> None:
    """A container nobody created is the reader's setup, not the dataset's fault: cannot read, exit 2."""
    assert main(["certify", "az://no-such-container-here/ds", *option_flags(azurite.storage_options())]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("writer", ["reference", "pylance"])
def test_certify_writer_on_azurite(writer: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   azurite: AzuriteServer) -> None:
    """The scenarios on ``--store az`` (certify-writer starts an Azurite of its own): the reference writer and
    pylance are CERTIFIED or PARTIAL there, every run certified, as on local disk and S3."""
    report = tmp_path / "report.json"
    scenarios = [arg for name in SCENARIOS for arg in ("--scenarios", name)]
    code = main(["certify-writer", "--writer", writer, "--store", "az", *scenarios, "--format", "json",
                 "--output", str(report), "--quiet"])
    verdict = json.loads(report.read_text())
    assert code == 0, capsys.readouterr()
    assert verdict["stores"] == ["az"] and verdict["verdict"] in ("certified", "partial")
    assert verdict["runs"] and all(run["store"] == "az" for run in verdict["runs"])


@pytest.mark.slow
@pytest.mark.spark
def test_spark_certify_a_pylance_dataset_on_azurite(azurite: AzuriteServer, pylance_dataset: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyspark", reason="spark-certify needs pyspark (the spark extra)")
    code = main(["spark-certify", pylance_dataset, "--all-versions", "--master", "local[1]",
                 *option_flags(azurite.storage_options())])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith(f"CONFORMANT: {pylance_dataset}"), out


def test_a_container_name_the_store_refuses_is_cannot_read_not_a_breach(
        azurite: AzuriteServer, capsys: pytest.CaptureFixture[str]) -> None:
    """``az://az://c/ds`` names a container Azure refuses (HTTP 400): the setup's mistake, exit 2 in one line,
    never a MUST finding about the dataset (it was HIST-001 "list failed")."""
    assert main(["certify", "az://az://lancespec/ds", *option_flags(azurite.storage_options())]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("lancespec: cannot read: az://az://lancespec/ds") and "HTTP 400" in line, line
    assert "check the URI's bucket or container name" in line and "MUST" not in line
