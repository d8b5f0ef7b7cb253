"""Checks of blob v2 columns (catalogue area BLOB; Blob v2 post "Lance Blob V2"; docs/lance-format.md §14, §17.10).

The version checks read the stored descriptors of every data file that holds a blob column, with the
reference's reader (``reference.blob``: the file's tail and that column's pages only), once per
certify run. A version whose schema has no blob column costs nothing. The dataset check lists the root's
``data/`` directory for sidecars whose data file no attached version references, or whose id no
descriptor of their (live) data file references; it reads manifests and descriptors only when ``data/``
holds a ``.blob`` file.

An external blob's object is asked about once per certify run with one HEAD (answered from a listing
already made when there is one), never read: its existence and size are all BLOB-004 needs. The reads are
declared (``prefetch``), so certify makes them for every file at once before the checks run.
"""

from __future__ import annotations

import functools
import threading
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from reference.blob.columns import blob_field_ids
from reference.blob.read import (
    BlobDescriptor,
    BlobLocation,
    BlobReader,
    DescriptorColumn,
    read_descriptor_columns,
)
from reference.blob.routing import MANAGED_KINDS, BlobKind, Thresholds, route, sidecar_uri, thresholds_of
from reference.codec import decode_manifest_file
from reference.errors import LanceSpecError, ObjectNotFound
from reference.layout import DATA_DIR, Base, branch_root, path_escape, reversed_blob_id
from reference.proto import file_pb2
from reference.store import Storage
from reference.store.base import ObjectInfo
from reference.store.uri import is_absolute, join, relative_to
from reference.table import Dataset

from . import DatasetContext, Prefetch, VersionContext, dataset_check, version_check
from .bases import run_cached

MANAGED_BLOB_FLAG = 16384
"""Feature flag of pylance's opt-in managed blobs (kind 4), set in both words (docs/lance-format.md §15)."""

_SHOWN = 5


def _rows(rows: list[int]) -> str:
    shown = ", ".join(map(str, rows[:_SHOWN]))
    return f"row {shown}" if len(rows) == 1 else f"rows {shown}{' …' if len(rows) > _SHOWN else ''}"


@dataclass
class _File:
    """One data file's descriptors of one blob column."""

    uri: str
    size: int | None
    field: file_pb2.Field
    descriptors: DescriptorColumn


def _blob_locations(ctx: VersionContext) -> Iterator[tuple[file_pb2.Field, BlobLocation]]:
    """Every (blob column, data file holding it) of the version, without reading anything. Data files
    that cannot be resolved are left to the file checks."""
    snap = ctx.snap
    fields = blob_field_ids(snap.manifest.fields)
    if not fields:
        return
    reader = BlobReader(snap, ctx.storage)
    for fragment in snap.fragments:
        for field in fields.values():
            try:
                where = reader.location(fragment, field.name)
            except LanceSpecError:
                continue  # unresolvable data file: the file checks report it
            if where is not None:
                yield field, where


def _descriptors_of(storage: Storage, field: file_pb2.Field, where: BlobLocation) -> DescriptorColumn:
    """The descriptors of one blob column of one data file, read once per run (a partial read of the file)."""

    def read() -> DescriptorColumn:
        return read_descriptor_columns(storage, where.data_file_uri, {field.name: where.column_index},
                                       where.file_size)[field.name]

    return run_cached(storage, ("blob-descriptors", where.data_file_uri, str(where.column_index)), read)


def _blob_files(ctx: VersionContext, requirement: str) -> Iterator[_File]:
    """Every (data file, blob column) of the version with its descriptors. Data files that cannot be
    resolved or do not exist are left to the file checks; descriptors that cannot be decoded are
    reported as ``requirement``."""
    for field, where in _blob_locations(ctx):
        try:
            found = _descriptors_of(ctx.storage, field, where)
        except ObjectNotFound:
            continue  # a missing data file: the file checks report it
        except LanceSpecError as exc:
            ctx.finding(requirement, where.data_file_uri,
                        f"the descriptors of blob column {field.name!r} cannot be decoded: {exc.message}",
                        code="descriptors_undecodable")
            continue
        yield _File(where.data_file_uri, where.file_size, field, found)


def _object_size(ctx: VersionContext, uri: str) -> int | None:
    def head() -> int | None:
        try:
            return ctx.storage.head(uri).size
        except ObjectNotFound:
            return None

    return run_cached(ctx.storage, ("blob-head", uri), head)


