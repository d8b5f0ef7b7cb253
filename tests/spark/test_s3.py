"""Spark on S3 without s3a: executors write and read through pylance, and check through lancespec's own
store, with the storage options passed down; the embedded S3 server (127.0.0.1) stands in for S3."""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.certify import certify
from conformance.spark import BasePath, certify_with_spark, write_lance
from reference.table import Dataset
from simulator.s3 import EmbeddedS3Server

pytestmark = [pytest.mark.spark, pytest.mark.s3]


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedS3Server]:
    missing = [n for n in ("boto3", "moto", "flask", "flask_cors") if importlib.util.find_spec(n) is None]
    if missing:
        pytest.skip(f"the embedded S3 server needs {', '.join(missing)} (pip install 'lancespec[s3]')")
    with EmbeddedS3Server() as s3:
        yield s3


def test_write_and_certify_on_s3(spark: Any, server: EmbeddedS3Server) -> None:
    options = server.storage_options()
    main, other = (server.create_bucket(f"{p}-{uuid.uuid4().hex[:16]}") for p in ("main", "other"))
    uri = f"{main}/ds"
    df = spark.range(0, 30_000, numPartitions=4).selectExpr("id", "concat('row-', id) AS name")
    result = write_lance(df, uri, mode="create", initial_bases=[BasePath(f"{other}/b1", "b1"),
                                                               BasePath(f"{main}/b2", "b2")],
                         target_bases=["b1", "b2"], storage_options=options)
    cert = result.certification
    assert cert is not None and cert.conformant, [f.message for f in cert.must_findings]
    assert cert.output.rows == 30_000 and cert.output == cert.source
    snapshot = Dataset.open(uri, options).snapshot()
    assert {f.uri.split("/")[2] for fr in snapshot.fragments for f in fr.files if f.uri} == {
        main.removeprefix("s3://"), other.removeprefix("s3://")}

    spark_report = certify_with_spark(spark, uri, all_versions=True, storage_options=options).report
    assert spark_report.findings == certify(uri, all_versions=True, storage_options=options).findings

    victim = next(f.uri for fr in snapshot.fragments for f in fr.files if f.uri and f.uri.startswith(other))
    bucket, _, key = victim.removeprefix("s3://").partition("/")
    server.client().delete_object(Bucket=bucket, Key=key)
    local = certify(uri, storage_options=options)
    distributed = certify_with_spark(spark, uri, storage_options=options).report
    assert distributed.findings == local.findings
    assert [f.requirement for f in local.must_findings] == ["BASE-004"]
    assert victim in local.must_findings[0].message
