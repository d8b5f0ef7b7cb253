"""Concurrent reference commits on the embedded S3 server (moto behind a write lock): the S3 variant of
``tests/interop/test_concurrency.py``, whose writers and checks it reuses.

8 'spawn' processes, each with its own S3 client, append 20 one-row fragments each to one dataset the
reference created; the commit point is ``PutObject`` with ``If-None-Match: *``. Afterwards: versions 1..161
without gap or repeat, every reported success present once (in the version it was told), every version
opened by pylance with the model's row count.

Measured on 2 cores (moto in a child process): about 50 s for the whole test (40-50 s of writing),
so the full 8x20 run stays in the default tier; a busy machine can double that.
"""

from __future__ import annotations

import pytest
from interop.test_concurrency import (
    APPENDS,
    WORKERS,
    check_append_history,
    create_initial,
    reference_append_worker,
    run_writers,
)

from simulator.s3 import EmbeddedS3Server

pytestmark = pytest.mark.s3


def test_eight_reference_writers_s3(s3_server: EmbeddedS3Server, bucket: str) -> None:
    uri = f"s3://{bucket}/ds"
    options = s3_server.storage_options()
    create_initial(uri, options)
    run = run_writers(uri, options, [reference_append_worker] * WORKERS, APPENDS)
    print(f"\n{WORKERS}x{APPENDS} reference appends on S3 (moto) in {run.seconds:.1f} s; "
          f"attempts: {run.describe()}")
    assert not run.errors, f"{len(run.errors)} appends failed: {run.errors[:5]}"
    assert len(run.ok) == WORKERS * APPENDS
    # pylance counts the rows of every version (a full read of 161 versions over HTTP would dominate the
    # test), reads the latest version in full and every appended fragment on its own.
    assert check_append_history(uri, options, run, read_every_version=False) == 1 + WORKERS * APPENDS
