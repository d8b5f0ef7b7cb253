"""Checks across the versions of one root: ids never reused and counters that never decrease (catalogue
MAN-016, MAN-017, MAN-018, ROW-002; the Table Format's "Schema & Fields", "Fragments" and Manifest
max_fragment_id / next_row_id). They read every attached version (``DatasetContext.history``), not only
the certified ones: a reuse is a breach of the version that made it.

How certify reads a restore, a rename and a re-add (spec/README.md, "Restore, rename, re-add"):

- an id *returns* when a version has it and the attached version before it does not, while an earlier
  one did. Only a Restore transaction (pylance's ``restore()``: the whole manifest of version k again) may
  bring an id back, and then with the meaning it had at version k (every earlier appearance counts when k
  is gone): a field its name, logical type and parent; a fragment its data files (the same lineage: a data
  file in common, since add_columns and drop_columns add and remove files under one fragment id).
- a *rename* keeps the field id (no return); a *re-add* (any other transaction bringing an id back,
  same name and type or not) is a reuse.
- an Overwrite starts the schema afresh, as a creation does (pylance numbers its fields from 0 again);
  its fragments still take ids above max_fragment_id.
- without a transaction, or when cleanup removed the version just before (the commits that made the
  difference are gone; only a Restore or an Overwrite still tells), a return is judged against every
  earlier appearance.
- when cleanup removed the versions that used an id, what storage still holds is judged: a new fragment
  id not above the previous version's max_fragment_id (``fragment_ids``), and a field id whose data files
  disagree on what it is (``data_file_field_ids``).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from reference.commit import transaction_kind
from reference.errors import LanceSpecError
from reference.plain_fragments import PlainFragments
from reference.proto import file_pb2, table_pb2

from . import DatasetContext, PastVersion, VersionContext, dataset_check, version_check
from .files import _data_file_reads, _data_file_state, _judged_one_by_one, plain_states
from .history import transaction_of
from .manifest import known_logical_type

#: What a field id means: its name, logical type and parent id.
Meaning = tuple[str, str, int]

#: The transactions that may give a new fragment an id not above the previous max_fragment_id: a restore
#: (old fragments back), a rewrite (ids a ReserveFragments commit set aside) and a clone (a root's start).
_OLD_FRAGMENT_IDS_ALLOWED = {"restore", "rewrite", "clone"}


@dataclass(frozen=True)
class _Made:
    """How a version was made, as far as the root says: its transaction's operation (None when unknown)
    and, for a Restore, the attached version it restored (None when cleanup removed it)."""

    operation: str | None
    restored: PastVersion | None = None

    @property
    def restore(self) -> bool:
        return self.operation == "restore"


def _made(ctx: DatasetContext, snap: PastVersion, previous: int | None, seen: dict[int, str]) -> _Made:
    """How ``snap`` was made; ``previous``: the attached version before it, ``seen``: the manifest of every
    attached version before it, by number. When the version just before it is gone (cleanup), what changed
    since the attached version before it was made by commits no longer known: only a restore or an overwrite,
    which set the whole schema, still tell; any other operation counts as unknown. A restored version's
    manifest is read again only when a restore brings an id back (history is walked one manifest at a time)."""
    txn = transaction_of(ctx, snap)
    operation = txn.WhichOneof("operation") if txn is not None else None
    if operation not in ("restore", "overwrite") and previous != snap.version - 1:
        return _Made(None)
    if operation != "restore":
        return _Made(operation)
    assert txn is not None
    uri = seen.get(txn.restore.version)
    if uri is None:
        return _Made(operation)
    try:
        manifest = ctx.dataset.manifest_file(uri).manifest
    except LanceSpecError:
        return _Made(operation)
    return _Made(operation, PastVersion(txn.restore.version, uri, manifest))


def _may_be_overwrite(ctx: DatasetContext, snap: PastVersion) -> bool:
    """Whether the transaction that made ``snap`` may be an Overwrite, known without decoding its operation
    (``commit.transaction_kind``); whether it is one, and decodes, is ``transaction_of``'s to say."""
    try:
        kind = transaction_kind(ctx.dataset, snap.version, snap.manifest_uri, snap.decoded)
    except LanceSpecError:
        return False  # it does not decode: transaction_of finds no transaction either
    return kind is not None and kind[0] == "overwrite"


def _commit(operation: str | None) -> str:
    """'a delete commit', 'an append commit'."""
    return f"{'an' if (operation or 'x')[0] in 'aeiou' else 'a'} {operation} commit"


