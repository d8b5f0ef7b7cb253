"""F-025: on S3, pylance writes a shallow clone whose target is in another bucket into the source's bucket."""

from __future__ import annotations

import uuid

import lance
import pyarrow as pa
import pytest

from lancespec.simulator.s3 import EmbeddedS3Server

pytestmark = [pytest.mark.interop, pytest.mark.s3]


def test_f025_cross_bucket_shallow_clone_lands_in_the_source_bucket(s3_server: EmbeddedS3Server) -> None:
    src_bucket, dst_bucket = (f"f025-{uuid.uuid4().hex[:12]}-{n}" for n in ("a", "b"))
    for name in (src_bucket, dst_bucket):
        s3_server.create_bucket(name)
    opts = s3_server.storage_options()
    ds = lance.write_dataset(pa.table({"id": [1, 2]}), f"s3://{src_bucket}/src", storage_options=opts)
    with pytest.raises((OSError, ValueError), match="not found"):
        ds.shallow_clone(f"s3://{dst_bucket}/clone", 1, storage_options=opts)
    client = s3_server.client()
    in_source = [o["Key"] for o in client.list_objects_v2(Bucket=src_bucket).get("Contents", [])]
    in_target = client.list_objects_v2(Bucket=dst_bucket).get("Contents", [])
    assert any(k.startswith("clone/_versions/") for k in in_source)
    assert not in_target
    # A deep clone across buckets works.
    ds.deep_clone(f"s3://{dst_bucket}/deep", 1, storage_options=opts)
    assert lance.dataset(f"s3://{dst_bucket}/deep", storage_options=opts).count_rows() == 2
