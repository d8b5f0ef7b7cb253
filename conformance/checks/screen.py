"""Vectorised screens over a snapshot's fragment columns (``reference.codec.fragment_columns``): which fragments
a per-fragment rule could find something in, so that the rule itself runs, unchanged, on those alone.

A screen may flag a fragment the rule then finds nothing in; it never misses one the rule would flag (each
screen below states the superset it computes). Fragments the columnar decoder marked irregular are always
flagged, and a snapshot without columns (or with fragments given as a plain tuple) gets every fragment: the
rule alone decides what is reported, so a check's findings are the same with and without the columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from reference.codec import FragmentColumns
from reference.plain_fragments import every_standard_name
from reference.proto import table_pb2
from reference.table import FragmentView, FragmentViews, Snapshot

Bools = npt.NDArray[np.bool_]
#: A screen: per fragment of the whole manifest, whether the rule could find something in it.
Screen = Callable[[FragmentColumns], Bools]


def columns_of(snapshot: Snapshot) -> FragmentColumns | None:
    """The snapshot's fragment columns, None where its fragments are not a ``FragmentViews`` with columns."""
    fragments = snapshot.fragments
    return fragments.columns if isinstance(fragments, FragmentViews) else None


def suspects(snapshot: Snapshot, screen: Screen) -> Sequence[FragmentView]:
    """The fragments of ``snapshot`` that ``screen`` or the decoder's ``irregular`` flags (all of them
    without columns), in order."""
    fragments = snapshot.fragments
    columns = columns_of(snapshot)
    if columns is None or not isinstance(fragments, FragmentViews):
        return fragments
    flagged = screen(columns) | columns.irregular
    positions = fragments.positions
    chosen = (flagged[positions.start:positions.stop] if isinstance(positions, range)
              else flagged[np.asarray(positions, np.int64)])
    return fragments.subset(np.flatnonzero(chosen).tolist())


def fragments_of_files(columns: FragmentColumns, files: Bools) -> Bools:
    """Per fragment, whether any of its data files is flagged in ``files``."""
    out = np.zeros(columns.count, np.bool_)
    out[columns.file_fragment[files]] = True
    return out


def files_with(columns: FragmentColumns, owner: npt.NDArray[np.int64], hits: Bools) -> Bools:
    """Per data file, whether any entry owned by it (``owner``: an entry's data file) is flagged in ``hits``."""
    out = np.zeros(columns.file_count, np.bool_)
    out[owner[hits]] = True
    return out


def repeated_within(owner: npt.NDArray[np.int64], values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The owners under which some value occurs twice or more (values are int32)."""
    if owner.size < 2:
        return np.zeros(0, np.int64)
    keys = np.sort((owner << 32) | (values + 2**31))
    return np.unique(keys[1:][keys[1:] == keys[:-1]] >> 32)


def decreasing_within(owner: npt.NDArray[np.int64], values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The owners whose values (in order) ever decrease."""
    down = (values[1:] < values[:-1]) & (owner[1:] == owner[:-1])
    owners: npt.NDArray[np.int64] = owner[1:][down]
    return owners


def nonstandard_names(columns: FragmentColumns) -> Bools:
    """The fragments with a data file whose path is not a standard data file name, as its bytes read
    (``reference.plain_fragments.standard_names``): a standard name is relative, stays in its directory and is
    well formed, so only the others can draw a finding about a path."""
    return fragments_of_files(columns, ~every_standard_name(columns))


def with_base_ids(columns: FragmentColumns) -> Bools:
    """The fragments with a data file or a deletion file that records a base_id."""
    return fragments_of_files(columns, columns.has_base) | columns.deletion_has_base


def exact_ids(columns: FragmentColumns, manifest: table_pb2.Manifest) -> npt.NDArray[np.uint64]:
    """Every fragment's id, as protobuf reads it: the column, with irregular fragments' ids from the message."""
    ids = columns.id
    irregular = np.flatnonzero(columns.irregular)
    if irregular.size:
        ids = ids.copy()
        ids[irregular] = [manifest.fragments[int(i)].id for i in irregular]
    return ids


def any_fragment(columns: FragmentColumns, manifest: table_pb2.Manifest, column: Bools,
                 rule: Callable[[table_pb2.DataFragment], bool]) -> bool:
    """Whether any fragment has ``column`` set, the irregular ones judged by ``rule`` on the message."""
    if bool(np.any(column & ~columns.irregular)):
        return True
    return any(rule(manifest.fragments[int(i)]) for i in np.flatnonzero(columns.irregular))


__all__ = ["Screen", "any_fragment", "columns_of", "decreasing_within", "exact_ids", "files_with",
           "fragments_of_files", "nonstandard_names", "repeated_within", "suspects", "with_base_ids"]
