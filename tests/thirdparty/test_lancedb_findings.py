"""Findings about LanceDB (spec/findings.md), each kept as a test that expects the divergent behaviour: the
day LanceDB changes, the test fails and the finding is revisited."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from conformance.certify import certify
from reference.proto import file_pb2
from reference.table import Dataset
from simulator.s3 import EmbeddedS3Server


def test_f004_lancedb_field_type_is_always_parent(lancedb_built: Callable[[str], Path]) -> None:
    """F-004: LanceDB 0.40.0 leaves Field.type at PARENT (0) for every field, leaves included; certify's
    MAN-013 finding says it is F-004."""
    root = str(lancedb_built("basic") / "t.lance")
    fields = Dataset.open(root).snapshot().manifest.fields
    assert fields and {f.type for f in fields} == {file_pb2.Field.PARENT}
    assert any(f.logical_type == "int64" for f in fields)  # a leaf, typed PARENT
    found = [f for f in certify(root).findings if f.requirement == "MAN-013"]
    assert len(found) == 1 and found[0].known == "F-004"


def test_f034_lsm_writes_keep_a_mem_wal_directory_in_the_root(lancedb_built: Callable[[str], Path]) -> None:
    """F-034: LanceDB's LSM write path writes _mem_wal/ in the root (LAYOUT-005, SHOULD) and a system index
    with no field and no file, which is no IDX-001 breach."""
    root = lancedb_built("lsm_merge_insert") / "t.lance"
    assert sorted(p.name for p in (root / "_mem_wal").iterdir())  # one region directory at least
    section = Dataset.open(str(root)).snapshot().manifest_file.index_section
    assert section is not None
    system = [i for i in section.indices if not i.fields]
    assert [(i.name, len(i.files)) for i in system] == [("__lance_mem_wal", 0)]
    report = certify(str(root))
    found = [f for f in report.findings if f.requirement == "LAYOUT-005"]
    assert [(Path(f.path).name, f.known) for f in found] == [("_mem_wal", "F-034")]
    assert report.exit_code == 0 and not [f for f in report.findings if f.requirement == "IDX-001"]


# --- found by certify-writer (conformance/adapters/lancedb.toml, tests/thirdparty/node/writer.capabilities.toml) ---


def _lancedb() -> Any:
    return pytest.importorskip("lancedb",
                               reason="LanceDB for Python is not installed (pip install 'lancespec[lancedb]')")


def _tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_f035_an_empty_branch_name_is_generic_invalid_input(tmp_path: Path) -> None:
    """F-035: LanceDB checks an empty branch name itself and refuses it as its generic invalid input (a
    ValueError), where an empty tag name is Lance's "Ref is invalid"; storage is left unchanged."""
    lancedb = _lancedb()
    from conformance.adapters.lancedb import classify

    table = lancedb.connect(str(tmp_path)).create_table("t", pa.table({"id": [1]}))
    before = _tree(tmp_path)
    with pytest.raises(ValueError, match="branch name must be a non-empty string") as branch:
        table.branches.create("")
    with pytest.raises(RuntimeError, match="Ref is invalid") as tag:
        table.tags.create("", 1)
    assert (classify(branch.value), classify(tag.value)) == ("invalid_input", "invalid_ref_name")
    assert _tree(tmp_path) == before


@pytest.mark.s3
def test_f036_clone_table_on_s3_commits_then_fails(s3_server: EmbeddedS3Server) -> None:
    """F-036: on S3, clone_table writes the clone, then fails to resolve the region the connection was given;
    a clone into another bucket lands in the source's bucket (F-025)."""
    lancedb = _lancedb()
    options = s3_server.storage_options()
    prefix = f"f036{uuid.uuid4().hex[:12]}"
    for bucket in ("main", "cold"):
        s3_server.create_bucket(f"{prefix}-{bucket}")
    db = lancedb.connect(f"s3://{prefix}-main", storage_options=options)
    table = db.create_table("src", pa.table({"id": [0, 1, 2]}))
    table.tags.create("t1", 1)
    with pytest.raises(RuntimeError, match="Failed to resolve region"):
        db.clone_table("c", f"s3://{prefix}-main/src.lance", source_tag="t1")
    assert db.open_table("c").count_rows() == 3  # committed all the same
    cold = lancedb.connect(f"s3://{prefix}-cold", storage_options=options)
    with pytest.raises(RuntimeError, match="Failed to resolve region"):
        cold.clone_table("x", f"s3://{prefix}-main/src.lance", source_tag="t1")
    client = s3_server.client()
    assert client.list_objects_v2(Bucket=f"{prefix}-cold").get("KeyCount", 0) == 0
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=f"{prefix}-main")["Contents"]]
    assert any(k.startswith("x.lance/_versions/") for k in keys)  # in the source's bucket


def test_lancedb_shares_the_lance_core_findings(tmp_path: Path) -> None:
    """F-006, F-022, F-023 hold for LanceDB 0.40.0 for Python (its Lance core): a non-ASCII tag name is
    accepted; a delete matching nothing commits a version; a clone onto an existing table is an internal
    error that leaves a transaction file in the target."""
    lancedb = _lancedb()
    db = lancedb.connect(str(tmp_path))
    table = db.create_table("t", pa.table({"id": [1, 2]}))
    table.tags.create("é", 1)  # F-006
    assert (tmp_path / "t.lance" / "_refs" / "tags" / "%C3%A9.json").is_file()
    result = table.delete("id > 100")  # F-022
    assert (result.num_deleted_rows, result.version) == (0, 2)
    db.create_table("c", pa.table({"id": [3]}))
    before = _tree(tmp_path / "c.lance")
    with pytest.raises(RuntimeError, match="internal error") as clone:  # F-023
        db.clone_table("c", table.uri, source_version=1)
    after = _tree(tmp_path / "c.lance")
    assert [p for p in after if p not in before] and all(p.startswith("_transactions/") for p in after
                                                         if p not in before)
    from conformance.adapters.lancedb import classify

    assert classify(clone.value) == "invalid_input"  # not dataset_exists: the error does not say why
