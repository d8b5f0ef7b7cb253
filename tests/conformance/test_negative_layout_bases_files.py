"""Negative tests of the layout, bases, files and portability checks: every test builds a clean dataset
with the reference writer (asserted free of MUST findings), changes exactly one thing on storage, and
asserts that certify reports the requirement that thing breaches and, for a MUST, that no unrelated MUST
requirement fires. A last test certifies every pylance shape and expects none of these requirements
(BASE-005 and DEL-005 have their own tests in test_negative_history_and_ids.py).
The breaches that are cases of the golden corpus (conformance/corpus/breach_*.py) are tested there, by
tests/fixtures/test_breach_cases.py; what stays here is what those cases do not show (variants, messages,
what must NOT be reported).
"""

from __future__ import annotations

import os
import shutil
import struct
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from conformance_kit import (
    PLAIN_BASE,
    assert_only,
    assert_reported,
    build_reference_dataset,
    certify_findings,
    latest_version,
    manifest_uri,
    rewrite_manifest,
    rows,
    snapshot,
)
from pyroaring import BitMap

from conformance.findings import Finding
from reference import clone as clone_ops
from reference import ops, refs
from reference.layout import VERSIONS_DIR
from reference.proto import table_pb2
from reference.table import Dataset, DeletionView, ResolvedFile

Build = Callable[..., str]

#: The requirements the checks under test own (CLONE-001 is shared with clones.lineage).
OWNED = {
    "LAYOUT-001", "LAYOUT-002", "LAYOUT-003", "LAYOUT-004", "LAYOUT-005",
    "BASE-001", "BASE-002", "BASE-003", "BASE-004", "BASE-005", "BASE-006", "BASE-007", "BASE-008",
    "CLONE-001", "MAN-004", "DEL-001", "DEL-002", "DEL-003", "DEL-004", "DEL-005", "PORT-001", "PORT-002",
}


# --- helpers ---------------------------------------------------------------------------------------------


def _data_file(uri: str, fragment_index: int = 0) -> ResolvedFile:
    resolved = snapshot(uri).fragments[fragment_index].files[0]
    assert resolved.uri is not None
    return resolved


def _deletion(uri: str) -> DeletionView:
    found = [f.deletion for f in snapshot(uri).fragments if f.deletion is not None]
    assert found, "the dataset has no deletion file"
    return found[0]


def _base_id(uri: str, name: str) -> int:
    return next(b.id for b in snapshot(uri).bases if b.name == name)


def _latest(uri: str, edit: Callable[[table_pb2.Manifest], None]) -> None:
    rewrite_manifest(uri, latest_version(uri), edit)


def _add_base(path: str, base_id: int = 9, *, is_dataset_root: bool = False,
              name: str | None = None) -> Callable[[table_pb2.Manifest], None]:
    def edit(m: table_pb2.Manifest) -> None:
        base = m.base_paths.add(id=base_id, path=path, is_dataset_root=is_dataset_root)
        if name is not None:
            base.name = name

    return edit


def _arrow_bytes(values: list[int | None] | list[str], type_: pa.DataType | None = None, *, batches: int = 1,
                 extra_column: bool = False) -> bytes:
    """An .arrow deletion file; ``row_id`` is declared non-null, as the readers want, unless it holds a null."""
    column = pa.array(values, type_ or pa.uint32())
    fields = [pa.field("row_id", column.type, nullable=column.null_count > 0)]
    arrays = [column]
    if extra_column:
        fields.append(pa.field("other", pa.int64()))
        arrays.append(pa.array([0] * len(values), pa.int64()))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        for _ in range(batches):
            writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _add_index(section: table_pb2.IndexSection, *, base_id: int | None = None,
               path: str = "page_data.lance") -> None:
    index = section.indices.add(name="idx", fields=[0], dataset_version=1)
    index.uuid.uuid = uuid.uuid4().bytes
    if base_id is not None:
        index.base_id = base_id
    index.files.add(path=path, size_bytes=10)


