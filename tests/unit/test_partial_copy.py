"""The partial copy of a data file the codec decodes (``reference.codec.partial``): each byte is read at most
once, whatever the file's metadata repeats (an outside review: a global-buffer table repeating one span 300
times read 300 times 256 MiB; a page listing a million buffers read the file a million times), and a copy
that cannot be written is the machine's limit, never an exit 3."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

from reference.codec.datafile import OFFSET_ENTRY, V2_FOOTER, V2_FOOTER_SIZE
from reference.codec.partial import copy_columns, merged
from reference.errors import ScratchSpaceError
from reference.store.local import LocalStore


def test_merged_joins_overlaps_and_neighbours_and_drops_empty_ranges() -> None:
    assert merged([]) == []
    assert merged([(10, 5), (0, 4), (4, 2), (12, 10), (40, 0), (30, 1)]) == [(0, 6), (10, 22), (30, 31)]
    assert merged([(0, 100)] * 1000) == [(0, 100)]


def _repeat_global_buffer(path: Path, copies: int) -> int:
    """Append ``copies`` entries to the file's global-buffer table, each naming the whole data region."""
    data = path.read_bytes()
    cms, cmo, gbo, n_buffers, n_columns, major, minor, magic = V2_FOOTER.unpack_from(data, len(data) - V2_FOOTER_SIZE)
    table = [OFFSET_ENTRY.unpack_from(data, gbo + OFFSET_ENTRY.size * i) for i in range(n_buffers)]
    table += [(0, cms)] * copies
    body = data[:gbo] + b"".join(OFFSET_ENTRY.pack(p, n) for p, n in table)
    path.write_bytes(body + V2_FOOTER.pack(cms, cmo, len(data[:gbo]), len(table), n_columns, major, minor, magic))
    return cms


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    lance.write_dataset(pa.table({"id": list(range(1000)), "text": [f"row {i}" * 10 for i in range(1000)]}),
                        str(tmp_path / "ds"), data_storage_version="2.1")
    (found,) = (tmp_path / "ds" / "data").iterdir()
    return found


def test_a_span_the_metadata_repeats_is_read_once(data_file: Path, tmp_path: Path) -> None:
    region = _repeat_global_buffer(data_file, 300)
    reads: list[int] = []
    copy_columns(LocalStore(), str(data_file), None, [0], str(tmp_path / "copy.lance"), lambda d: False,
                 reads.append)
    assert sum(reads) <= data_file.stat().st_size  # at most the file once (it was 300 times the data region)
    assert sum(reads) >= region  # the region itself was read


def test_a_copy_that_cannot_be_written_is_the_machines_limit(data_file: Path, tmp_path: Path) -> None:
    with pytest.raises(ScratchSpaceError, match="temporary space"):
        copy_columns(LocalStore(), str(data_file), None, [0], str(tmp_path / "no" / "copy.lance"), lambda d: False)