def _meanings(snap: PastVersion) -> dict[int, Meaning]:
    return {f.id: (f.name, f.logical_type, f.parent_id) for f in snap.manifest.fields}


def _field_text(meaning: Meaning) -> str:
    return f"{meaning[0]!r} ({meaning[1]})"


@dataset_check("evolution.field_ids", "MAN-016")
def field_ids(ctx: DatasetContext) -> None:
    """A field id that left the schema returns only in a Restore, with the meaning (name, logical type,
    parent) it had in the restored version, or at any earlier appearance when that version is gone; and a
    field new in a version gets an id above every id the versions before it used (MAN-016). An Overwrite
    starts the schema afresh (pylance numbers its fields from 0, as at creation)."""
    seen: dict[int, str] = {}
    appearances: dict[int, set[Meaning]] = {}
    current: set[int] | None = None
    before: table_pb2.Manifest | None = None
    for snap in ctx.history():
        fields = _meanings(snap)
        arrived = sorted(set(fields) - current) if current is not None else []
        if arrived:
            made = _made(ctx, snap, before.version if before is not None else None, seen)
        elif current is None or not _may_be_overwrite(ctx, snap):
            made = _Made(None)  # only an overwrite matters here, and not on the first version (nothing to forget)
        else:
            txn = transaction_of(ctx, snap)
            made = _Made(txn.WhichOneof("operation") if txn is not None else None)
        if made.operation == "overwrite":
            appearances = {}
        elif current is not None:
            highest = max(appearances, default=None)
            for fid in arrived:
                if fid in appearances:
                    assert before is not None
                    _returning_field(ctx, snap, before, made, fid, fields[fid], appearances[fid])
                elif highest is not None and fid <= highest:
                    ctx.finding_at(snap.version, "MAN-016", snap.manifest_uri,
                                   f"new field {fields[fid][0]!r} has id {fid}, not above the highest id used before "
                                   f"({highest})", code="field_id_not_above_highest")
        for fid, meaning in fields.items():
            appearances.setdefault(fid, set()).add(meaning)
        current, before = set(fields), snap.manifest
        seen[snap.version] = snap.manifest_uri


def _returning_field(ctx: DatasetContext, snap: PastVersion, before: table_pb2.Manifest, made: _Made, fid: int,
                     meaning: Meaning, earlier: set[Meaning]) -> None:
    """Judge field ``fid`` coming back in ``snap`` (absent from ``before``, the attached version before it),
    as ``meaning``; ``earlier``: what it meant at every earlier appearance."""
    if made.restore and made.restored is not None:
        was = _meanings(made.restored).get(fid)
        if was == meaning:
            return
        ctx.finding_at(snap.version, "MAN-016", snap.manifest_uri,
                       f"the restore of version {made.restored.version} brings back field id {fid} as "
                       f"{_field_text(meaning)}, which version {made.restored.version} "
                       + ("did not have" if was is None else f"had as {_field_text(was)}"),
                       code="restore_field_mismatch")
    elif made.restore or made.operation is None:
        if meaning not in earlier:
            ctx.finding_at(snap.version, "MAN-016", snap.manifest_uri,
                           f"field {meaning[0]!r} has id {fid}, which an earlier version used for the since "
                           f"dropped field {' or '.join(sorted(repr(m[0]) for m in earlier))}", code="field_id_reused")
    else:
        again = meaning in earlier
        old = f"its old id {fid}" if again else f"id {fid}, the id of the since dropped field " + " or ".join(
            sorted(_field_text(m) for m in earlier))
        held = any(fid in d.fields for f in before.fragments for d in f.files)
        still = ("data files of the version before still hold that id, so readers return the dropped values"
                 if held else "no data file of the version before holds that id")
        ctx.finding_at(snap.version, "MAN-016", snap.manifest_uri,
                       f"field {_field_text(meaning)} {'comes back under' if again else 'is added with'} {old} in "
                       f"{_commit(made.operation)} ({still}): a field added after a drop takes a new id; only a "
                       "restore brings an old id back",
                       code="field_id_reused_files_hold" if held else "field_id_reused_files_gone")