def _requirements(findings: list[Finding]) -> set[str]:
    return {f.requirement for f in findings}


# --- LAYOUT ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["junk.manifest", "99999999999999999999.manifest", "d5.manifest"])
def test_layout001_names_in_versions_that_are_no_manifest_name(clean_dataset: Build, name: str) -> None:
    uri = clean_dataset()
    shutil.copy(manifest_uri(uri, 1), Path(uri, VERSIONS_DIR, name))
    found = assert_only(certify_findings(uri), "LAYOUT-001")
    assert all(f.path.endswith(name) for f in found)


def test_layout001_non_canonical_v1_name(clean_dataset: Build) -> None:
    uri = clean_dataset(v1_names=True)
    shutil.copy(Path(uri, VERSIONS_DIR, "1.manifest"), Path(uri, VERSIONS_DIR, "01.manifest"))
    assert_only(certify_findings(uri), "LAYOUT-001")


def test_layout001_other_files_in_versions_are_not_judged(clean_dataset: Build) -> None:
    uri = clean_dataset()
    Path(uri, VERSIONS_DIR, "notes.txt").write_text("not a version")
    Path(uri, VERSIONS_DIR, ".tmp-staging").write_bytes(b"half written")
    assert not {"LAYOUT-001", "LAYOUT-005"} & _requirements(certify_findings(uri))


def _rename_transaction(uri: str, make_name: Callable[[str], str]) -> None:
    version = latest_version(uri)
    old = snapshot(uri, version).manifest.transaction_file
    new = make_name(old)
    shutil.copy(Path(uri, "_transactions", old), Path(uri, "_transactions", new))
    rewrite_manifest(uri, version, lambda m: setattr(m, "transaction_file", new))


def test_layout004_transaction_file_names_another_read_version(clean_dataset: Build) -> None:
    uri = clean_dataset()
    _rename_transaction(uri, lambda old: "7" + old[old.index("-"):])
    assert_only(certify_findings(uri), "LAYOUT-004")


@pytest.mark.parametrize("stray", ["notes.txt", "extra/x.bin"])
def test_layout005_stray_entries_at_the_root(clean_dataset: Build, stray: str) -> None:
    uri = clean_dataset()
    target = Path(uri, stray)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"stray")
    found = assert_only(certify_findings(uri), "LAYOUT-005")
    assert [f.path for f in found] == [str(Path(uri, stray.split("/")[0]))]


# --- BASE ------------------------------------------------------------------------------------------------


def test_base002_used_base_made_relative(clean_dataset: Build) -> None:
    uri = clean_dataset(bases=True)
    plain = _base_id(uri, PLAIN_BASE)

    def relative(m: table_pb2.Manifest) -> None:
        next(b for b in m.base_paths if b.id == plain).path = PLAIN_BASE

    _latest(uri, relative)
    assert_only(certify_findings(uri), "BASE-002")


def test_base003_index_base_id_names_no_base(clean_dataset: Build) -> None:
    uri = clean_dataset(bases=True)
    rewrite_manifest(uri, latest_version(uri), lambda _m: None,
                     edit_indices=lambda s: _add_index(s, base_id=42))
    found = assert_only(certify_findings(uri), "BASE-003")
    assert "index" in found[0].path


def _delete(path: str) -> None:
    os.remove(path)


def _truncate(path: str) -> None:
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:-100])


def _bad_magic(path: str) -> None:
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:-4] + b"XXXX")


def _footer_version(path: str) -> None:
    data = bytearray(Path(path).read_bytes())
    struct.pack_into("<H", data, len(data) - 6, 1)  # minor 2 -> 1: a 2.1 footer for a 2.2 DataFile
    Path(path).write_bytes(bytes(data))