#: What one HEAD of an external blob's object answered: its size, ``ABSENT``, or ``UNKNOWN`` (the store
#: could not be asked: an unsupported scheme, no permission, a network fault; nothing can be judged).
ABSENT = "absent"
UNKNOWN = "unknown"
_HEAD_LOCK = threading.Lock()


def external_uri(descriptor: BlobDescriptor, bases: dict[int, Base]) -> str | None:
    """The URI an external descriptor names (``base path / blob_uri`` for a non-zero blob_id, the stored
    absolute URI for id 0), or None when it names none that may be followed: an unregistered or
    dataset-root base, a path that is not relative to its base or could leave it (BLOB-004 reports those)."""
    if not descriptor.blob_id:
        return descriptor.blob_uri if is_absolute(descriptor.blob_uri) else None
    base = bases.get(descriptor.blob_id)
    uri = descriptor.blob_uri
    if (base is None or base.is_dataset_root or not uri or is_absolute(uri) or "://" in uri
            or path_escape(uri) is not None):
        return None
    return join(base.path, uri)


def external_object_size(storage: Storage, uri: str) -> int | str:
    """The size of the object at ``uri`` from one HEAD, remembered for the run; ``ABSENT`` or ``UNKNOWN``.
    Concurrent callers for one URI wait for the first one's answer, so each object is asked about once."""

    def head() -> int | str:
        try:
            return storage.head(uri).size
        except ObjectNotFound:
            return ABSENT
        except LanceSpecError:
            return UNKNOWN

    with _HEAD_LOCK:
        lock = run_cached(storage, ("blob-external-lock", uri), threading.Lock)
    with lock:
        return run_cached(storage, ("blob-external-head", uri), head)


def _external_reads(ctx: VersionContext) -> Iterator[Prefetch]:
    """Per blob column of each data file: its descriptors (one partial read of the file), then one HEAD per
    external object they name that no other job asked about."""
    bases = {b.id: b for b in ctx.snap.bases}
    storage = ctx.storage

    def job(field: file_pb2.Field, where: BlobLocation) -> None:
        found = _descriptors_of(storage, field, where)
        for _, d in found.rows(found.valid & (found.kind == BlobKind.EXTERNAL)):
            if d is not None:
                uri = external_uri(d, bases)
                if uri is not None:
                    external_object_size(storage, uri)

    for field, where in _blob_locations(ctx):
        yield ("blob-externals", where.data_file_uri, str(where.column_index)), functools.partial(job, field, where)


_INT64_MAX = 2**63 - 1


def _rows_to_judge(ctx: VersionContext, file: _File, data_size: int | None) -> np.ndarray | None:
    """The rows of ``file`` that ``descriptors`` must look at one by one (a mask; None: every row): all but
    those the column screen shows fine, an inline blob inside its data file or a packed or dedicated one
    with a valid id inside its sidecar (each sidecar asked about once). A column whose values could overflow
    a 64-bit sum (``DescriptorColumn.exact``) is judged row by row."""
    column = file.descriptors
    if not column.exact:
        return None
    end = column.position + column.size
    fine = (column.kind == BlobKind.INLINE) & (True if data_size is None else end <= min(data_size, _INT64_MAX))
    sided = (((column.kind == BlobKind.PACKED) | (column.kind == BlobKind.DEDICATED)) & column.valid
             & (column.blob_id > 0) & (column.blob_id < 2**32))
    ids = np.unique(column.blob_id[sided])
    if len(ids):
        sizes = np.array([_sidecar_size(ctx, file.uri, blob_id) for blob_id in ids.tolist()], np.int64)
        at = np.searchsorted(ids, column.blob_id[sided])
        fine[sided] = end[sided] <= sizes[at]  # an absent sidecar is -1: every row of it is looked at
    judged: np.ndarray = column.valid & ~fine
    return judged


def _sidecar_size(ctx: VersionContext, data_file_uri: str, blob_id: int) -> int:
    """The size of the sidecar ``blob_id`` of a data file, -1 when it does not exist."""
    size = _object_size(ctx, sidecar_uri(data_file_uri, blob_id))
    return -1 if size is None else min(size, _INT64_MAX)


