"""Reading blobs: the stored descriptors of a data file, then the bytes each one points at (the Blob v2 post
"Lance Blob V2"; docs/lance-format.md §14.2, §14.5-14.6).

pylance 14.0.2 records the stored descriptor's five children in the data file's own schema with field id -1
and parent -1, so ``LanceFileReader`` cannot decode a blob column on its own (the dataset layer supplies the
ids from the manifest). ``read_descriptor_columns`` therefore has the codec copy the file's tail and the
pages of the wanted columns only into a sparse temporary file (``codec.partial``), giving the children ids
in the copy's schema, and decodes that with ``LanceFileReader`` in a child process (``reference.isolated``:
a codec crash is a FormatError). ``BlobFile`` then reads blob bytes with ranged gets that fetch exactly what
was asked: inline through the data file, packed/dedicated through the sidecar next to the data file (in
whichever base holds it, so shallow clones and multi-base datasets work), external through the base or
the absolute URI (a whole-object reference stores size 0; its size is the object's).
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from ..codec.partial import copy_columns
from ..errors import BlobRangeError, BlobReadError, FormatError, ObjectNotFound, ScratchSpaceError, ValidationError
from ..isolated import decode_data_file
from ..proto import file_pb2
from ..store import Storage, open_store
from ..store.uri import join
from ..table import FragmentView, Snapshot, deleted_offsets
from .columns import LEGACY_BLOB_KEY, blob_field_ids, metadata_text
from .routing import BlobKind, sidecar_uri

DESCRIPTOR_FIELDS = ("kind", "position", "size", "blob_id", "blob_uri")
"""The stored descriptor's children, in order (what a scan returns by default)."""


class BlobDescriptor(NamedTuple):
    """One stored descriptor (the Blob v2 post "Unified Blob Type Representation"; docs/lance-format.md §14.2).
    A named tuple: a data file holds one per row, and checks read millions of them."""

    kind: int
    position: int
    size: int
    blob_id: int
    blob_uri: str


@dataclass
class FetchCounter:
    """Bytes and requests a reader fetched, split into descriptor metadata and blob payload."""

    requests: int = 0
    bytes: int = 0
    metadata_requests: int = 0
    metadata_bytes: int = 0

    def blob(self, n: int) -> None:
        self.requests += 1
        self.bytes += n

    def metadata(self, n: int) -> None:
        self.metadata_requests += 1
        self.metadata_bytes += n


def _number_descriptor_children(descriptor: file_pb2.FileDescriptor) -> bool:
    """Give the blob descriptor children of a file schema their own ids (pylance 14.0.2 writes them with
    id -1 and parent -1 right after their blob field, a struct marked ``lance-encoding:blob``). Returns
    whether anything changed."""
    fields = descriptor.schema.fields
    next_id = max((f.id for f in fields), default=-1) + 1
    parent: int | None = None
    changed = False
    for f in fields:
        if f.id == -1 and f.parent_id == -1 and parent is not None:
            f.id, f.parent_id = next_id, parent
            next_id += 1
            changed = True
        elif f.logical_type == "struct" and metadata_text(f.metadata, LEGACY_BLOB_KEY) == "true":
            parent = f.id
        else:
            parent = None
    return changed


def read_blob_data_file(storage: Storage, uri: str, file_size: int | None = None,
                        columns: Mapping[str, int] | None = None, counter: FetchCounter | None = None) -> pa.Table:
    """The columns ``{name: index in the file}`` (None: every column) of a data file that holds blob v2 columns,
    blob columns as stored descriptors, decoded from a partial copy of the file."""
    with tempfile.TemporaryDirectory(prefix="lancespec-blob-") as tmp:
        path = os.path.join(tmp, "file.lance")
        try:
            copy_columns(storage, uri, file_size, None if columns is None else sorted(set(columns.values())), path,
                         _number_descriptor_children, None if counter is None else counter.metadata)
        except ScratchSpaceError as exc:  # the machine's limit: noted, so the run stops "cannot read", no finding
            storage.note(exc)
            raise
        return decode_data_file(path, None if columns is None else list(columns), uri, limits=storage.limits)


#: Descriptor values below this are added and compared exactly as signed 64-bit integers (``DescriptorColumn``).
EXACT_BELOW = 2**62