def _bad_tables(path: str) -> None:
    data = bytearray(Path(path).read_bytes())
    gbo = struct.unpack_from("<Q", data, len(data) - 24)[0]
    struct.pack_into("<Q", data, len(data) - 24, gbo + 16)  # the buffer table no longer ends at the footer
    Path(path).write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_delete, _truncate, _bad_magic, _footer_version, _bad_tables],
                         ids=["missing", "size", "magic", "footer-version", "offset-tables"])
@pytest.mark.parametrize("fragment", [0, 1, 2], ids=["root", "plain-base", "rootlike-base"])
def test_base004_data_file(clean_dataset: Build, damage: Callable[[str], None], fragment: int) -> None:
    uri = clean_dataset(bases=True)
    target = _data_file(uri, fragment)
    assert target.uri is not None
    damage(target.uri)
    found = assert_only(certify_findings(uri), "BASE-004")
    assert all(target.path in f.path for f in found)


def test_clone_own_data_file_missing_is_base004(clean_dataset: Build) -> None:
    uri = clean_dataset(clone=True)
    own = snapshot(uri).fragments[-1].files[0]
    assert own.base_id is None
    os.remove(own.uri or "")
    assert_only(certify_findings(uri), "BASE-004")


@pytest.mark.parametrize("where", ["inside-base", "same-as-base", "contains-root"])
def test_base007_overlapping_bases(clean_dataset: Build, tmp_path: Path, where: str) -> None:
    uri = clean_dataset(bases=True)
    path = {"inside-base": str(tmp_path / PLAIN_BASE / "sub"), "same-as-base": str(tmp_path / PLAIN_BASE),
            "contains-root": str(tmp_path)}[where]
    _latest(uri, _add_base(path))
    found = assert_only(certify_findings(uri), "BASE-007")
    assert all("base 9" in f.message for f in found)


def test_base008_dataset_root_base_not_laid_out_as_a_root(clean_dataset: Build) -> None:
    uri = clean_dataset(bases=True)
    assert "BASE-008" not in _requirements(certify_findings(uri))  # a data-only dataset-root base is fine
    plain = _base_id(uri, PLAIN_BASE)

    def declare_root(m: table_pb2.Manifest) -> None:
        next(b for b in m.base_paths if b.id == plain).is_dataset_root = True

    _latest(uri, declare_root)
    # Its files now resolve into {base}/data/, where nothing is: BASE-004 (MUST) fires as well.
    found = assert_reported(certify_findings(uri), "BASE-008")
    assert "data/" in found[0].message


def test_branches_and_clones_of_branches_overlap_nothing(tmp_path: Path) -> None:
    """A branch registers the main root (which contains it) as base 0; nested branches and clones of a
    branch register roots inside one another through tree/: the format's layout, no finding."""
    uri = build_reference_dataset(tmp_path, bases=True, deletions=("arrow",), tags=True, branch=True)
    main = Dataset(uri)
    team = refs.create_branch(main, "team")
    nested = refs.create_branch(team, "team/x")
    ops.append(nested, rows(500, 2))
    from_branch = clone_ops.shallow_clone(nested, nested.latest_version(), str(tmp_path / "clone-of-branch"))
    for root in (uri, from_branch.uri):
        found = certify_findings(root)
        assert not {"BASE-007", "BASE-008", "PORT-002", "LAYOUT-005"} & _requirements(found), found
        assert not [f for f in found if f.severity == "MUST"], found


# --- MAN-004 ---------------------------------------------------------------------------------------------


def test_man004_row_count_unreadable(clean_dataset: Build) -> None:
    uri = clean_dataset()
    target = _data_file(uri, 1).uri or ""
    data = bytearray(Path(target).read_bytes())
    gbo = struct.unpack_from("<Q", data, len(data) - 24)[0]
    struct.pack_into("<Q", data, gbo, len(data))  # global buffer 0 now starts past the end
    Path(target).write_bytes(bytes(data))
    found = assert_only(certify_findings(uri), "MAN-004")
    assert "cannot be read" in found[0].message


# --- DEL -------------------------------------------------------------------------------------------------


_GARBAGE = b"\x00not a deletion file\xff" * 3


