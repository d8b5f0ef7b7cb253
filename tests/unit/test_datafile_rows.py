"""``read_row_count``: a v2 data file's row count from its FileDescriptor (global buffer 0), found through
the footer's global-buffer offset table without decoding columns (docs/lance-format.md §5.2). Files are
written with pylance's ``lance.file.LanceFileWriter``, the codec the reference writer uses."""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pytest
from lance.file import LanceFileWriter

from reference.codec.datafile import read_row_count
from reference.errors import FormatError, ObjectNotFound, UnsupportedFeatureError
from reference.store import open_store

pytestmark = pytest.mark.interop


def _write(path: Path, rows: int, version: str = "2.2") -> str:
    table = pa.table({"id": pa.array(range(rows), pa.int64()), "name": [f"n{i}" for i in range(rows)]})
    writer = LanceFileWriter(str(path), table.schema, version=version)
    if rows:
        writer.write_batch(table)
    writer.close()
    return str(path)


def _count(uri: str) -> int:
    return read_row_count(open_store(), uri, Path(uri).stat().st_size)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("rows", [0, 1, 1234])
def test_row_count_of_written_files(tmp_path: Path, version: str, rows: int) -> None:
    assert _count(_write(tmp_path / "f.lance", rows, version)) == rows


def _patch(uri: str, offset_from_end: int | None, fmt: str, value: int, at: int | None = None) -> None:
    data = bytearray(Path(uri).read_bytes())
    position = at if at is not None else len(data) - (offset_from_end or 0)
    struct.pack_into(fmt, data, position, value)
    Path(uri).write_bytes(bytes(data))


def _gbo(uri: str) -> int:
    data = Path(uri).read_bytes()
    return int(struct.unpack_from("<Q", data, len(data) - 24)[0])


def test_buffer_entry_past_the_tables_is_refused(tmp_path: Path) -> None:
    uri = _write(tmp_path / "f.lance", 10)
    _patch(uri, None, "<Q", Path(uri).stat().st_size, at=_gbo(uri))  # position: the end of the file
    with pytest.raises(FormatError, match="global buffer 0"):
        _count(uri)


def test_empty_buffer_is_refused(tmp_path: Path) -> None:
    uri = _write(tmp_path / "f.lance", 10)
    _patch(uri, None, "<Q", 0, at=_gbo(uri) + 8)  # size 0
    with pytest.raises(FormatError, match="global buffer 0"):
        _count(uri)


def test_buffer_pointing_at_other_bytes_is_refused(tmp_path: Path) -> None:
    uri = _write(tmp_path / "f.lance", 10)
    _patch(uri, None, "<Q", 0, at=_gbo(uri))  # position 0: column data, not a FileDescriptor
    with pytest.raises(FormatError):
        _count(uri)


def test_no_global_buffer_is_refused(tmp_path: Path) -> None:
    uri = _write(tmp_path / "f.lance", 10)
    data = bytearray(Path(uri).read_bytes())
    cms, cmo, gbo, n_buffers, n_columns = struct.unpack_from("<QQQII", data, len(data) - 40)
    # Drop the buffer table: the column table now ends where the footer begins.
    trimmed = data[:gbo] + data[gbo + 16 * n_buffers:]
    struct.pack_into("<QQQII", trimmed, len(trimmed) - 40, cms, cmo, len(trimmed) - 40, 0, n_columns)
    Path(uri).write_bytes(bytes(trimmed))
    with pytest.raises(FormatError, match="no global buffer"):
        _count(uri)


def test_bad_footer_is_refused(tmp_path: Path) -> None:
    uri = _write(tmp_path / "f.lance", 10)
    data = Path(uri).read_bytes()
    Path(uri).write_bytes(data[:-4] + b"XXXX")
    with pytest.raises(FormatError, match="LANC"):
        _count(uri)


def test_too_short_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.lance"
    path.write_bytes(b"LANC")
    with pytest.raises(FormatError):
        _count(str(path))


def test_legacy_file_has_no_file_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "legacy.lance"
    path.write_bytes(b"\x00" * 32 + struct.pack("<QHH4s", 8, 0, 2, b"LANC"))
    with pytest.raises(UnsupportedFeatureError):
        _count(str(path))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ObjectNotFound):
        read_row_count(open_store(), str(tmp_path / "absent.lance"), 100)