class DescriptorColumn:
    """The stored descriptors of one blob column of one data file, one per physical row, kept as columns:
    validity, kind, position, size and blob id as numpy arrays, blob URIs as an Arrow array. ``column[row]``
    is that row's ``BlobDescriptor`` (None for a null blob), ``len`` the rows. A check screens whole columns
    (``exact``: every value lies in [0, ``EXACT_BELOW``), so sums of two are exact in int64) and looks at single
    rows only where the screen finds something to say; a column with other values is judged row by row."""

    def __init__(self, valid: np.ndarray, kind: np.ndarray, position: np.ndarray, size: np.ndarray,
                 blob_id: np.ndarray, blob_uri: pa.Array) -> None:
        self.valid, self.kind, self.position, self.size, self.blob_id = valid, kind, position, size, blob_id
        self.blob_uri = blob_uri
        numbers = (kind, position, size, blob_id)
        self.exact = all(not len(a) or (int(a.min()) >= 0 and int(a.max()) < EXACT_BELOW) for a in numbers)
        if self.exact:  # one dtype, so that sums and comparisons stay in int64
            self.kind, self.position, self.size, self.blob_id = (a.astype(np.int64) for a in numbers)

    @classmethod
    def nulls(cls, rows: int) -> DescriptorColumn:
        """A column of ``rows`` null blobs (a fragment with no data file for the column)."""
        zeros = np.zeros(rows, np.int64)
        return cls(np.zeros(rows, bool), zeros, zeros, zeros, zeros, pa.nulls(rows, pa.string()))

    @classmethod
    def from_arrow(cls, column: pa.ChunkedArray, where: str) -> DescriptorColumn:
        """The descriptors of a decoded descriptor column (a struct of ``DESCRIPTOR_FIELDS``). Kind, position,
        size and blob id must be integers, and none null in a row that is not null: otherwise a FormatError
        naming the child and the first such row."""
        struct = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        valid = struct.is_valid().to_numpy(zero_copy_only=False)
        children = struct.flatten()  # the struct's offset applied, and its nulls carried into the children
        numbers: list[np.ndarray] = []
        for name, child in zip(DESCRIPTOR_FIELDS[:4], children[:4], strict=True):
            if not pa.types.is_integer(child.type):
                raise FormatError(f"blob descriptor child {name!r} is {child.type}, not an integer", where)
            if child.null_count:
                missing = np.flatnonzero(valid & ~child.is_valid().to_numpy(zero_copy_only=False))
                if len(missing):
                    raise FormatError(f"blob descriptor of row {int(missing[0])} has a null {name!r}", where)
                child = child.fill_null(0)
            numbers.append(child.to_numpy(zero_copy_only=False))
        kind, position, size, blob_id = numbers
        return cls(valid, kind, position, size, blob_id, children[4])

    def __len__(self) -> int:
        return len(self.valid)

    def __getitem__(self, row: int) -> BlobDescriptor | None:
        if not self.valid[row]:
            return None
        uri = self.blob_uri[row].as_py()
        return BlobDescriptor(int(self.kind[row]), int(self.position[row]), int(self.size[row]),
                              int(self.blob_id[row]), str(uri or ""))

    def __iter__(self) -> Iterator[BlobDescriptor | None]:
        return (self[row] for row in range(len(self)))

    def rows(self, which: np.ndarray | None = None) -> Iterator[tuple[int, BlobDescriptor | None]]:
        """``(row, descriptor)`` of the rows ``which`` selects (a boolean mask; None: every row), in row order."""
        indices = range(len(self)) if which is None else np.flatnonzero(which).tolist()
        return ((row, self[row]) for row in indices)


def read_descriptor_columns(storage: Storage, uri: str, columns: Mapping[str, int], file_size: int | None = None,
                            counter: FetchCounter | None = None) -> dict[str, DescriptorColumn]:
    """The stored descriptors of the blob columns ``{name: column index in the file}`` of one data file,
    one entry per physical row (None for a null blob). Only the file's tail and those columns' pages are
    fetched."""
    table = read_blob_data_file(storage, uri, file_size, columns, counter)
    out: dict[str, DescriptorColumn] = {}
    for name in columns:
        column = table.column(name)
        if not pa.types.is_struct(column.type) or tuple(f.name for f in column.type) != DESCRIPTOR_FIELDS:
            raise FormatError(f"column {name!r} is {column.type}, not a blob v2 descriptor", uri)
        out[name] = DescriptorColumn.from_arrow(column, uri)
    return out


# --- reading blobs -----------------------------------------------------------------------------------