@version_check("evolution.data_file_field_ids", "MAN-016", prefetch=_data_file_reads, fragment_local=True)
def data_file_field_ids(ctx: VersionContext) -> None:
    """What the data files still say of a field id, when the versions that used it are gone (MAN-016): a
    data file holding a field id (listed in DataFile.fields, not tombstoned) records in its own schema
    the logical type the manifest gives that id, and two data files of one fragment holding the same id
    record the same name and type for it. A file keeping the id of a dropped field is legal (MAN-006); a
    rename changes the manifest only, so names are compared within a fragment only, where no writer puts
    one field in two files."""
    counts = Counter(f.id for f in ctx.snap.manifest.fields)
    # an id two fields of the schema share has no one meaning to compare with (MAN-005's finding), and a type
    # the format does not know says nothing to compare (MAN-014's)
    schema = {f.id: f for f in ctx.snap.manifest.fields
              if counts[f.id] == 1 and known_logical_type(f.logical_type)}
    held: dict[tuple[int, int], tuple[str, str, str]] = {}  # (fragment, field id) -> name, type, file
    for fragment, _, data_file, uri in _judged_one_by_one(ctx.snap, functools.partial(_field_suspects, ctx, schema)):
        fields = _data_file_state(ctx.storage, uri).fields
        if fields is None:
            continue
        own = {fid: (name, logical_type) for fid, name, logical_type in fields}
        where = f"fragment {fragment.id} file {data_file.path}"
        for fid in data_file.fields:
            if fid < 0 or fid not in own:
                continue
            name, logical_type = own[fid]
            field = schema.get(fid)
            if field is not None and field.logical_type != logical_type:
                ctx.finding("MAN-016", uri, f"the data file holds field id {fid} as {name!r} ({logical_type}), the "
                            f"schema gives id {fid} to {field.name!r} ({field.logical_type}): the id names another "
                            "field than the one the file holds", where)
            other = held.setdefault((fragment.id, fid), (name, logical_type, data_file.path))
            if other[:2] != (name, logical_type):
                ctx.finding("MAN-016", uri, f"field id {fid} is {name!r} ({logical_type}) in this data file and "
                            f"{other[0]!r} ({other[1]}) in {other[2]} of the same fragment: one id names two fields",
                            where)


def _field_suspects(ctx: VersionContext, schema: dict[int, file_pb2.Field], plain: PlainFragments) -> list[int]:
    """The plain fragments ``data_file_field_ids`` could find something in (positions in the fragment
    sequence): those with a data file whose own schema gives an id of the manifest's schema another logical
    type, those with two data files whose own schemas give one id two names or types, and every fragment whose
    id another fragment shares (the rule compares the files of one fragment id). Files of one schema share one
    tuple of fields, so each distinct schema is looked at once, and only the fragments whose files hold more
    than one schema are compared file by file."""
    ids = plain.columns.id[plain.fragments]
    order = np.sort(ids)
    shared = order[1:][order[1:] == order[:-1]]
    flagged: set[int] = set(plain.fragments[np.isin(ids, shared)].tolist()) if shared.size else set()
    states = plain_states(plain, ctx.storage)
    if not states.codes.size:
        return sorted(flagged)
    code_of: dict[int, int] = {}  # id() of a fields tuple (None included) -> its code, in order of first sight
    distinct: list[tuple[tuple[int, str, str], ...] | None] = []  # by code
    for state in states.distinct:
        if code_of.setdefault(id(state.fields), len(code_of)) == len(distinct):
            distinct.append(state.fields)
    codes = np.array([code_of[id(state.fields)] for state in states.distinct], np.int64)[states.codes]

    def own(fields: tuple[tuple[int, str, str], ...]) -> dict[int, tuple[str, str]]:
        return {fid: (name, logical_type) for fid, name, logical_type in fields}

    mistyped = np.array([fields is not None and any(fid in schema and schema[fid].logical_type != held[1]
                                                    for fid, held in own(fields).items()) for fields in distinct],
                        np.bool_)
    owners = plain.owners
    flagged.update(owners[mistyped[codes]].tolist())
    # a fragment whose files all hold one schema (one tuple) holds no clash; the others are compared as they were
    mixed = np.unique(owners[1:][(owners[1:] == owners[:-1]) & (codes[1:] != codes[:-1])])
    clashing: dict[tuple[int, int], bool] = {}
    group: list[tuple[tuple[int, str, str], ...]] = []  # the distinct schemas of the current fragment's files
    current = -1
    for at in np.flatnonzero(np.isin(owners, mixed)).tolist():
        owner, fields = int(owners[at]), distinct[codes[at]]
        if owner != current:
            current, group = owner, []
        if fields is None or any(fields is other for other in group):
            continue
        for other in group:
            pair = (id(other), id(fields))
            if pair not in clashing:
                mine, theirs = own(other), own(fields)
                clashing[pair] = any(fid in theirs and theirs[fid] != held for fid, held in mine.items())
            if clashing[pair]:
                flagged.add(owner)
        group.append(fields)
    return sorted(flagged)


