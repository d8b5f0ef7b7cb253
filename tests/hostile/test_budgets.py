"""Budgets per run and per element (issue 32; docs/security.md): what a dataset's own metadata asks to be
read or decoded is counted before the work it causes, and going past a limit is a finding or one line
naming the limit and its option, in seconds and under 1 GB."""

from __future__ import annotations

import os
import resource
from pathlib import Path

from conformance_kit import build_reference_dataset
from test_hostile_datasets import findings, run_cli

from lancespec.reference.codec.datafile import OFFSET_ENTRY, V2_FOOTER, V2_FOOTER_SIZE

GIB = 1 << 30


def _peak_kb() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


def _spanning(path: Path, size: int) -> None:
    """Rewrite the v2 data file at ``path`` as a sparse file of ``size`` bytes whose metadata sits at its end
    and whose global buffer 0 (the FileDescriptor) spans everything before it."""
    data = path.read_bytes()
    cms, cmo, gbo, n_buffers, n_columns, major, minor, magic = V2_FOOTER.unpack_from(data, len(data) - V2_FOOTER_SIZE)
    tail = bytearray(data[cms:])
    delta = size - len(data)
    for i in range(n_columns):  # column metadata positions move with the tail
        at = cmo - cms + OFFSET_ENTRY.size * i
        position, length = OFFSET_ENTRY.unpack_from(tail, at)
        OFFSET_ENTRY.pack_into(tail, at, position + delta, length)
    OFFSET_ENTRY.pack_into(tail, gbo - cms, 0, cmo + delta)
    V2_FOOTER.pack_into(tail, len(tail) - V2_FOOTER_SIZE, cms + delta, cmo + delta, gbo + delta, n_buffers,
                        n_columns, major, minor, magic)
    with open(path, "wb") as out:
        out.truncate(size - len(tail))
        out.seek(size - len(tail))
        out.write(tail)


def test_a_footer_spanning_a_sparse_3_gib_file_reads_no_3_gib(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path)
    target = sorted((Path(uri) / "data").glob("*.lance"))[0]
    _spanning(target, 3 * GIB)
    assert target.stat().st_size == 3 * GIB and os.stat(target).st_blocks * 512 < 10_000_000
    done = run_cli("certify", uri, "--format", "json", timeout=20)
    assert done.returncode == 1, done.stderr
    assert any("--max-object-bytes" in str(f["message"]) and f["path"] == str(target) for f in findings(done)), \
        findings(done)
    assert _peak_kb() < 1_000_000
