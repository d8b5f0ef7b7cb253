"""``files._read_all``'s shortcut for data files written alike (``_Alike``) against finding each file on its own
(``_found_data_file``): on pylance-written one-row files, then on copies with a byte changed in the footer, the
global-buffer offset table, the FileDescriptor or the data, and on copies cut short, every file's state is the
one it has when found alone."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.checks import files
from conformance.fetch import RunStorage
from reference.codec.datafile import OFFSET_ENTRY, V2_FOOTER_SIZE, TailedObject, descriptor_span, read_footer
from reference.store import LocalStore

lance = pytest.importorskip("lance", reason="pylance writes the data files")


def _written(tmp_path: Path, rows: int) -> list[Path]:
    table = pa.table({"id": pa.array(range(rows), pa.int64()), "name": [f"n{i}" for i in range(rows)]})
    lance.write_dataset(table, str(tmp_path / "ds"), max_rows_per_file=1)
    found = sorted((tmp_path / "ds" / "data").glob("*.lance"))
    assert len(found) == rows
    return found


def _states_alone(paths: list[Path]) -> list[object]:
    storage = LocalStore()
    return [files._found_data_file(storage, p.as_uri(), storage.get_tail(p.as_uri(), files.TAIL_READ))
            for p in paths]


def _states_in_batch(paths: list[Path]) -> list[object]:
    storage = RunStorage()
    uris = [p.as_uri() for p in paths]
    files._read_all(storage, uris)
    states = files._states(storage)
    return [states[uri] for uri in uris]


def test_files_written_alike_share_one_state(tmp_path: Path) -> None:
    paths = _written(tmp_path, 20)
    alone = _states_alone(paths)
    assert _states_in_batch(paths) == alone
    assert alone[0].rows == 1 and alone[0].problem is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", range(8))
def test_damaged_copies_are_found_as_alone(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    paths = _written(tmp_path, 24)
    storage = LocalStore()
    first = paths[0].as_uri()
    obj = TailedObject(storage, first, storage.get_tail(first, files.TAIL_READ))
    footer = read_footer(obj)
    position, length = descriptor_span(obj, footer)
    assert footer.gbo_table_pos is not None
    size = obj.size
    places = {"footer": (size - V2_FOOTER_SIZE, size), "entry": (footer.gbo_table_pos,
                                                                  footer.gbo_table_pos + OFFSET_ENTRY.size),
              "descriptor": (position, position + length), "anywhere": (0, size)}
    damaged = 0
    for path in paths[2:]:  # the first two stay whole, so that the batch knows their kind first
        data = bytearray(path.read_bytes())
        if len(data) != size:
            continue
        how = rng.choice([*places, "cut", "whole"])
        if how == "cut":
            data = data[: rng.randrange(len(data))]
        elif how != "whole":
            at = rng.randrange(*places[how])
            data[at] = (data[at] + rng.randrange(1, 256)) % 256
        damaged += how != "whole"
        path.write_bytes(bytes(data))
    assert damaged >= 10
    alone = _states_alone(paths)
    assert len({(s.rows, s.problem) for s in alone}) > 1  # type: ignore[attr-defined]  # some damage is seen
    assert _states_in_batch(paths) == alone