@pytest.mark.parametrize("content", [
    pytest.param(lambda: bytes(BitMap([0, 1]).serialize()), id="bitmap-in-arrow"),
    pytest.param(lambda: _GARBAGE, id="garbage"),
    pytest.param(lambda: _arrow_bytes([1, 2], pa.uint32(), batches=2), id="two-batches"),
    pytest.param(lambda: _arrow_bytes([1, 2], extra_column=True), id="two-columns"),
    pytest.param(lambda: _arrow_bytes([1, None], pa.uint32()), id="nulls"),
    pytest.param(lambda: _arrow_bytes(["1", "2"], pa.string()), id="strings"),
])
def test_del002_arrow_content_not_of_its_type(clean_dataset: Build, content: Callable[[], bytes]) -> None:
    uri = clean_dataset(deletions=("arrow",))
    Path(_deletion(uri).file.uri or "").write_bytes(content())
    assert_only(certify_findings(uri), "DEL-002")


def test_del002_unknown_deletion_file_type(clean_dataset: Build) -> None:
    uri = clean_dataset(deletions=("arrow",))
    _latest(uri, lambda m: setattr(m.fragments[0].deletion_file, "file_type", 7))
    found = assert_only(certify_findings(uri), "DEL-002")
    assert "type 7" in found[0].message


def test_del003_extra_offset_in_the_file(clean_dataset: Build) -> None:
    uri = clean_dataset(deletions=("arrow",))
    Path(_deletion(uri).file.uri or "").write_bytes(_arrow_bytes([1, 2, 3]))
    found = assert_only(certify_findings(uri), "DEL-003")
    assert "3 distinct offsets" in found[0].message


def test_del004_offset_out_of_range_in_a_bitmap(clean_dataset: Build) -> None:
    uri = clean_dataset(deletions=("bin",))
    deletion = _deletion(uri)
    offsets = [*range(4999), 1_000_000]
    Path(deletion.file.uri or "").write_bytes(bytes(BitMap(offsets).serialize()))
    assert_only(certify_findings(uri), "DEL-004")


# --- PORT ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["absolute", "file-uri"])
def test_port001_absolute_data_file_path(clean_dataset: Build, form: str) -> None:
    uri = clean_dataset()
    absolute = _data_file(uri).uri or ""
    recorded = absolute if form == "absolute" else "file://" + absolute
    _latest(uri, lambda m: setattr(m.fragments[0].files[0], "path", recorded))
    found = assert_only(certify_findings(uri), "PORT-001")
    assert recorded in found[0].message


@pytest.mark.parametrize("is_dataset_root", [False, True])
@pytest.mark.parametrize("where", ["the-root", "inside-the-root"])
def test_port002_base_names_the_own_root(clean_dataset: Build, where: str, is_dataset_root: bool) -> None:
    uri = clean_dataset(bases=True)
    path = uri if where == "the-root" else str(Path(uri, "extra"))
    _latest(uri, _add_base(path, is_dataset_root=is_dataset_root))
    findings = certify_findings(uri)
    assert_only(findings, "PORT-002")
    assert_reported(findings, "BASE-007")  # the same base also overlaps the root


# --- pylance datasets --------------------------------------------------------------------------------------


@pytest.mark.interop
def test_pylance_shapes_breach_none_of_these_requirements(tmp_path: Path) -> None:
    """Every dataset shape pylance writes (multi-base, clones, nested branches, clones of branches,
    deletion files, indices, blobs) passes these checks, DEL-005 included: its `row_id: uint32` is what the
    readers accept."""
    from conformance.shapes import SHAPES

    for name, builder in sorted(SHAPES.items()):
        workdir = tmp_path / name
        workdir.mkdir()
        shape = builder(workdir)
        for root in shape.roots:
            if not Dataset(root).version_entries(allow_mixed=True):
                continue  # a base, not a dataset
            found = [f for f in certify_findings(root) if f.requirement in OWNED]
            assert not found, f"{name} {root}: {found}"
