"""Findings about LanceDB (spec/findings.md), each kept as a test that expects the divergent behaviour: the
day LanceDB changes, the test fails and the finding is revisited."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lancespec.conformance.certify import certify
from lancespec.reference.proto import file_pb2
from lancespec.reference.table import Dataset


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
