"""Divergences of pylance on S3: F-025 (a shallow clone into another bucket is written into the source's
bucket) and F-030 (a deep clone cannot copy files of a dataset-root base: on S3 every base path is a URI)."""

from __future__ import annotations

import uuid

import lance
import pyarrow as pa
import pytest

from simulator.s3 import EmbeddedS3Server

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


def test_f030_on_s3_a_deep_clone_cannot_copy_files_of_a_dataset_root_base(s3_server: EmbeddedS3Server) -> None:
    """On S3 every base path is a URI, so the F-030 defect meets every dataset-root base: the deep clone fails
    and writes no version (scenario machine-deep-clone-file-uri-root-base, step 2, on s3)."""
    bucket = f"f030-{uuid.uuid4().hex[:12]}"
    s3_server.create_bucket(bucket)
    opts = s3_server.storage_options()
    ds = lance.write_dataset(pa.table({"id": [1]}), f"s3://{bucket}/ds", storage_options=opts,
                             initial_bases=[lance.DatasetBasePath(f"s3://{bucket}/r", name="r", is_dataset_root=True)],
                             target_bases=["r"])
    with pytest.raises(OSError, match="contained empty path segment"):
        ds.deep_clone(f"s3://{bucket}/deep", 1, storage_options=opts)
    client = s3_server.client()
    assert not client.list_objects_v2(Bucket=bucket, Prefix="deep/_versions/").get("Contents")
    # The same dataset with its file in the root deep-clones.
    plain = lance.write_dataset(pa.table({"id": [1]}), f"s3://{bucket}/plain", storage_options=opts)
    plain.deep_clone(f"s3://{bucket}/plain-deep", 1, storage_options=opts)
    assert lance.dataset(f"s3://{bucket}/plain-deep", storage_options=opts).count_rows() == 1