def _pack_members(column: DescriptorColumn) -> dict[int, tuple[int, int]]:
    """``{sidecar id: (packed blobs in it, the end of the last one)}`` of an exact column's packed rows."""
    packed = column.valid & (column.kind == BlobKind.PACKED)
    ids, ends = column.blob_id[packed], (column.position + column.size)[packed]
    if not len(ids):
        return {}
    order = np.argsort(ids, kind="stable")
    ids, ends = ids[order], ends[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    counts = np.diff(np.r_[starts, len(ids)])
    return {int(i): (int(c), int(e)) for i, c, e in
            zip(ids[starts].tolist(), counts.tolist(), np.maximum.reduceat(ends, starts).tolist(), strict=True)}


@version_check("blobs.descriptors", "BLOB-001", "BLOB-002", "BLOB-003", "BLOB-004", prefetch=_external_reads,
               fragment_local=True)
def descriptors(ctx: VersionContext) -> None:
    """Kinds are 0-3 (4 only with the managed-blob flag) (BLOB-001); inline ranges lie inside their data
    file (BLOB-002); packed and dedicated blobs lie inside a sidecar that exists at the reversed-binary
    path next to their data file (BLOB-003); external blobs with a base id name a registered non-root
    base and a relative path that stays in it, those with id 0 an absolute URI, and the object named
    exists and holds [position, position + size) (position 0 and size 0: the whole object) (BLOB-004).
    An object the store cannot be asked about (an unsupported scheme, no permission) is not judged."""
    manifest = ctx.snap.manifest
    managed_allowed = bool(manifest.reader_feature_flags & manifest.writer_feature_flags & MANAGED_BLOB_FLAG)
    bases = {b.id: b for b in ctx.snap.bases}
    for file in _blob_files(ctx, "BLOB-001"):
        problems: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)
        data_size = file.size or _object_size(ctx, file.uri)
        for row, d in file.descriptors.rows(_rows_to_judge(ctx, file, data_size)):
            if d is None:
                continue
            if d.kind == BlobKind.INLINE:
                if data_size is not None and d.position + d.size > data_size:
                    problems[("BLOB-002", file.uri, f"inline blob [{d.position}, {d.position + d.size}) lies "
                              f"past the end of the {data_size}-byte data file", "inline_blob_past_end")].append(row)
            elif d.kind in (BlobKind.PACKED, BlobKind.DEDICATED):
                if not 0 < d.blob_id < 2**32:
                    problems[("BLOB-003", file.uri, f"{BlobKind(d.kind).name.lower()} blob has sidecar id "
                              f"{d.blob_id}; sidecar ids start at 1", "sidecar_id_invalid")].append(row)
                    continue
                sidecar = sidecar_uri(file.uri, d.blob_id)
                size = _object_size(ctx, sidecar)
                if size is None:
                    problems[("BLOB-003", sidecar, f"the sidecar of blob id {d.blob_id} does not exist",
                              "sidecar_missing")].append(row)
                elif d.position + d.size > size:
                    problems[("BLOB-003", sidecar, f"blob [{d.position}, {d.position + d.size}) lies past the end "
                              f"of the {size}-byte sidecar", "blob_past_sidecar_end")].append(row)
            elif d.kind == BlobKind.EXTERNAL:
                if d.blob_id:
                    base = bases.get(d.blob_id)
                    if base is None:
                        problems[("BLOB-004", file.uri, f"external blob names base {d.blob_id}, which the "
                                  "manifest does not register", "external_base_unregistered")].append(row)
                    elif base.is_dataset_root:
                        problems[("BLOB-004", file.uri, f"external blob names base {d.blob_id}, a dataset root; "
                                  "external blobs are relative to non-root bases", "external_base_is_root")].append(row)
                    if not d.blob_uri or is_absolute(d.blob_uri) or "://" in d.blob_uri:
                        problems[("BLOB-004", file.uri, f"external blob of base {d.blob_id} stores "
                                  f"{d.blob_uri!r}, not a path relative to the base",
                                  "external_path_not_relative")].append(row)
                    elif d.blob_uri and path_escape(d.blob_uri) is not None:
                        problems[("BLOB-004", file.uri, f"external blob of base {d.blob_id} stores {d.blob_uri!r}, "
                                  f"which {path_escape(d.blob_uri)} (it is not followed)",
                                  "external_path_escapes")].append(row)
                elif not is_absolute(d.blob_uri):
                    problems[("BLOB-004", file.uri, f"external blob outside every base (blob_id 0) stores "
                              f"{d.blob_uri!r}, not an absolute URI", "external_uri_not_absolute")].append(row)
                target = external_uri(d, bases)
                if target is not None:
                    problem = _external_problem(ctx.storage, target, d)
                    if problem is not None:
                        problems[("BLOB-004", target, problem[0], problem[1])].append(row)
            elif not (d.kind == BlobKind.MANAGED and managed_allowed):
                problems[("BLOB-001", file.uri, f"blob kind {d.kind} is not one the format defines (0 inline, "
                          "1 packed, 2 dedicated, 3 external)", "blob_kind_unknown")].append(row)
        for (requirement, path, message, code), rows in problems.items():
            ctx.finding(requirement, path, f"column {file.field.name!r} {_rows(rows)}: {message}", code=code)


