"""Checks of one manifest's own content: fragment ids, version, schema, data-file fields, data format,
feature flags, writer version (catalogue area MAN)."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from reference import flags as feature_flags
from reference.codec import FragmentColumns
from reference.codec.datafile import FOOTER_VERSION_FOR
from reference.layout import parse_manifest_name
from reference.proto import file_pb2

from . import VersionContext, version_check
from .screen import (
    Bools,
    any_fragment,
    columns_of,
    decreasing_within,
    exact_ids,
    files_with,
    fragments_of_files,
    repeated_within,
    suspects,
)

TOMBSTONE = -2


@version_check("manifest.fragment_ids", "MAN-001", "MAN-002", "DEL-006")
def fragment_ids(ctx: VersionContext) -> None:
    """Fragment ids unique (MAN-001); max_fragment_id covers them and is present when any exists
    (MAN-002); no fragment kept with every row deleted (DEL-006)."""
    manifest, where = ctx.snap.manifest, ctx.snap.manifest_uri
    columns = columns_of(ctx.snap)
    if columns is None:
        counts = Counter(f.id for f in manifest.fragments)
        repeated = sorted((i, n) for i, n in counts.items() if n > 1)
        highest = max(counts, default=0)
    else:
        ids, times = np.unique(exact_ids(columns, manifest), return_counts=True)
        repeated = [(int(i), int(n)) for i, n in zip(ids[times > 1], times[times > 1], strict=True)]
        highest = int(ids[-1]) if ids.size else 0
    for fragment_id, n in repeated:
        ctx.finding("MAN-001", where, f"fragment id {fragment_id} is used by {n} fragments",
                    f"fragment {fragment_id}")
    if manifest.fragments:
        if not manifest.HasField("max_fragment_id"):
            ctx.finding("MAN-002", where, f"max_fragment_id is absent but fragment {highest} exists",
                        code="max_fragment_id_absent")
        elif manifest.max_fragment_id < highest:
            ctx.finding("MAN-002", where, f"max_fragment_id is {manifest.max_fragment_id}, below fragment id {highest}",
                        code="max_fragment_id_below")
    # screen: a deletion file whose count reaches the physical rows
    for fragment in suspects(ctx.snap, lambda c: c.has_deletion & (c.physical_rows > 0)
                             & (c.deleted_rows >= c.physical_rows)):
        if fragment.deletion is not None and fragment.physical_rows and fragment.num_rows <= 0:
            ctx.finding("DEL-006", where, f"fragment {fragment.id} has all {fragment.physical_rows} rows deleted "
                        "but is still listed", f"fragment {fragment.id}")


@version_check("manifest.version_matches_name", "MAN-003")
def version_matches_name(ctx: VersionContext) -> None:
    """The version inside the manifest equals the one its file name encodes (MAN-003)."""
    parsed = parse_manifest_name(ctx.snap.manifest_uri.rsplit("/", 1)[-1])
    inside = ctx.snap.manifest.version
    if parsed is not None and parsed.version != inside:
        ctx.finding("MAN-003", ctx.snap.manifest_uri,
                    f"manifest records version {inside}, its name says {parsed.version}")


_SIMPLE_TYPES = {
    "null", "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "halffloat",
    "float", "double", "string", "large_string", "binary", "large_binary", "date32:day", "date64:ms",
    "struct", "list", "large_list", "list.struct", "large_list.struct",
}
_UNIT = "(s|ms|us|ns)"
_PATTERNS = [
    re.compile(r"^decimal:(128|256):\d+:\d+$"),
    re.compile(rf"^(time|time32|time64|duration):{_UNIT}$"),
    re.compile(rf"^timestamp:{_UNIT}(:.+)?$"),
    re.compile(r"^fixed_size_binary:\d+$"),
    re.compile(r"^fixed_size_list:.+:\d+$"),
    re.compile(r"^dict:.+:.+:(false|true)$"),
]


def known_logical_type(text: str) -> bool:
    """Whether ``text`` is a logical type of the format (seed list plus the spellings readers parse)."""
    return text in _SIMPLE_TYPES or any(p.match(text) for p in _PATTERNS)


def _expected_type(field: file_pb2.Field) -> int:
    if field.logical_type == "struct":
        return int(file_pb2.Field.PARENT)
    if field.logical_type.split(".")[0] in ("list", "large_list"):
        return int(file_pb2.Field.REPEATED)
    return int(file_pb2.Field.LEAF)


def parent_cycles(fields: list[file_pb2.Field]) -> list[list[int]]:
    """The cycles of parent ids among ``fields`` (each as its field ids, from the smallest), in time linear
    in the fields: following parent_id from a field must end at -1 (or at an id that is no field, MAN-005's)."""
    parent = {f.id: f.parent_id for f in fields}
    state: dict[int, int] = {}  # 1: on the path being followed, 2: known to end
    cycles = []
    for start in parent:
        path = []
        node = start
        while node in parent and state.get(node) is None:
            state[node] = 1
            path.append(node)
            node = parent[node]
        if state.get(node) == 1:  # came back to the path just followed
            loop = path[path.index(node):]
            turn = loop.index(min(loop))
            cycles.append(loop[turn:] + loop[:turn])
        for visited in path:
            state[visited] = 2
    return cycles


@version_check("manifest.schema", "MAN-005", "MAN-013", "MAN-014", "MAN-021")
def schema(ctx: VersionContext) -> None:
    """Unique field ids, parents that exist (MAN-005); Field.type matching the logical type (MAN-013);
    known logical types (MAN-014); parent ids that lead to a top-level field, never round in a cycle
    (MAN-021)."""
    fields, where = list(ctx.snap.manifest.fields), ctx.snap.manifest_uri
    for cycle in parent_cycles(fields)[:10]:
        shown = " -> ".join(str(i) for i in cycle[:8]) + (" -> ..." if len(cycle) > 8 else "")
        ctx.finding("MAN-021", where, f"the parent ids of {len(cycle)} field(s) form a cycle: {shown} -> "
                    f"{cycle[0]}; none of them reaches a top-level field", f"field {cycle[0]}", code="parent_cycle")
    ids = Counter(f.id for f in fields)
    for field_id, n in sorted(ids.items()):
        if n > 1:
            ctx.finding("MAN-005", where, f"field id {field_id} is used by {n} fields", f"field {field_id}",
                        code="field_id_duplicate")
    mistyped = []
    for field in fields:
        if field.parent_id != -1 and field.parent_id not in ids:
            ctx.finding("MAN-005", where, f"field {field.name!r} (id {field.id}) has parent_id {field.parent_id}, "
                        "which is no field", f"field {field.id}", code="parent_id_unknown")
        if not known_logical_type(field.logical_type):
            ctx.finding("MAN-014", where, f"field {field.name!r} has unknown logical type {field.logical_type!r}",
                        f"field {field.id}")
        if field.type != _expected_type(field):
            mistyped.append(field.name)
    if not mistyped:
        return
    shown = f"{', '.join(mistyped[:5])}{' …' if len(mistyped) > 5 else ''}"
    if all(f.type == file_pb2.Field.PARENT for f in fields):
        ctx.finding("MAN-013", where, f"Field.type is PARENT (0) for every field, {len(mistyped)} of which are no "
                    f"struct: {shown}", code="field_type_all_parent")
    else:
        ctx.finding("MAN-013", where, f"Field.type does not match the logical type for {len(mistyped)} field(s): "
                    f"{shown}", code="field_type_mismatch")


@version_check("manifest.fragment_files", "MAN-019", fragment_local=True)
def fragment_files(ctx: VersionContext) -> None:
    """Every fragment has at least one data file (MAN-019)."""
    for fragment in suspects(ctx.snap, lambda c: c.files_per_fragment() == 0):
        if not fragment.files:
            ctx.finding("MAN-019", ctx.snap.manifest_uri,
                        f"fragment {fragment.id} has no data file ({fragment.physical_rows} physical rows)",
                        f"fragment {fragment.id}")


@version_check("manifest.data_file_fields", "MAN-006", "MAN-007", "MAN-008", fragment_local=True)
def data_file_fields(ctx: VersionContext) -> None:
    """No data file stores the placeholder -1 or another negative id but the tombstone -2 (MAN-006; ids of
    fields the schema no longer has, such as dropped columns, are legal); field ids disjoint within a
    fragment (MAN-007); column_indices one per field, no duplicates but -1, and a legacy file with none
    and its ids sorted (MAN-008)."""
    manifest = ctx.snap.manifest_uri
    for fragment in suspects(ctx.snap, _data_file_fields_screen):
        seen: set[int] = set()
        for data_file in fragment.proto.files:
            where = f"fragment {fragment.id} file {data_file.path}"
            ids = set(data_file.fields)
            if min(ids, default=0) < 0:
                bad = sorted(i for i in ids if i < 0 and i != TOMBSTONE)
                if bad:
                    ctx.finding("MAN-006", manifest, f"field ids {bad} are stored; -1 is an in-memory placeholder "
                                "and no negative id but the tombstone -2 is a field", where)
                ids.discard(TOMBSTONE)
            if seen & ids:
                ctx.finding("MAN-007", manifest, f"field ids {sorted(seen & ids)} are also held by another data file "
                            "of the fragment", where)
            seen |= ids
            indices = data_file.column_indices
            if data_file.file_major_version == 0:
                if indices:
                    ctx.finding("MAN-008", manifest, "a legacy (0.x) data file lists column_indices", where,
                                code="legacy_column_indices")
                if list(data_file.fields) != sorted(data_file.fields):
                    ctx.finding("MAN-008", manifest, f"a legacy (0.x) data file lists its field ids unsorted: "
                                f"{list(data_file.fields)}", where, code="legacy_field_ids_unsorted")
                continue
            if len(indices) != len(data_file.fields):
                ctx.finding("MAN-008", manifest, f"{len(indices)} column_indices for {len(data_file.fields)} fields",
                            where, code="column_indices_count")
            if len(set(indices)) != len(indices):
                dupes = sorted(i for i, n in Counter(indices).items() if n > 1 and i != -1)
                if dupes:
                    ctx.finding("MAN-008", manifest, f"column_indices {dupes} appear more than once", where,
                                code="column_indices_duplicate")


def _data_file_fields_screen(columns: FragmentColumns) -> Bools:
    """The fragments ``data_file_fields`` could find something in: a data file storing a negative field id
    but -2 (MAN-006); a field id but -2 held by two data files of a fragment (MAN-007); a legacy file with
    column_indices or with its ids ever decreasing, a file with as many column_indices as fields, or with a
    column index but -1 twice (MAN-008)."""
    ids, owner = columns.field_ids, columns.field_file
    files = files_with(columns, owner, (ids < 0) & (ids != TOMBSTONE))
    legacy = columns.major == 0
    nfields = np.bincount(owner, minlength=columns.file_count)
    ncolumns = np.bincount(columns.column_file, minlength=columns.file_count)
    files |= legacy & (ncolumns > 0)
    files[decreasing_within(owner, ids)] |= legacy[decreasing_within(owner, ids)]
    files |= ~legacy & (ncolumns != nfields)
    listed = columns.column_indices != -1
    files[repeated_within(columns.column_file[listed], columns.column_indices[listed])] = True
    flagged = fragments_of_files(columns, files)
    shared = columns.files_per_fragment()[columns.file_fragment] > 1  # per data file: its fragment has others
    held = shared[owner] & (ids != TOMBSTONE)
    if held.any():  # each file's ids once, then an id twice in one fragment
        pairs = np.unique((owner[held] << 32) | (ids[held] + 2**31))
        fragment = columns.file_fragment[pairs >> 32]
        flagged[repeated_within(fragment, (pairs & 0xFFFFFFFF) - 2**31)] = True
    return flagged


#: The data_format versions this suite knows, with the data file versions each allows. A version outside
#: it is one certify cannot judge (``conformance.judgement``), not a breach.
DATA_FORMAT_FILE_VERSIONS = {"0.1": {(0, 2), (0, 1), (0, 0)}, "2.0": {(2, 0), (0, 3)}, "2.1": {(2, 1)},
                              "2.2": {(2, 2)}, "2.3": {(2, 3)}}


@version_check("manifest.data_format", "MAN-009", fragment_local=True)
def data_format(ctx: VersionContext) -> None:
    """Every data file has the file version the manifest's data_format declares (MAN-009). A declared
    version this suite does not know is certify's "cannot judge", not checked here."""
    allowed = DATA_FORMAT_FILE_VERSIONS.get(ctx.snap.manifest.data_format.version)
    declared = ctx.snap.manifest.data_format.version
    if allowed is None:
        return

    def screen(columns: FragmentColumns) -> Bools:  # the data files of a version pair not allowed
        pairs, which = np.unique((columns.major << np.uint64(32)) | columns.minor, return_inverse=True)
        wrong = np.array([not _file_version_allowed((int(p) >> 32, int(p) & 0xFFFFFFFF), allowed)
                          for p in pairs], np.bool_)
        return fragments_of_files(columns, wrong[which] if wrong.size else np.zeros(0, np.bool_))

    for fragment in suspects(ctx.snap, screen):
        for data_file in fragment.proto.files:
            pair = (data_file.file_major_version, data_file.file_minor_version)
            if not _file_version_allowed(pair, allowed):
                ctx.finding("MAN-009", ctx.snap.manifest_uri,
                            f"data file version {pair[0]}.{pair[1]} but the dataset declares {declared}",
                            f"fragment {fragment.id} file {data_file.path}")


def _file_version_allowed(pair: tuple[int, int], allowed: set[tuple[int, int]]) -> bool:
    return pair in allowed or pair in FOOTER_VERSION_FOR.get(pair, ())


@version_check("manifest.feature_flags", "MAN-010")
def feature_flags_match(ctx: VersionContext) -> None:
    """Flags recomputed from content match the recorded ones (MAN-010). A version without fragments may
    set the stable row ids bit: the table uses them and has no row to number yet (pylance 14.0.2 and
    LanceDB 0.40.0 create empty tables so). Unknown bits are not judged here: a reader flag certify does
    not know makes it decline to judge (MAN-011, ``judgement``)."""
    manifest, where = ctx.snap.manifest, ctx.snap.manifest_uri
    transaction_written = not manifest.writer_feature_flags & feature_flags.DISABLE_TRANSACTION_FILE
    columns = columns_of(ctx.snap)
    if columns is None:
        row_ids, deletions = feature_flags.uses_stable_row_ids(manifest), None
    else:
        row_ids = any_fragment(columns, manifest, columns.has_row_ids,
                               lambda f: f.WhichOneof("row_id_sequence") is not None)
        deletions = any_fragment(columns, manifest, columns.has_deletion, lambda f: f.HasField("deletion_file"))
    stable = row_ids or (not manifest.fragments and bool(manifest.reader_feature_flags & feature_flags.STABLE_ROW_IDS))
    reader, writer = feature_flags.compute_flags(manifest, stable_row_ids=stable, deletion_files=deletions,
                                                 transaction_file_written=transaction_written)
    for word, recorded, expected in (("reader", manifest.reader_feature_flags, reader),
                                     ("writer", manifest.writer_feature_flags, writer)):
        known_part = recorded & feature_flags.KNOWN_FLAGS & ~feature_flags.USE_V2_FORMAT_DEPRECATED
        if known_part != expected:
            names = feature_flags.FLAG_NAMES
            missing = [names[b] for b in names if expected & b and not recorded & b]
            extra = [names[b] for b in names if known_part & b and not expected & b]
            detail = "; ".join(p for p in (f"missing {', '.join(missing)}" if missing else "",
                                           f"set without cause: {', '.join(extra)}" if extra else "") if p)
            ctx.finding("MAN-010", where,
                        f"{word} feature flags are {recorded}, content calls for {expected} ({detail})")


_CORE_SEMVER = re.compile(r"^\d+\.\d+\.\d+$")


@version_check("manifest.writer_version", "MAN-012")
def writer_version(ctx: VersionContext) -> None:
    """writer_version.version is a core semantic version (MAN-012)."""
    text = ctx.snap.manifest.writer_version.version
    if text and not _CORE_SEMVER.match(text):
        ctx.finding("MAN-012", ctx.snap.manifest_uri, f"writer version {text!r} is not a bare major.minor.patch")
