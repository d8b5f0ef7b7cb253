"""BLOB-004 on an object store: certify asks about an external blob's object with one HEAD (or a listing that
answers it) and never reads it, and reports a missing one, through the
simulator's proxy as straight to the server (the lazy path, the second source of truth)."""

from __future__ import annotations

from collections import Counter

import lance
import pyarrow as pa
import pytest

from conformance.certify import certify
from simulator.faults import PROFILES
from simulator.proxy import FaultProxy
from simulator.s3 import EmbeddedS3Server

pytestmark = pytest.mark.s3


def _external_blobs(server: EmbeddedS3Server, bucket: str) -> tuple[str, str]:
    """A pylance dataset on S3 whose blob column names three objects under the registered base
    ``{bucket}/external``, each by two rows; returns (dataset URI, external base URI)."""
    root = server.create_bucket(bucket)
    external = f"{root}/external"
    client = server.client()
    for i in range(3):
        client.put_object(Bucket=bucket, Key=f"external/o{i}.bin", Body=bytes(40 + i))
    options = server.storage_options()
    values = [f"{external}/o{i}.bin" for i in range(3)] * 2
    table = pa.Table.from_arrays([pa.array(range(6), pa.int64()), lance.blob_array(values)],
                                 schema=pa.schema([pa.field("id", pa.int64()), lance.blob_field("blob")]))
    lance.write_dataset(table, f"{root}/ds", data_storage_version="2.2", storage_options=options,
                        initial_bases=[lance.DatasetBasePath(external, name="external")])
    return f"{root}/ds", external


def test_external_objects_are_headed_not_read_and_a_missing_one_is_reported(s3_server: EmbeddedS3Server) -> None:
    uri, external = _external_blobs(s3_server, "external-objects")
    options = s3_server.storage_options()
    assert certify(uri, all_versions=True, storage_options=options, lazy=True).exit_code == 0
    s3_server.client().delete_object(Bucket="external-objects", Key="external/o1.bin")
    lazy = certify(uri, all_versions=True, storage_options=options, lazy=True)
    with FaultProxy(s3_server.endpoint, 1, seed=3, faults=PROFILES["none"]) as proxy:
        planned = certify(uri, all_versions=True, storage_options=proxy.storage_options(0, options))
    assert planned == lazy
    assert {f.requirement for f in planned.must_findings} == {"BLOB-004"}
    assert [f.path for f in planned.must_findings] == [f"{external}/o1.bin"]
    headed = {key for key in proxy.objects_read[0] if key.startswith("external-objects/external/")}
    assert headed == {f"external-objects/external/o{i}.bin" for i in range(3)}
    spent = Counter({cls: n for (_, cls), n in proxy.requests.items()})
    assert spent["head"] == 3, spent  # one per external object; the dataset's own objects are read by GET