def _external_problem(storage: Storage, uri: str, d: BlobDescriptor) -> tuple[str, str] | None:
    """What is wrong with the object an external descriptor names, and its code: it does not exist, or the
    range lies past its end; None when it holds the range or cannot be asked about."""
    size = external_object_size(storage, uri)
    if size == ABSENT:
        return "the external object does not exist", "external_object_missing"
    if isinstance(size, int) and (d.position or d.size) and d.position + d.size > size:
        return (f"external blob [{d.position}, {d.position + d.size}) lies past the end of the {size}-byte object",
                "external_range_past_end")
    return None


@version_check("blobs.routing", "BLOB-005", "BLOB-006", fragment_local=True)
def routing(ctx: VersionContext) -> None:
    """Managed blobs sit in the kind their size and the field's thresholds call for (BLOB-005); a pack
    sidecar holding more than one blob is no larger than the pack threshold (BLOB-006)."""
    for file in _blob_files(ctx, "BLOB-005"):
        try:
            thresholds = thresholds_of(file.field)
        except LanceSpecError as exc:
            ctx.finding("BLOB-005", ctx.snap.manifest_uri, f"blob column {file.field.name!r}: {exc.message}",
                        code="thresholds_invalid")
            thresholds = Thresholds()
        wrong: dict[tuple[int, BlobKind], list[int]] = defaultdict(list)
        column = file.descriptors
        if column.exact:  # the screen: only rows stored in another kind than their size calls for are looked at
            managed = column.valid & np.isin(column.kind, [int(k) for k in MANAGED_KINDS])
            dedicated, inline = min(thresholds.dedicated, _INT64_MAX), min(thresholds.inline, _INT64_MAX)
            expected = np.where(column.size > dedicated, int(BlobKind.DEDICATED),
                                np.where(column.size > inline, int(BlobKind.PACKED), int(BlobKind.INLINE)))
            for row, d in column.rows(managed & (column.kind != expected)):
                assert d is not None
                wrong[(d.kind, route(d.size, thresholds))].append(row)
            members = _pack_members(column)
        else:  # values a 64-bit sum could not hold exactly: each row as it is
            found: dict[int, list[BlobDescriptor]] = defaultdict(list)
            for row, d in column.rows():
                if d is None or d.kind not in MANAGED_KINDS:
                    continue
                expected_kind = route(d.size, thresholds)
                if d.kind != expected_kind:
                    wrong[(d.kind, expected_kind)].append(row)
                if d.kind == BlobKind.PACKED:
                    found[d.blob_id].append(d)
            members = {blob_id: (len(ds), max(d.position + d.size for d in ds)) for blob_id, ds in found.items()}
        for (kind, should), rows in wrong.items():
            ctx.finding("BLOB-005", file.uri,
                        f"column {file.field.name!r} {_rows(rows)}: stored {BlobKind(kind).name.lower()}, but its "
                        f"size calls for {should.name.lower()} (inline <= {thresholds.inline} B, dedicated > "
                        f"{thresholds.dedicated} B)", code="blob_kind_for_size")
        for blob_id, (count, end) in sorted(members.items()):
            if count < 2:
                continue
            sidecar = sidecar_uri(file.uri, blob_id)
            size = _object_size(ctx, sidecar) or end
            if size > thresholds.pack_file:
                ctx.finding("BLOB-006", sidecar, f"pack sidecar of {count} blobs is {size} bytes, above the "
                            f"pack threshold of {thresholds.pack_file} bytes")


def _referenced_data_files(ctx: DatasetContext) -> dict[str, dict[str, int]] | None:
    """Data-file paths (as recorded) of every attached version of this root and of every branch, each with
    its blob columns ``{name: column index}`` (from the first manifest met that references it); None when
    some manifest cannot be read (then nothing can be called an orphan)."""
    dataset = ctx.dataset
    roots = [dataset]
    main = dataset.main()
    try:
        for name in sorted(main.branches()):
            branch = Dataset(branch_root(main.uri, name), dataset.storage)
            if branch.uri != dataset.uri:
                roots.append(branch)
    except LanceSpecError:
        return None
    referenced: dict[str, dict[str, int]] = {}
    for root in roots:
        try:
            entries = root.version_entries(allow_mixed=True)
        except LanceSpecError:
            return None
        for entry in entries:
            snapshot = ctx.snapshots.get(entry.version) if root is dataset else None
            try:
                manifest = (snapshot.manifest if snapshot is not None
                            else decode_manifest_file(dataset.storage.get(entry.uri), entry.uri,
                                                  dataset.storage.limits).manifest)
            except LanceSpecError:
                return None
            blob_fields = blob_field_ids(manifest.fields)
            for fragment in manifest.fragments:
                for df in fragment.files:
                    if df.path not in referenced:
                        referenced[df.path] = {blob_fields[fid].name: df.column_indices[i]
                                               for i, fid in enumerate(df.fields)
                                               if fid in blob_fields and i < len(df.column_indices)}
    return referenced


