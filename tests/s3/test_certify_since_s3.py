"""``certify --since`` on the embedded S3 server: the evidence holds the store's ETags, and after one more
commit and after an old data file is deleted the incremental report equals a full run's (the second source
of truth)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

from conformance.certify import certify
from conformance.report import render_json, to_json
from reference.store import open_store
from simulator.s3 import EmbeddedS3Server

pytestmark = pytest.mark.s3


def _judged(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k not in ("evidence", "carried_over")}


def test_since_on_s3(s3_server: EmbeddedS3Server, tmp_path: Path) -> None:
    uri = s3_server.create_bucket("certify-since") + "/ds"
    options = s3_server.storage_options()
    for start in (0, 4):
        lance.write_dataset(pa.table({"id": pa.array(range(start, start + 4), pa.int64())}), uri, mode="append",
                            max_rows_per_file=2, storage_options=options)
    lance.write_dataset(pa.table({"id": pa.array([9], pa.int64())}), uri, mode="overwrite", storage_options=options)
    earlier = tmp_path / "earlier.json"
    earlier.write_text(render_json(certify(uri, all_versions=True, storage_options=options)))
    identities = json.loads(earlier.read_text())["evidence"]["objects"].values()
    assert identities and all(i is not None and len(i.split(" ")) == 3 for i in identities)  # each with its ETag

    lance.write_dataset(pa.table({"id": pa.array([10], pa.int64())}), uri, mode="append", storage_options=options)
    incremental = to_json(certify(uri, all_versions=True, storage_options=options, since=str(earlier)))
    assert incremental["carried_over"]["versions"] == 3 and incremental["carried_over"]["new"] == ["v4"]
    assert _judged(incremental) == _judged(to_json(certify(uri, all_versions=True, storage_options=options)))

    v1_files = {f"{uri}/data/{f.path}" for fragment in lance.dataset(uri, version=1, storage_options=options)
                .get_fragments() for f in fragment.data_files()}
    open_store(options).delete(sorted(v1_files)[0])
    again = to_json(certify(uri, all_versions=True, storage_options=options, since=str(earlier)))
    assert again["carried_over"]["changed"] == ["v1", "v2"] and again["carried_over"]["versions"] == 1
    full = to_json(certify(uri, all_versions=True, storage_options=options))
    assert _judged(again) == _judged(full) and full["exit_code"] == 1
