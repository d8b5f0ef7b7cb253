"""Concurrent reference commits on the embedded S3 server (moto behind a write lock): the S3 variant of
``tests/interop/test_concurrency.py``, whose writers and checks it reuses.

8 'spawn' processes, each with its own S3 client, append one-row fragments to one dataset the reference
created; the commit point is ``PutObject`` with ``If-None-Match: *``. Afterwards: versions 1..N without
gap or repeat, every reported success present once (in the version it was told), every version readable
by pylance with the model's row count.
"""

from __future__ import annotations

import pytest
from interop.test_concurrency import (
    WORKERS,
    check_append_history,
    create_initial,
    reference_append_worker,
    run_writers,
)

from lancespec.simulator.s3 import EmbeddedS3Server

pytestmark = pytest.mark.s3

#: Appends per writer in the default run. The full 8x20 run (test_eight_reference_writers_s3_full) is
#: marked slow: on moto with 2 cores it takes 50-70 s of writing alone (up to twice that on a busy
#: machine), over the default tier's budget.
DEFAULT_APPENDS = 6
FULL_APPENDS = 20


def _run(s3_server: EmbeddedS3Server, bucket: str, appends: int, *, read_every_version: bool) -> None:
    uri = f"s3://{bucket}/ds"
    options = s3_server.storage_options()
    create_initial(uri, options)
    run = run_writers(uri, options, [reference_append_worker] * WORKERS, appends)
    print(f"\n{WORKERS}x{appends} reference appends on S3 (moto) in {run.seconds:.1f} s; "
          f"attempts: {run.describe()}")
    assert not run.errors, f"{len(run.errors)} appends failed: {run.errors[:5]}"
    assert len(run.ok) == WORKERS * appends
    latest = check_append_history(uri, options, run, read_every_version=read_every_version)
    assert latest == 1 + WORKERS * appends


def test_eight_reference_writers_s3(s3_server: EmbeddedS3Server, bucket: str) -> None:
    _run(s3_server, bucket, DEFAULT_APPENDS, read_every_version=True)


@pytest.mark.slow
def test_eight_reference_writers_s3_full(s3_server: EmbeddedS3Server, bucket: str) -> None:
    """8 writers x 20 appends; pylance counts the rows of every version and reads the latest in full."""
    _run(s3_server, bucket, FULL_APPENDS, read_every_version=False)