def _referenced_ids(ctx: DatasetContext, data_file: str, columns: dict[str, int]) -> set[int] | None:
    """The sidecar ids the descriptors of a live data file reference (None when they cannot be read:
    ``blobs.descriptors`` reports that)."""
    ids: set[int] = set()
    for name, index in columns.items():

        def read(column: str = name, at: int = index) -> DescriptorColumn:
            return read_descriptor_columns(ctx.storage, data_file, {column: at})[column]

        try:
            found = run_cached(ctx.storage, ("blob-descriptors", data_file, str(index)), read)
        except LanceSpecError:
            return None
        sided = found.valid & ((found.kind == BlobKind.PACKED) | (found.kind == BlobKind.DEDICATED))
        ids.update(int(i) for i in np.unique(found.blob_id[sided]).tolist())
    return ids


@dataset_check("blobs.orphans", "BLOB-007")
def orphans(ctx: DatasetContext) -> None:
    """Every ``.blob`` file under the root's ``data/`` is a sidecar ``data/{stem}/{reversed id}.blob`` of a
    data file ``{stem}.lance`` that some attached version (of the root or of a branch) references, and
    some descriptor of that data file references its id (BLOB-007). Registered bases are never listed
    (cleanup never lists them either)."""
    data_dir = join(ctx.dataset.uri, DATA_DIR)
    sidecars: list[ObjectInfo] = [i for i in ctx.storage.list(data_dir) if i.uri.endswith(".blob")]
    if not sidecars:
        return
    referenced = _referenced_data_files(ctx)
    if referenced is None:
        return
    orphaned: dict[tuple[str, str], list[str]] = defaultdict(list)
    live: dict[str, list[str]] = defaultdict(list)
    for info in sidecars:
        relative = relative_to(info.uri, data_dir) or info.uri
        parts = relative.split("/")
        if len(parts) != 2:
            orphaned[(join(data_dir, *parts[:-1]), "it is not in a data file's sidecar directory")].append(parts[-1])
        elif f"{parts[0]}.lance" not in referenced:
            orphaned[(join(data_dir, parts[0]), f"no attached version references {parts[0]}.lance")].append(
                parts[1])
        else:
            live[parts[0]].append(parts[1])
    for stem, names in sorted(live.items()):
        ids = _referenced_ids(ctx, join(data_dir, f"{stem}.lance"), referenced[f"{stem}.lance"])
        if ids is None:
            continue
        wanted = {f"{reversed_blob_id(i)}.blob" for i in ids}
        stray = [n for n in names if n not in wanted]
        if stray:
            orphaned[(join(data_dir, stem), f"no descriptor of the live data file {stem}.lance references "
                      "them")] += stray
    for (directory, reason), names in sorted(orphaned.items()):
        ctx.finding("BLOB-007", directory, f"{len(names)} sidecar(s) orphaned ({', '.join(sorted(names)[:_SHOWN])}"
                    f"{' …' if len(names) > _SHOWN else ''}): {reason}")


#: The first data_format version whose files hold blob v2 columns (the Blob v2 post, "A Unified Experience").
BLOB_V2_FORMAT = (2, 2)


def _format_version(text: str) -> tuple[int, int] | None:
    major, _, minor = text.partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


@version_check("blobs.format_version", "BLOB-010")
def format_version(ctx: VersionContext) -> None:
    """A schema with a blob v2 column declares data_format 2.2 or later (BLOB-010): earlier file versions
    have no blob v2 encoding. A version text that is not major.minor is certify's "cannot judge" or
    MAN-009's, not this check's."""
    declared = ctx.snap.manifest.data_format.version
    version = _format_version(declared)
    blobs = blob_field_ids(ctx.snap.manifest.fields)
    if blobs and version is not None and version < BLOB_V2_FORMAT:
        names = ", ".join(repr(f.name) for f in blobs.values())
        ctx.finding("BLOB-010", ctx.snap.manifest_uri,
                    f"blob v2 column(s) {names} in a dataset whose data_format is {declared}, below 2.2")
