"""Divergences of pylance 14.0.2 from the seed documents (spec/findings.md). Each test asserts the
divergent behaviour, so it keeps failing loudly the day pylance changes and the finding must be
revisited. Never bend a check to make pylance pass: record it here instead."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from reference.table import Dataset

pytestmark = pytest.mark.interop


def test_f001_inline_transaction_offset_is_field_23(tmp_path: Path) -> None:
    """Table Format spec "Manifest": transaction_section is field 21; pylance 14.0.2 writes field 23 instead."""
    lance.write_dataset(pa.table({"a": [1]}), tmp_path / "ds")
    manifest = Dataset.open(str(tmp_path / "ds")).snapshot().manifest
    assert manifest.HasField("transaction_section")  # field 23
    assert not manifest.HasField("transaction_section_deprecated")  # field 21


def test_f002_arrow_deletion_files_hold_uint32(tmp_path: Path) -> None:
    """Table Format spec "Deletion Files": a flat Int32Array; pylance 14.0.2 writes (and requires) UInt32."""
    ds = lance.write_dataset(pa.table({"a": list(range(10))}), tmp_path / "ds")
    ds.delete("a < 3")
    (deletion,) = (tmp_path / "ds" / "_deletions").iterdir()
    schema = ipc.open_file(pa.OSFile(str(deletion))).schema
    assert schema.field(0).type == pa.uint32()


def test_f003_shallow_clone_registers_source_not_own_root(tmp_path: Path) -> None:
    """Storage Layout spec "Shallow Clone" example: id 0 is the clone's own root and the source base is named after
    the tag (``name: "v1.0"``). pylance 14.0.2 registers only the source, with id 0 and no name, and
    the clone's own files carry no base_id."""
    src = lance.write_dataset(pa.table({"a": [1, 2]}), tmp_path / "src")
    src.tags.create("v1.0", 1)
    clone = src.shallow_clone(str(tmp_path / "clone"), "v1.0")
    lance.write_dataset(pa.table({"a": [3]}), clone, mode="append")
    snap = Dataset.open(str(tmp_path / "clone")).snapshot()
    assert [(b.id, b.name, b.is_dataset_root) for b in snap.bases] == [(0, None, True)]
    assert snap.bases[0].path.rstrip("/").endswith("src")
    inherited, appended = snap.fragments
    assert inherited.files[0].base_id == 0
    assert appended.files[0].base_id is None


def test_f004_field_type_is_always_parent(tmp_path: Path) -> None:
    """Table Format spec "Field": Type is PARENT for structs, REPEATED for lists, LEAF otherwise. pylance 14.0.2
    writes 0 (PARENT) for every field, leaves included."""
    schema = pa.schema([("i", pa.int64()), ("st", pa.struct([("x", pa.int32())])), ("l", pa.list_(pa.int8()))])
    lance.write_dataset(pa.table({"i": [1], "st": [{"x": 1}], "l": [[1]]}, schema=schema), tmp_path / "ds")
    fields = Dataset.open(str(tmp_path / "ds")).snapshot().manifest.fields
    assert {f.name: f.type for f in fields} == {"i": 0, "st": 0, "x": 0, "l": 0, "item": 0}


def test_f005_logical_types_outside_the_seed_list(tmp_path: Path) -> None:
    """Table Format spec "Field" lists ``time:{unit}`` and ``timestamp:{unit}`` and no fixed-size types. pylance
    14.0.2 writes ``time64:ns``, ``timestamp:us:-`` (with a timezone part) and
    ``fixed_size_list:float:2``."""
    table = pa.table({
        "t": pa.array([1], pa.time64("ns")),
        "ts": pa.array([1], pa.timestamp("us")),
        "v": pa.array([[1.0, 2.0]], pa.list_(pa.float32(), 2)),
    })
    lance.write_dataset(table, tmp_path / "ds")
    fields = Dataset.open(str(tmp_path / "ds")).snapshot().manifest.fields
    assert [f.logical_type for f in fields] == ["time64:ns", "timestamp:us:-", "fixed_size_list:float:2"]


def test_f006_non_ascii_tag_breaks_tag_listing(tmp_path: Path) -> None:
    """pylance 14.0.2 accepts the tag name 'é' and writes ``_refs/tags/%C3%A9.json``, after which
    ``tags.list()`` fails for the whole dataset (it looks for the name escaped twice). The tag itself
    still resolves. (The seeds set no tag-name rules; the reference refuses non-ASCII tag names.)"""
    ds = lance.write_dataset(pa.table({"a": [1]}), tmp_path / "ds")
    ds.tags.create("é", 1)
    assert (tmp_path / "ds" / "_refs" / "tags" / "%C3%A9.json").exists()
    assert ds.tags.get_version("é") == 1
    with pytest.raises(ValueError, match="Not found"):
        lance.dataset(tmp_path / "ds").tags.list()
    # lancespec lists it.
    assert set(Dataset.open(str(tmp_path / "ds")).tags()) == {"é"}


def test_f032_a_deletion_file_in_a_non_root_base_is_refused(tmp_path: Path) -> None:
    """Storage Layout Specification, two-step resolution: a file with a non-root base's id resolves
    directly under that base, deletion files included. pylance 14.0.2 refuses to read such a dataset."""
    from conformance_kit import rewrite_manifest

    base = tmp_path / "plain"
    base.mkdir()
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": list(range(10))}), uri, initial_bases=[lance.DatasetBasePath(str(base),
                                                                                                     name="plain")])
    lance.dataset(uri).delete("a < 3")
    (deletion,) = (tmp_path / "ds" / "_deletions").iterdir()
    deletion.rename(base / deletion.name)
    version = lance.dataset(uri).version
    rewrite_manifest(uri, version, lambda m: setattr(m.fragments[0].deletion_file, "base_id", 1))
    with pytest.raises(Exception, match=r"(?i)dataset root"):
        lance.dataset(uri).to_table()


def test_f040_a_field_added_after_a_drop_takes_the_dropped_id(tmp_path: Path) -> None:
    """Table Format spec "Schema & Fields": field ids are assigned incrementally for newly added fields.
    pylance 14.0.2 numbers a new field from the highest id the schema or a data file of the current version
    holds: once drop_columns removed x's data files, z gets x's id 1. While a data file still holds the
    dropped id (the dropped column shared a file with a kept one), the next field gets a new id."""
    from conformance_kit import certify_findings

    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": pa.array(range(4), pa.int64())}), uri)
    lance.dataset(uri).add_columns({"x": "id * 2"})
    lance.dataset(uri).drop_columns(["x"])
    lance.dataset(uri).add_columns({"z": "id * 3"})
    ids = {f.name: f.id for f in Dataset.open(uri).snapshot().manifest.fields}
    assert ids == {"id": 0, "z": 1}
    assert {f.name: f.id for f in Dataset.open(uri).snapshot(2).manifest.fields} == {"id": 0, "x": 1}
    found = [f for f in certify_findings(uri) if f.severity == "MUST"]
    assert [(f.requirement, f.version, f.known) for f in found] == [("MAN-016", 4, "F-040")]

    shared = str(tmp_path / "shared")
    lance.write_dataset(pa.table({"id": pa.array(range(4), pa.int64()), "g": pa.array(range(4), pa.int64())}),
                        shared)
    lance.dataset(shared).drop_columns(["g"])
    lance.dataset(shared).add_columns({"z": "id * 3"})
    assert {f.name: f.id for f in Dataset.open(shared).snapshot().manifest.fields} == {"id": 0, "z": 2}
    assert not [f for f in certify_findings(shared) if f.severity == "MUST"]
