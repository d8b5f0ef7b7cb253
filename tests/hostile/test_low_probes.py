"""The second review's low probes and verdict gaps (issue 32; docs/security.md): format characters and
undecodable names in reports, a schema nested thousands deep in inspect's text, ``inspect /``, and a schema
whose parent ids go round in a cycle. Each runs through the command line in a child process."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from conformance_kit import build_reference_dataset, rewrite_manifest
from test_hostile_datasets import findings, run_cli

from reference.proto import file_pb2, table_pb2

FORMAT_CHARACTERS = "\u061c\u00ad\U000e0041\u180e"


def _strict_json(text: str) -> object:
    """``json.loads`` that refuses what strict parsers refuse: a lone surrogate, escaped or raw."""
    decoded = json.loads(text)

    def walk(value: object) -> None:
        if isinstance(value, str):
            value.encode("utf-8")  # raises on a lone surrogate
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(decoded)
    return decoded


def test_format_characters_and_undecodable_names_are_escaped_everywhere(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path)
    (Path(uri) / "_versions" / os.fsdecode(b"\xfe" + FORMAT_CHARACTERS.encode() + b".manifest")).write_bytes(b"")
    text = run_cli("certify", uri)
    report = run_cli("certify", uri, "--format", "json")
    inspected = run_cli("inspect", uri, "--format", "json")
    for out in (text.stdout, report.stdout, inspected.stdout):
        assert not any(c in out for c in FORMAT_CHARACTERS)
    assert "\\u061c" in text.stdout and "\\xfe" in text.stdout
    _strict_json(inspected.stdout)
    paths = [str(f["path"]) for f in findings(report)]
    _strict_json(report.stdout)
    # JSON carries the name as it is (its escapes keep the raw output free of them); only the byte that
    # was not UTF-8 is shown, as \xfe
    assert any(p.endswith("\\xfe" + FORMAT_CHARACTERS + ".manifest") for p in paths), paths


def _nested_schema(uri: str, depth: int) -> None:
    def edit(m: table_pb2.Manifest) -> None:
        for i in range(depth):
            f = m.fields.add(name=f"s{i}", id=100 + i, parent_id=-1 if i == 0 else 99 + i, nullable=True)
            leaf = i == depth - 1
            f.logical_type, f.type = ("int64", file_pb2.Field.LEAF) if leaf else ("struct", file_pb2.Field.PARENT)

    rewrite_manifest(uri, 1, edit)


def test_inspect_text_grows_linearly_with_schema_nesting(tmp_path: Path) -> None:
    sizes = {}
    for depth in (1000, 2000):
        uri = build_reference_dataset(tmp_path / str(depth))
        _nested_schema(uri, depth)
        sizes[depth] = len(run_cli("inspect", uri, "--version", "1", timeout=20).stdout)
    assert sizes[2000] < 2.2 * sizes[1000]  # quadratic indentation would make it about 4x
    assert sizes[2000] < 200 * 2000


def test_inspect_of_the_filesystem_root_names_what_is_there_quickly() -> None:
    started = time.monotonic()
    done = run_cli("inspect", "/", timeout=20)
    assert done.returncode == 2 and "holds no dataset" in done.stderr and "/proc" not in done.stderr
    assert time.monotonic() - started < 20


def test_parent_ids_in_a_cycle_are_a_finding(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path)

    def edit(m: table_pb2.Manifest) -> None:
        for i in range(3):  # three more fields whose parents go round: 100 -> 101 -> 102 -> 100
            m.fields.add(name=f"loop{i}", id=100 + i, parent_id=100 + (i + 1) % 3, logical_type="struct",
                         type=file_pb2.Field.PARENT)

    rewrite_manifest(uri, 1, edit)
    done = run_cli("certify", uri, "--all-versions", "--format", "json")
    assert done.returncode == 1
    cycles = [f for f in findings(done) if f["requirement"] == "MAN-021"]
    assert len(cycles) == 1 and "100 -> 101 -> 102 -> 100" in str(cycles[0]["message"]), findings(done)
