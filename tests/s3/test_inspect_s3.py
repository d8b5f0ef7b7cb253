"""``lancespec inspect`` on datasets pylance wrote through the embedded S3 server: every file resolved
(expected values computed in the test from pylance's own fragment metadata), refs, and exit 2 on bad
input, all over HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import uuid
from typing import Any

import lance
import pyarrow as pa
import pytest

from lancespec.cli import main
from reference.store import open_store
from simulator.s3 import EmbeddedS3Server


def _options(server: EmbeddedS3Server) -> list[str]:
    return [arg for k, v in server.storage_options().items() for arg in ("--storage-option", f"{k}={v}")]


def _inspect(capsys: pytest.CaptureFixture[str], server: EmbeddedS3Server, *args: str) -> tuple[int, Any]:
    code = main(["inspect", *args, "--format", "json", *_options(server)])
    out = capsys.readouterr().out
    return code, json.loads(out) if code == 0 else None


def _expected_files(ds: lance.LanceDataset, root: str) -> dict[int, set[str]]:
    """Fragment id -> resolved data-file URIs, by the storage layout spec's rule, from pylance's report."""
    bases = ds.base_paths()
    out: dict[int, set[str]] = {}
    for fragment in ds.get_fragments():
        uris = set()
        for data_file in fragment.metadata.files:
            if data_file.base_id is None:
                uris.add(f"{root}/data/{data_file.path}")
            else:
                base = bases[data_file.base_id]
                sub = "/data" if base.is_dataset_root else ""
                uris.add(f"{base.path.rstrip('/')}{sub}/{data_file.path}")
        out[fragment.fragment_id] = uris
    return out


@pytest.fixture
def two_buckets(s3_server: EmbeddedS3Server) -> tuple[str, str]:
    names = (f"a-{uuid.uuid4().hex[:20]}", f"b-{uuid.uuid4().hex[:20]}")
    for name in names:
        s3_server.create_bucket(name)
    return names


def test_inspect_multi_base_dataset_across_buckets(
    s3_server: EmbeddedS3Server, two_buckets: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = two_buckets
    options = s3_server.storage_options()
    root = f"s3://{first}/ds"
    bases = [lance.DatasetBasePath(f"s3://{second}/hot", name="hot"),
             lance.DatasetBasePath(f"s3://{second}/archive", name="archive", is_dataset_root=True)]
    table = pa.table({"id": list(range(12))})
    ds = lance.write_dataset(table, root, initial_bases=bases, target_bases=["hot", "archive"],
                             max_rows_per_file=3, storage_options=options)
    ds = lance.write_dataset(table, root, mode="append", max_rows_per_file=6, storage_options=options)
    ds.delete("id = 1 or id = 7")
    ds.tags.create("before", 1)
    ds.create_branch("exp", 2)
    ds = lance.dataset(root, storage_options=options)

    code, report = _inspect(capsys, s3_server, root)
    assert code == 0
    assert report["version"] == ds.version == 3
    assert report["versions"] == [v["version"] for v in ds.versions()]
    assert {(b["id"], b["name"], b["path"], b["is_dataset_root"]) for b in report["bases"]} == {
        (i, b.name, b.path, b.is_dataset_root) for i, b in ds.base_paths().items()
    }
    expected = _expected_files(ds, root)
    assert {f["id"]: {x["uri"] for x in f["files"]} for f in report["fragments"]} == expected
    assert sum(f["num_rows"] for f in report["fragments"]) == ds.count_rows() == 20  # 24 rows, ids 1 and 7 twice each
    deletions = [f["deletion"] for f in report["fragments"] if f["deletion"]]
    assert sum(d["num_deleted_rows"] for d in deletions) == 4
    store = open_store(options)
    for fragment in report["fragments"]:
        for f in fragment["files"]:
            assert store.head(f["uri"]).size == f["size"]
        if fragment["deletion"]:
            assert store.exists(fragment["deletion"]["uri"])
            assert fragment["deletion"]["uri"].startswith(f"{root}/_deletions/")
    assert report["tags"] == {"before": 1}
    assert report["branches"] == {"exp": 2}

    code, at_tag = _inspect(capsys, s3_server, root, "--tag", "before")
    assert code == 0 and at_tag["version"] == 1
    code, on_branch = _inspect(capsys, s3_server, root, "--branch", "exp")
    assert code == 0 and on_branch["branch"] == "exp" and on_branch["uri"] == f"{root}/tree/exp"


def test_inspect_bad_s3_input_exits_2(
    s3_server: EmbeddedS3Server, bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options = s3_server.storage_options()
    root = f"s3://{bucket}/ds"
    lance.write_dataset(pa.table({"a": [1]}), root, storage_options=options)
    store = open_store(options)
    (manifest,) = [i.uri for i in store.list(f"{root}/_versions") if i.uri.endswith(".manifest")]
    store.put(manifest, store.get(manifest)[:-10])
    assert main(["inspect", root, *_options(s3_server)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and manifest in err[0] and "Traceback" not in err[0]

    assert main(["inspect", f"s3://{bucket}/nothing-here", *_options(s3_server)]) == 2
    assert capsys.readouterr().err.rstrip().endswith("nothing-here: does not exist")
