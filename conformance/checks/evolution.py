"""Checks across the versions of one root: ids never reused and counters that never decrease (catalogue
MAN-016, MAN-017, MAN-018, ROW-002; the Table Format's "Schema & Fields", "Fragments" and Manifest
max_fragment_id / next_row_id). They read every attached version (``DatasetContext.history``), not only
the certified ones: a reuse is a breach of the version that made it.
"""

from __future__ import annotations

from collections.abc import Callable

from lancespec.reference.proto import table_pb2

from . import DatasetContext, dataset_check


@dataset_check("evolution.field_ids", "MAN-016")
def field_ids(ctx: DatasetContext) -> None:
    """A field id that left the schema never returns for another field, and a field new in a version
    gets an id above every id the versions before it used (MAN-016). The same field coming back (same
    name, type and parent: a restore of an older version) is no reuse."""
    seen: dict[int, tuple[str, str, int]] = {}
    current: set[int] = set()
    for snap in ctx.history():
        fields = {f.id: (f.name, f.logical_type, f.parent_id) for f in snap.manifest.fields}
        highest = max(seen, default=None)
        for fid in sorted(set(fields) - current):
            if fid in seen and seen[fid] != fields[fid]:
                ctx.finding_at(snap.version, "MAN-016", snap.manifest_uri,
                               f"field {fields[fid][0]!r} has id {fid}, which an earlier version used for the "
                               f"since dropped field {seen[fid][0]!r}", code="field_id_reused")
            elif fid not in seen and highest is not None and fid <= highest:
                ctx.finding_at(snap.version, "MAN-016", snap.manifest_uri,
                               f"new field {fields[fid][0]!r} has id {fid}, not above the highest id used before "
                               f"({highest})", code="field_id_not_above_highest")
        seen.update(fields)
        current = set(fields)


@dataset_check("evolution.fragment_ids", "MAN-017")
def fragment_ids(ctx: DatasetContext) -> None:
    """A fragment id that named a fragment in an earlier version and left the dataset never names another
    fragment (other data files) again (MAN-017). The same fragment coming back (a restore) is no reuse;
    ids above max_fragment_id that a ReserveFragments commit set aside are new, not reused."""
    seen: dict[int, tuple[str, ...]] = {}
    current: set[int] = set()
    for snap in ctx.history():
        fragments = {f.id: tuple(d.path for d in f.files) for f in snap.manifest.fragments}
        reused = sorted(i for i in set(fragments) - current if i in seen and seen[i] != fragments[i])
        if reused:
            ctx.finding_at(snap.version, "MAN-017", snap.manifest_uri,
                           f"fragment id(s) {reused} name new fragments, but earlier versions used them for other "
                           "fragments since removed")
        seen.update(fragments)
        current = set(fragments)


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
