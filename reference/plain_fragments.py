"""The plain fragments of a snapshot, read from its fragment columns without a Python object per fragment.

A fragment is *plain* when the columnar decoder read it regularly (``FragmentColumns.irregular`` unset) and
each of its data files records no ``base_id`` and a path that is a standard data file name (50 characters of
24 binary then 26 lowercase hex digits, then ``.lance``; Storage Layout spec "Data Files"). Such a file resolves,
with no problem, to ``{root}/data/{path}`` (Storage Layout spec "Base Path System": no base id, the dataset
root's standard subdirectory), exactly as ``Snapshot``'s resolution would make it; its recorded size is
``file_size_bytes`` (None when 0). Readers that walk every data file of a large version (the file checks, the
evidence of an incremental run) take the plain fragments from here, as arrays and one list of URIs, and resolve
the other fragments one by one as before. pylance writes only plain fragments unless a base path or a
deletion file is involved (a deletion file does not make a fragment less plain: it is not a data file).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .codec import FragmentColumns
from .layout import FileKind, base_directory
from .table import FragmentViews, Snapshot

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

#: Length of a standard data file name: a 50-character stem and ``.lance``.
_NAME_LENGTH = 56
_SUFFIX = np.frombuffer(b".lance", np.uint8)
#: Names checked at once (the byte matrix of a chunk is its files x 56 bytes, its index 8 times that).
_CHUNK = 1 << 16


@dataclass(frozen=True)
class PlainFragments:
    """The plain fragments of one snapshot's fragment sequence (``Snapshot.fragments``) and their data files.

    ``fragments``: their positions in the sequence, ascending. Per data file of theirs, in fragment order and
    then in the fragment's own order: ``files``, its index in the columns' per-file arrays; ``owners``, the
    position in the sequence of its fragment; ``uris``, what it resolves to. ``others``: the positions in the
    sequence of the fragments that are not plain, ascending."""

    columns: FragmentColumns
    fragments: I64
    files: I64
    owners: I64
    uris: list[str]
    others: I64


def standard_names(columns: FragmentColumns, files: I64) -> Bools:
    """Per data file in ``files`` (indices into the columns' per-file arrays): whether its path is a standard
    data file name, judged on the path's bytes in the manifest (every such name is ASCII, so it reads the same
    decoded)."""
    out: Bools = columns.path_length[files] == _NAME_LENGTH
    candidates = np.flatnonzero(out)
    buf = np.frombuffer(columns.section, np.uint8)
    offsets = np.arange(_NAME_LENGTH, dtype=np.int64)
    for at in range(0, candidates.size, _CHUNK):
        chosen = candidates[at:at + _CHUNK]
        name = buf[columns.path_start[files[chosen]][:, None] + offsets]
        stem_bits, stem_hex = name[:, :24], name[:, 24:50]
        ok = ((stem_bits == 0x30) | (stem_bits == 0x31)).all(axis=1)
        ok &= (((stem_hex >= 0x30) & (stem_hex <= 0x39)) | ((stem_hex >= 0x61) & (stem_hex <= 0x66))).all(axis=1)
        ok &= (name[:, 50:] == _SUFFIX).all(axis=1)
        out[chosen] = ok
    return out


_EVERY: dict[int, Bools] = {}  # id() of live FragmentColumns -> standard_names of every data file of theirs


def every_standard_name(columns: FragmentColumns) -> Bools:
    """``standard_names`` of every data file of ``columns`` (their per-file order), worked out once per columns:
    the plain fragments and the path screens of the checks of a version share it."""
    key = id(columns)
    found = _EVERY.get(key)
    if found is None:
        found = _EVERY[key] = standard_names(columns, np.arange(columns.file_count, dtype=np.int64))
        weakref.finalize(columns, _EVERY.pop, key, None)
    return found


def _uris(directory: str, columns: FragmentColumns, files: I64) -> list[str]:
    """``{directory}/{path}`` of each of ``files``, interned (a listing of the directory, whose walk interns its
    URIs too, shares these strings), a chunk at a time."""
    ascii = directory.isascii()  # else a row's bytes are not its characters: the directory joined a file at a time
    uris: list[str] = []
    for chunk in _prefixed(f"{directory}/" if ascii else "", columns, files):
        uris += map(sys.intern, chunk if ascii else [f"{directory}/{name}" for name in chunk])
    return uris


def _prefixed(head: str, columns: FragmentColumns, files: I64) -> Iterator[list[str]]:
    """``head`` (ASCII) and the path of each of ``files``, each path a standard data file name (56 ASCII bytes):
    made a chunk of files at a time as rows of bytes, decoded at once and cut into strings."""
    start = np.frombuffer(head.encode("ascii"), np.uint8)
    width = start.size + _NAME_LENGTH
    buf = np.frombuffer(columns.section, np.uint8)
    offsets = np.arange(_NAME_LENGTH, dtype=np.int64)
    for at in range(0, files.size, _CHUNK):
        chosen = files[at:at + _CHUNK]
        rows = np.empty((chosen.size, width), np.uint8)
        rows[:, :start.size] = start
        rows[:, start.size:] = buf[columns.path_start[chosen][:, None] + offsets]
        text = rows.tobytes().decode("ascii")
        yield [text[i:i + width] for i in range(0, len(text), width)]


_FOUND: weakref.WeakKeyDictionary[FragmentViews, PlainFragments] = weakref.WeakKeyDictionary()


def plain_fragments(snapshot: Snapshot) -> PlainFragments | None:
    """The plain fragments of ``snapshot`` (worked out once per fragment sequence), or None where its fragments
    were not decoded as columns (a small manifest, or fragments a test built as a tuple)."""
    fragments = snapshot.fragments
    columns = fragments.columns if isinstance(fragments, FragmentViews) else None
    if columns is None or not isinstance(fragments, FragmentViews):
        return None
    found = _FOUND.get(fragments)
    if found is not None:
        return found
    chosen = _positions(snapshot)
    starts = columns.file_offsets[chosen]
    counts = columns.file_offsets[chosen + 1] - starts
    total = int(counts.sum())
    owners = np.repeat(np.arange(chosen.size, dtype=np.int64), counts)
    files = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total, dtype=np.int64)
    plain_file = ~columns.has_base[files] & every_standard_name(columns)[files]
    not_plain = columns.irregular[chosen].copy()
    not_plain[owners[~plain_file]] = True
    kept = ~not_plain[owners]
    files, owners = files[kept], owners[kept]
    directory = base_directory(snapshot.root, {}, None, FileKind.DATA)
    found = PlainFragments(columns, np.flatnonzero(~not_plain), files, owners, _uris(directory, columns, files),
                           np.flatnonzero(not_plain))
    _FOUND[fragments] = found
    return found


def file_uris(snapshot: Snapshot) -> Iterator[str]:
    """The URI of every file of ``snapshot`` that resolves, in ``Snapshot.files``' order (each fragment's data
    files, then its deletion file; the index files last); a version of plain fragments without deletion files
    is answered from the columns alone."""
    plain = plain_fragments(snapshot)
    if plain is None or plain.others.size or plain.columns.has_deletion[_positions(snapshot)].any():
        yield from (f.uri for f in snapshot.files() if f.uri is not None)
        return
    yield from plain.uris
    yield from (f.uri for f in snapshot.index_files if f.uri is not None)


def _positions(snapshot: Snapshot) -> I64:
    """The positions in the manifest of the snapshot's fragments (a ``FragmentViews``)."""
    fragments = snapshot.fragments
    assert isinstance(fragments, FragmentViews)
    positions = fragments.positions
    return (np.arange(positions.start, positions.stop, dtype=np.int64) if isinstance(positions, range)
            else np.asarray(positions, np.int64))


__all__ = ["PlainFragments", "every_standard_name", "file_uris", "plain_fragments", "standard_names"]
