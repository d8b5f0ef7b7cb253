"""The committed protobuf modules are exactly what ``python -m lancespec.protogen`` produces, and they
carry the field numbers of the published Lance schema plus the ones pylance 14.0.2 writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from lancespec.protogen import PROTO_FILES, generate, source_root
from reference.proto import table_pb2, transaction_pb2

ROOT = source_root()


def test_regenerating_gives_identical_files(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools", reason="grpcio-tools (the dev extra) generates the protobuf modules")
    written = generate(ROOT / "protos", tmp_path)
    assert {p.name for p in written} == {n.replace(".proto", s) for n in PROTO_FILES for s in ("_pb2.py", "_pb2.pyi")}
    for produced in written:
        committed = ROOT / "reference" / "proto" / produced.name
        stale = f"{committed} is stale: run python -m lancespec.protogen"
        assert committed.read_bytes() == produced.read_bytes(), stale


def _number(message: type, field: str) -> int:
    return int(message.DESCRIPTOR.fields_by_name[field].number)  # type: ignore[attr-defined]


def test_field_numbers_of_the_published_schema() -> None:
    assert _number(table_pb2.Manifest, "base_paths") == 18
    assert _number(table_pb2.Manifest, "branch") == 20
    assert _number(table_pb2.Manifest, "transaction_section_deprecated") == 21
    assert _number(table_pb2.DataFile, "base_id") == 7
    assert _number(table_pb2.DeletionFile, "base_id") == 7
    assert _number(table_pb2.IndexMetadata, "base_id") == 9
    assert _number(transaction_pb2.Transaction, "clone") == 113
    assert _number(transaction_pb2.Transaction, "update_bases") == 114
    assert table_pb2.DESCRIPTOR.package == "lance.table"


def test_transaction_offset_field_written_by_pylance_14() -> None:
    # pylance 14.0.2 writes the inline-transaction offset as field 23 (docs/lance-format.md §3.1).
    assert _number(table_pb2.Manifest, "transaction_section") == 23
