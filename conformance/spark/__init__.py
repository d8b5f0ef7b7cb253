"""The PySpark harness: write Lance from Spark, and certify a dataset, or a pipeline's output, at scale.

* ``certify_with_spark(spark, uri, ...)``: ``lancespec certify`` with its per-file checks run as one Spark
  job over fragments and the manifest-level checks on the driver; the same findings, plus a DataFrame
  of them (``distributed``).
* ``certify_pipeline_output(spark, source_df, uri, ...)``: the output equals the source DataFrame, one
  commit made it, no fragment was written twice, no orphan files (``pipeline``).
* ``write_lance(df, uri, ...)``: executors write fragments with pylance into target bases, the driver
  commits once against the version read at job start, then certifies its output (``writer``).
* ``spark_session(master)``: a session bound to 127.0.0.1; ``background_session(master)``: the same started
  in a thread while the caller goes on, which ``certify_with_spark`` takes in place of a session (``session``).

Only the functions that take a SparkSession need pyspark; this package imports it lazily. See
docs/spark.md.
"""

from __future__ import annotations

from .digest import Digest
from .distributed import FINDINGS_SCHEMA, SparkCertification, certify_with_spark, findings_frame, fragment_checks
from .pipeline import PIPELINE_REQUIREMENTS, PipelineCertification, certify_pipeline_output
from .session import (
    LOOPBACK,
    BackgroundSession,
    SparkUnavailable,
    background_session,
    loopback_conf,
    require_spark,
    spark_session,
    spark_unavailable,
)
from .writer import BasePath, LanceWrite, StagedWrite, arrow_schema, commit_staged, stage_fragments, write_lance

__all__ = [
    "FINDINGS_SCHEMA",
    "LOOPBACK",
    "PIPELINE_REQUIREMENTS",
    "BackgroundSession",
    "BasePath",
    "Digest",
    "LanceWrite",
    "PipelineCertification",
    "SparkCertification",
    "SparkUnavailable",
    "StagedWrite",
    "arrow_schema",
    "background_session",
    "certify_pipeline_output",
    "certify_with_spark",
    "commit_staged",
    "findings_frame",
    "fragment_checks",
    "loopback_conf",
    "require_spark",
    "spark_session",
    "spark_unavailable",
    "stage_fragments",
    "write_lance",
]
