"""lancespec's read commands on ``gs://``, on fake-gcs-server (127.0.0.1), with the storage options pylance takes:
a dataset pylance wrote (on local disk, then uploaded through the JSON API, since object_store cannot upload to
this emulator) is certified and inspected; a misspelt GCS option exits 2 naming it. What writes on ``gs://``
(certify-writer, simulate, certify-store) cannot be run here (docs/stores.md). Skipped, saying why, without
fake-gcs-server."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from emulator_kit import option_flags

from lancespec.cli.main import main
from simulator.emulators import FakeGcsServer

pytestmark = [pytest.mark.gcs, pytest.mark.interop]


@pytest.fixture
def uploaded(fake_gcs: FakeGcsServer, gcs_bucket: str, tmp_path: Path) -> str:
    """Three versions pylance wrote (a create in three files, an append, a deletion), uploaded to the bucket."""
    local = tmp_path / "ds"
    lance.write_dataset(pa.table({"a": list(range(6))}), local, max_rows_per_file=2)
    lance.write_dataset(pa.table({"a": [6, 7]}), local, mode="append")
    lance.dataset(local).delete("a = 1")
    return fake_gcs.upload_tree(local, gcs_bucket, "ds")


def test_certify_a_pylance_dataset_on_fake_gcs_server(fake_gcs: FakeGcsServer, uploaded: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["certify", uploaded, "--all-versions", *option_flags(fake_gcs.storage_options())])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith(f"CONFORMANT: {uploaded}"), out
    assert "versions checked: 1-3;" in out


def test_inspect_a_pylance_dataset_on_fake_gcs_server(fake_gcs: FakeGcsServer, uploaded: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """inspect's JSON against pylance's own view of the same dataset through the same emulator."""
    options = fake_gcs.storage_options()
    assert main(["inspect", uploaded, "--format", "json", *option_flags(options)]) == 0
    shown = json.loads(capsys.readouterr().out)
    expected = lance.dataset(uploaded, storage_options=options)
    assert shown["version"] == expected.version == 3
    assert {f["path"] for frag in shown["fragments"] for f in frag["files"]} == {
        d.path for frag in expected.get_fragments() for d in frag.data_files()}


def test_a_misspelt_gcs_option_exits_2_naming_it(fake_gcs: FakeGcsServer, uploaded: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    options = {**fake_gcs.storage_options(), "google_service_acount_key": "{}"}
    with pytest.raises(SystemExit) as stopped:
        main(["certify", uploaded, *option_flags(options)])
    assert stopped.value.code == 2
    assert "unknown storage option 'google_service_acount_key'" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.spark
def test_spark_certify_a_pylance_dataset_on_fake_gcs_server(fake_gcs: FakeGcsServer, uploaded: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Spark's executors read ``gs://`` through lancespec's storage layer, with the options passed down."""
    pytest.importorskip("pyspark", reason="spark-certify needs pyspark (the spark extra)")
    code = main(["spark-certify", uploaded, "--all-versions", "--master", "local[1]",
                 *option_flags(fake_gcs.storage_options())])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith(f"CONFORMANT: {uploaded}"), out