@dataset_check("evolution.fragment_ids", "MAN-017")
def fragment_ids(ctx: DatasetContext) -> None:
    """A fragment id that named a fragment in an earlier version and left the dataset returns only in a
    Restore, as the fragment it was in the restored version (or, that version gone, a fragment of the same
    lineage: a data file in common with an earlier appearance); and a fragment new in a version takes an
    id above the previous version's max_fragment_id unless a restore, a rewrite (ids a ReserveFragments
    commit set aside) or a clone made it (MAN-017)."""
    seen: dict[int, str] = {}
    appearances: dict[int, list[frozenset[str]]] = {}
    previous: table_pb2.Manifest | None = None
    latest = max(ctx.snapshots, default=None)
    for snap in ctx.history():
        if snap.version == latest:  # the last version looked at: only its arrivals matter, nothing looks back at it
            if previous is None:
                break
            arrived = sorted({f.id for f in snap.manifest.fragments} - {f.id for f in previous.fragments})
            fragments = _files_of(snap.manifest, set(arrived))
        else:
            fragments = _files_of(snap.manifest, None)
            arrived = sorted(set(fragments) - {f.id for f in previous.fragments}) if previous is not None else []
        made = _made(ctx, snap, previous.version if previous is not None else None, seen) if arrived else _Made(None)
        for fid in arrived:
            if fid in appearances:
                problem = _returning_fragment(made, fid, fragments[fid], appearances[fid])
            elif (made.operation is not None and made.operation not in _OLD_FRAGMENT_IDS_ALLOWED
                  and previous is not None and previous.HasField("max_fragment_id")
                  and fid <= previous.max_fragment_id):
                problem = (f"new fragment {fid} (made by {_commit(made.operation)}) is not above max_fragment_id "
                           f"{previous.max_fragment_id} of version {previous.version}: an id used before")
            else:
                continue
            if problem:
                ctx.finding_at(snap.version, "MAN-017", snap.manifest_uri, problem)
        if snap.version != latest:
            for fid, files in fragments.items():
                appearances.setdefault(fid, []).append(files)
        previous = snap.manifest
        seen[snap.version] = snap.manifest_uri


def _files_of(manifest: table_pb2.Manifest, ids: set[int] | None) -> dict[int, frozenset[str]]:
    """The data file paths of each fragment (of those with ``ids``, when given) by fragment id; of fragments
    sharing an id, the last."""
    return {f.id: frozenset(d.path for d in f.files) for f in manifest.fragments if ids is None or f.id in ids}


def _returning_fragment(made: _Made, fid: int, files: frozenset[str], earlier: list[frozenset[str]]) -> str | None:
    """What is wrong with fragment ``fid`` coming back with ``files`` (None: nothing)."""
    if made.restore and made.restored is not None:
        was = next((frozenset(d.path for d in f.files) for f in made.restored.manifest.fragments if f.id == fid), None)
        if was == files:
            return None
        return (f"the restore of version {made.restored.version} brings back fragment id {fid} with other data files "
                f"than version {made.restored.version} had under it")
    if made.restore or made.operation is None:
        if any(files & seen for seen in earlier):
            return None
        return (f"fragment id {fid} names a new fragment, but an earlier version used it for another fragment "
                "since removed")
    return (f"fragment id {fid} comes back in {_commit(made.operation)}, but an earlier version used it for a "
            "fragment since removed: only a restore brings an old fragment id back")


def _never_decreases(ctx: DatasetContext, requirement: str, name: str,
                     value_of: Callable[[table_pb2.Manifest], int | None]) -> None:
    highest: tuple[int, int] | None = None
    for snap in ctx.history():
        value = value_of(snap.manifest)
        if value is None:
            continue
        if highest is not None and value < highest[1]:
            ctx.finding_at(snap.version, requirement, snap.manifest_uri,
                           f"{name} is {value}, below {highest[1]} of version {highest[0]}")
        elif highest is None or value > highest[1]:
            highest = (snap.version, value)


@dataset_check("evolution.max_fragment_id", "MAN-018")
def max_fragment_id(ctx: DatasetContext) -> None:
    """max_fragment_id never decreases from one version to the next (MAN-018)."""
    _never_decreases(ctx, "MAN-018", "max_fragment_id",
                     lambda m: m.max_fragment_id if m.HasField("max_fragment_id") else None)


@dataset_check("evolution.next_row_id", "ROW-002")
def next_row_id(ctx: DatasetContext) -> None:
    """next_row_id never decreases from one version to the next (ROW-002)."""
    _never_decreases(ctx, "ROW-002", "next_row_id", lambda m: m.next_row_id)
