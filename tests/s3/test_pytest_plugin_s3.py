"""The pytest plugin on an object store: the storage options come from the pytest configuration
(``lance_certify_storage_options``) and reach both the ``--lance-certify`` item and the fixture; the node id
names the s3:// dataset."""

from __future__ import annotations

import pyarrow as pa
import pytest

from conformance.checks import all_checks
from simulator.s3 import EmbeddedS3Server

lance = pytest.importorskip("lance", reason="pylance writes the dataset")

all_checks()  # pytester runs pytest in this process; the checks register once per process


def test_storage_options_from_the_configuration(pytester: pytest.Pytester, s3_server: EmbeddedS3Server) -> None:
    uri = s3_server.create_bucket("plugin") + "/ds"
    options = s3_server.storage_options()
    lance.write_dataset(pa.table({"id": pa.array(range(6), pa.int64())}), uri, max_rows_per_file=2,
                        storage_options=options)
    lines = ", ".join(f'"{key}={value}"' for key, value in options.items())
    pytester.makepyprojecttoml(f"""
        [tool.pytest.ini_options]
        lance_certify_storage_options = [{lines}]
        """)
    pytester.makepyfile(f"""
        def test_writer(lance_certify):
            report = lance_certify({uri!r})
            assert report.versions == [1] and report.must_findings == []
        """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-v", f"--lance-certify={uri}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"lance-certify::{uri} PASSED*"])