class BlobFile(io.RawIOBase):
    """A file-like view of one blob: ``read(n)``, ``readall()``, ``seek(off, whence)``, ``tell()``,
    ``size()``, ``read_range(off, len)`` and ``read_ranges``. Every read fetches exactly the bytes it
    returns with one ranged get (no read-ahead); ``read_range`` leaves the cursor where it is.

    ``uri`` is the object holding the blob and ``offset`` where the blob starts in it.
    """

    def __init__(self, storage: Storage, uri: str, offset: int, length: int, descriptor: BlobDescriptor,
                 counter: FetchCounter | None = None) -> None:
        super().__init__()
        self.storage = storage
        self.uri = uri
        self.offset = offset
        self.length = length
        self.descriptor = descriptor
        self.counter = counter
        self._pos = 0

    def __repr__(self) -> str:
        return f"<BlobFile kind={BlobKind(self.descriptor.kind).name.lower()} size={self.length} uri={self.uri!r}>"

    def _fetch(self, start: int, n: int) -> bytes:
        if n <= 0:
            return b""
        data = self.storage.get_range(self.uri, self.offset + start, n)
        if self.counter is not None:
            self.counter.blob(len(data))
        if len(data) != n:
            raise BlobReadError(f"blob bytes [{self.offset + start}, {self.offset + start + n}) lie past the end "
                                f"of the object ({len(data)} of {n} bytes read)", self.uri)
        return data

    def size(self) -> int:
        return self.length

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        origins = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.length}
        if whence not in origins:
            raise ValueError(f"Invalid whence: {whence}")
        target = origins[whence] + offset
        if target < 0:
            raise ValueError(f"negative seek value {target}")
        self._pos = target
        return target

    def read(self, size: int | None = -1) -> bytes:
        self._check_open()
        remaining = max(0, self.length - self._pos)
        data = self._fetch(self._pos, remaining if size is None or size < 0 else min(size, remaining))
        self._pos += len(data)
        return data

    def readall(self) -> bytes:
        return self.read()

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[:len(data)] = data
        return len(data)

    def read_range(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset`` of the blob; the cursor does not move."""
        self._check_open()
        if offset < 0 or length < 0:
            raise BlobRangeError(f"invalid blob range offset={offset} length={length}", self.uri)
        if offset + length > self.length:
            raise BlobRangeError(f"Blob range end {offset + length} exceeds blob size {self.length}", self.uri)
        return self._fetch(offset, length)

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        return [self.read_range(o, n) for o, n in ranges]

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed blob file")


@dataclass(frozen=True)
class BlobLocation:
    """Where a fragment's blob column lives: its data file, the column's index in it, the recorded size."""

    data_file_uri: str
    column_index: int
    file_size: int | None


class BlobReader:
    """Blob access for one snapshot: descriptors per (fragment, column), cached, and ``BlobFile``s.

    ``counter`` accumulates what was fetched: blob payload (``bytes``/``requests``) and descriptor
    metadata (``metadata_bytes``/``metadata_requests``).
    """

    def __init__(self, snapshot: Snapshot, storage: Storage | None = None,
                 counter: FetchCounter | None = None) -> None:
        self.snapshot = snapshot
        self.storage = storage if storage is not None else open_store()
        self.counter = counter if counter is not None else FetchCounter()
        self._blob_fields = {f.name: f for f in blob_field_ids(snapshot.manifest.fields).values()}
        self._bases = {b.id: b for b in snapshot.bases}
        self._fragments = {f.id: f for f in snapshot.fragments}
        self._descriptors: dict[tuple[int, str], DescriptorColumn] = {}

    def _blob_field(self, column: str) -> file_pb2.Field:
        found = self._blob_fields.get(column)
        if found is None:
            raise ValidationError(f"{column!r} is not a blob v2 column of version {self.snapshot.version}",
                                  self.snapshot.manifest_uri)
        return found

    def _fragment(self, fragment: FragmentView | int) -> FragmentView:
        if isinstance(fragment, FragmentView):
            return fragment
        found = self._fragments.get(fragment)
        if found is None:
            raise ValidationError(f"fragment {fragment} does not exist at version {self.snapshot.version}",
                                  self.snapshot.manifest_uri)
        return found

    def location(self, fragment: FragmentView | int, column: str) -> BlobLocation | None:
        """The data file holding ``column`` in ``fragment`` (None: no file does, the column reads null)."""
        field_id = self._blob_field(column).id
        view = self._fragment(fragment)
        for resolved, proto in zip(view.files, view.proto.files, strict=True):
            if field_id in proto.fields:
                if resolved.uri is None:
                    raise resolved.problem or BlobReadError("unresolvable data file", resolved.path)
                indices = list(proto.column_indices)
                position = list(proto.fields).index(field_id)
                index = indices[position] if position < len(indices) else -1  # fewer indices: MAN-008's finding
                if index < 0:
                    raise BlobReadError(f"data file records no column index for blob field {column!r}", resolved.uri)
                return BlobLocation(resolved.uri, index, proto.file_size_bytes or None)
        return None

    def descriptors(self, fragment: FragmentView | int, column: str) -> DescriptorColumn:
        """The descriptors of ``column`` for every physical row of ``fragment`` (deleted rows included)."""
        view = self._fragment(fragment)
        key = (view.id, column)
        if key not in self._descriptors:
            where = self.location(view, column)
            if where is None:
                found = DescriptorColumn.nulls(view.physical_rows)
            else:
                found = read_descriptor_columns(self.storage, where.data_file_uri, {column: where.column_index},
                                                where.file_size, self.counter)[column]
                if len(found) != view.physical_rows:
                    raise FormatError(f"data file holds {len(found)} rows, the fragment records "
                                      f"{view.physical_rows}", where.data_file_uri)
            self._descriptors[key] = found
        return self._descriptors[key]

    def resolve(self, descriptor: BlobDescriptor, data_file_uri: str) -> tuple[str, int, int]:
        """``(object URI, offset of the blob in it, blob size)`` for a descriptor of a data file."""
        kind = descriptor.kind
        if kind == BlobKind.INLINE:
            return data_file_uri, descriptor.position, descriptor.size
        if kind in (BlobKind.PACKED, BlobKind.DEDICATED):
            return sidecar_uri(data_file_uri, descriptor.blob_id), descriptor.position, descriptor.size
        if kind == BlobKind.EXTERNAL:
            if descriptor.blob_id:
                base = self._bases.get(descriptor.blob_id)
                if base is None:
                    raise BlobReadError(f"external blob names base {descriptor.blob_id}, which is not registered",
                                        self.snapshot.manifest_uri)
                uri = join(base.path, descriptor.blob_uri)
            else:
                uri = descriptor.blob_uri
            size = descriptor.size
            if size == 0 and descriptor.position == 0:  # a whole-object reference: its size is the object's
                try:
                    size = self.storage.head(uri).size
                except ObjectNotFound as exc:
                    raise BlobReadError("external blob object not found", uri) from exc
            return uri, descriptor.position, size
        raise BlobReadError(f"blob kind {kind} is not one this reader implements (0-3)", data_file_uri)

    def open(self, fragment: FragmentView | int, row: int, column: str) -> BlobFile | None:
        """The blob at physical row offset ``row`` of ``fragment`` (None for a null blob)."""
        view = self._fragment(fragment)
        if not 0 <= row < view.physical_rows:
            raise ValidationError(f"row {row} is outside fragment {view.id} ({view.physical_rows} rows)",
                                  self.snapshot.manifest_uri)
        descriptor = self.descriptors(view, column)[row]
        if descriptor is None:
            return None
        where = self.location(view, column)
        assert where is not None
        uri, offset, size = self.resolve(descriptor, where.data_file_uri)
        return BlobFile(self.storage, uri, offset, size, descriptor, self.counter)

    def take_blobs(self, column: str, indices: Sequence[int]) -> list[BlobFile | None]:
        """Blobs of ``column`` at live row positions ``indices`` of the snapshot (deleted rows skipped,
        fragments in order), as pylance's ``take_blobs(column, indices=...)``."""
        self._blob_field(column)
        spans: list[tuple[FragmentView, Sequence[int]]] = []
        for view in self.snapshot.fragments:
            deleted = set(deleted_offsets(self.storage, view))
            spans.append((view, [i for i in range(view.physical_rows) if i not in deleted] if deleted
                          else range(view.physical_rows)))
        out: list[BlobFile | None] = []
        for index in indices:
            if index < 0:
                raise ValidationError(f"row index {index} is negative", self.snapshot.manifest_uri)
            rest = index
            for view, live in spans:
                count = view.num_rows
                if rest < count:
                    out.append(self.open(view, live[rest], column))
                    break
                rest -= count
            else:
                raise ValidationError(f"row index {index} is past the {self.snapshot.num_rows} rows of version "
                                      f"{self.snapshot.version}", self.snapshot.manifest_uri)
        return out
