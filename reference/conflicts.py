"""The Lance conflict matrix as a pure function over two Transaction protos.

When a writer commits a transaction built at ``read_version`` and finds that other versions have landed
since, it checks its own transaction (the *committing* one, a row of the matrix) against the transaction of
each of those versions (the *concurrent* one, a column) in ascending order (docs/lance-format.md §7.2 step 3).
:func:`judge` answers one such check:

* :attr:`Resolution.COMPATIBLE` -- no conflict, commit on top of the new version as is;
* :attr:`Resolution.REBASE` -- compatible after an automatic rebase done by the committer (e.g. merging the
  deletion vectors of a fragment both transactions deleted rows from);
* :attr:`Resolution.RETRYABLE` -- the caller must rebuild its transaction from the new version;
* :attr:`Resolution.INCOMPATIBLE` -- the transaction fails for good.

The rules are those of the matrix in docs/lance-format.md §7.3 (the fact base). Where a cell says "on overlapping
fragments", overlap means the existing fragment ids both transactions modify or remove
(:func:`touched_fragments`); for an index it means the fragments its ``fragment_bitmap`` covers. Anything the
matrix does not list is COMPATIBLE.

Only what the two protos say is judged. Facts that live in the committer and not in the transactions are
outside this function and stated where they matter: whether the dataset uses stable row ids or a
fragment-reuse index (both taken as absent, which is what a Rewrite proto can express), and whether two
rebasable deletes hit the *same rows* (the committer decides that while merging deletion vectors; see
:func:`judge`). ``UpdateMemWalState`` (operation 112) is out of scope (§3.5): as a column it follows the
matrix; as a row the matrix lists nothing, so it is compatible with everything.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pyroaring import BitMap

from .proto import table_pb2, transaction_pb2

Transaction = transaction_pb2.Transaction

__all__ = [
    "FRAGMENT_REUSE_INDEX_NAME",
    "MEM_WAL_INDEX_NAME",
    "OPERATIONS",
    "SINGLETON_INDEX_NAMES",
    "Resolution",
    "Verdict",
    "covered_fragments",
    "covers",
    "indexed_fragments",
    "judge",
    "operation_of",
    "removed_fragments",
    "touched_fragments",
]


class Resolution(enum.Enum):
    """How a committing transaction fares against one concurrent transaction (docs/lance-format.md §7.3)."""

    COMPATIBLE = "compatible"
    REBASE = "rebase"
    RETRYABLE = "retryable"
    INCOMPATIBLE = "incompatible"


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: a resolution, a sentence naming both operations (and the fragments), and, where
    one cell of the matrix has a case a writer is known to judge otherwise, a word naming that case (``code``)."""

    resolution: Resolution
    reason: str
    code: str = ""


OPERATIONS: dict[str, str] = {
    f.name: "".join(part.capitalize() for part in f.name.split("_"))
    for f in Transaction.DESCRIPTOR.oneofs_by_name["operation"].fields
}
"""Oneof field name -> the operation's name as Lance prints it (``create_index`` -> ``CreateIndex``), in
field-number order (100..114)."""

# System indices of which a dataset holds at most one (names as Lance spells them).
FRAGMENT_REUSE_INDEX_NAME = "__lance_frag_reuse"
MEM_WAL_INDEX_NAME = "__lance_mem_wal"
SINGLETON_INDEX_NAMES = frozenset({FRAGMENT_REUSE_INDEX_NAME, MEM_WAL_INDEX_NAME})


# --- what a transaction touches ----------------------------------------------------------------------


def operation_of(txn: transaction_pb2.Transaction) -> str:
    """The operation's name as Lance prints it (``"Append"``, ``"UpdateBases"``, ...).

    Raises ValueError for a transaction whose ``operation`` oneof is unset (nothing to judge).
    """
    field = txn.WhichOneof("operation")
    if field is None:
        raise ValueError("the transaction carries no operation (the 'operation' oneof is unset)")
    return OPERATIONS[field]


def _rewrite_old_ids(rewrite: transaction_pb2.Transaction.Rewrite) -> set[int]:
    # groups (field 3) is current; old_fragments (field 1) is the deprecated single-group form.
    ids = {frag.id for group in rewrite.groups for frag in group.old_fragments}
    ids.update(frag.id for frag in rewrite.old_fragments)
    return ids


def touched_fragments(txn: transaction_pb2.Transaction) -> frozenset[int]:
    """The ids of the existing fragments the operation modifies or removes -- the "overlap" of §7.3.

    An Update's ``new_fragments`` are not existing fragments; a Merge restates every fragment it gives new
    columns. Every other operation touches none in this sense: Append, Overwrite and Clone only bring new
    fragments, CreateIndex reads fragments without modifying them (see :func:`indexed_fragments`), and the
    rest do not address fragments at all.
    """
    field = txn.WhichOneof("operation")
    if field == "delete":
        return frozenset({f.id for f in txn.delete.updated_fragments} | set(txn.delete.deleted_fragment_ids))
    if field == "update":
        return frozenset({f.id for f in txn.update.updated_fragments} | set(txn.update.removed_fragment_ids))
    if field == "rewrite":
        return frozenset(_rewrite_old_ids(txn.rewrite))
    if field == "data_replacement":
        return frozenset(group.fragment_id for group in txn.data_replacement.replacements)
    if field == "merge":
        return frozenset(f.id for f in txn.merge.fragments)
    return frozenset()


def removed_fragments(txn: transaction_pb2.Transaction) -> frozenset[int]:
    """The fragments a Delete or an Update removes whole (every row of them deleted or moved); else empty."""
    field = txn.WhichOneof("operation")
    if field == "delete":
        return frozenset(txn.delete.deleted_fragment_ids)
    if field == "update":
        return frozenset(txn.update.removed_fragment_ids)
    return frozenset()


def covered_fragments(index: table_pb2.IndexMetadata) -> BitMap | None:
    """The fragment ids an index's ``fragment_bitmap`` covers, kept as the bitmap and asked with ``covers``,
    never expanded (3.6 KB of runs hold 2^24 ids: expanded once per fragment they cost 1.2 GB, issue 32); None
    when it is absent or does not decode (its coverage is unknown)."""
    if not index.fragment_bitmap:
        return None
    try:
        return BitMap.deserialize(index.fragment_bitmap)
    except MemoryError:
        raise
    except Exception:  # pyroaring raises plain exceptions on bytes that are no bitmap
        return None


def covers(bitmap: BitMap, fragment_id: int) -> bool:
    """Whether ``bitmap`` holds ``fragment_id`` (a fragment id is a u64, a roaring bitmap holds u32s)."""
    return 0 <= fragment_id <= 0xFFFFFFFF and fragment_id in bitmap


def indexed_fragments(txn: transaction_pb2.Transaction) -> BitMap | None:
    """The fragments covered by the indices a CreateIndex adds (the union of their ``fragment_bitmap``).

    None when some new index has no (decodable) bitmap: its coverage is unknown, and §7.3 then treats it as
    overlapping anything. An empty bitmap for any other operation.
    """
    covered = BitMap()
    if txn.WhichOneof("operation") != "create_index":
        return covered
    for index in txn.create_index.new_indices:
        ids = covered_fragments(index)
        if ids is None:
            return None
        covered |= ids
    return covered


def _new_index_names(txn: transaction_pb2.Transaction) -> set[str]:
    return {index.name for index in txn.create_index.new_indices}


def _new_index_fields(txn: transaction_pb2.Transaction) -> set[int]:
    return {field for index in txn.create_index.new_indices for field in index.fields}


def _replaced_fields(txn: transaction_pb2.Transaction) -> set[int]:
    return {field for group in txn.data_replacement.replacements for field in group.new_file.fields}


# --- UpdateConfig: keys and metadata --------------------------------------------------------------------


def _config_keys(txn: transaction_pb2.Transaction) -> tuple[set[str], set[str]]:
    """(upserted, deleted) config keys of an Overwrite or an UpdateConfig."""
    field = txn.WhichOneof("operation")
    if field == "overwrite":
        return set(txn.overwrite.config_upsert_values), set()
    if field != "update_config":
        return set(), set()
    config = txn.update_config
    upserted = set(config.upsert_values)  # deprecated form
    deleted = set(config.delete_keys)  # deprecated form
    for entry in config.config_updates.update_entries:
        (upserted if entry.HasField("value") else deleted).add(entry.key)
    return upserted, deleted


def _shared_config_keys(a: transaction_pb2.Transaction, b: transaction_pb2.Transaction) -> set[str]:
    """Keys one transaction upserts and the other upserts or deletes (deleting a key twice is no clash)."""
    a_up, a_del = _config_keys(a)
    b_up, b_del = _config_keys(b)
    return (a_up & (b_up | b_del)) | (b_up & (a_up | a_del))


def _touches_schema_metadata(config: transaction_pb2.Transaction.UpdateConfig) -> bool:
    return config.HasField("schema_metadata_updates") or bool(config.schema_metadata)


def _touched_field_metadata(config: transaction_pb2.Transaction.UpdateConfig) -> set[int]:
    return set(config.field_metadata_updates) | set(config.field_metadata)


# --- UpdateBases ------------------------------------------------------------------------------------


def _base_clash(mine: Iterable[table_pb2.BasePath], theirs: Iterable[table_pb2.BasePath]) -> str | None:
    """The first clash between two lists of new bases, described, or None."""
    theirs = list(theirs)
    for new in mine:
        for other in theirs:
            if new.id != 0 and new.id == other.id:
                return f"both register base id {new.id}"
            new_name = new.name if new.HasField("name") else None
            other_name = other.name if other.HasField("name") else None
            if new_name == other_name:
                shown = "no name" if new_name is None else f"the name {new_name!r}"
                return f"both register a base with {shown}"
            if new.path == other.path:
                return f"both register the path {new.path!r}"
    return None


# --- verdicts ----------------------------------------------------------------------------------------


class _Cell:
    """Builds the verdict sentences for one (committing, concurrent) pair."""

    def __init__(self, row: str, column: str, version: int | None) -> None:
        self.row = row
        self.column = column
        self.at = f" (version {version})" if version is not None else ""

    def _say(self, resolution: Resolution, verb: str, why: str, after: str = "", code: str = "") -> Verdict:
        tail = f": {why}" if why else ""
        return Verdict(resolution, f"{self.row} {verb} a concurrent {self.column}{self.at}{after}{tail}", code)

    def compatible(self, why: str = "") -> Verdict:
        return self._say(Resolution.COMPATIBLE, "is compatible with", why)

    def rebase(self, why: str) -> Verdict:
        return self._say(Resolution.REBASE, "is compatible with", why, " after a rebase")

    def retryable(self, why: str = "") -> Verdict:
        return self._say(Resolution.RETRYABLE, "must be retried after", why)

    def incompatible(self, why: str = "", code: str = "") -> Verdict:
        return self._say(Resolution.INCOMPATIBLE, "is incompatible with", why, code=code)

    def when(self, found: set[Any], then: Callable[[str], Verdict], why: str, otherwise: str = "") -> Verdict:
        """``then`` saying ``why`` and ``found`` (sorted) when ``found`` is non-empty, else compatible (``otherwise``
        saying why)."""
        return then(f"{why} {sorted(found)}") if found else self.compatible(otherwise)

    def overlap(self, shared: Iterable[int], then: Callable[[str], Verdict]) -> Verdict:
        """``then`` when ``shared`` is non-empty, else compatible (no common fragment)."""
        return self.when(set(shared), then, "both touch fragments", "no fragment in common")


_Rule = Callable[[transaction_pb2.Transaction, transaction_pb2.Transaction, _Cell], Verdict]


def _rebase_deletions(mine: transaction_pb2.Transaction, theirs: transaction_pb2.Transaction,
                      cell: _Cell) -> Verdict:
    """Delete/Update against a concurrent Delete/Update: REBASE on common fragments, else COMPATIBLE.

    Where a common fragment was removed whole by either side, every row of it was deleted (or moved) by
    that side, so both transactions necessarily hit the same rows: RETRYABLE.
    """
    shared = touched_fragments(mine) & touched_fragments(theirs)
    if not shared:
        return cell.compatible("no fragment in common")
    gone = shared & (removed_fragments(mine) | removed_fragments(theirs))
    if gone:
        return cell.retryable(f"fragments {sorted(gone)} were removed whole by one side, so both "
                              "transactions hit the same rows")
    return cell.rebase(f"the deletion vectors of fragments {sorted(shared)} are merged by the committer "
                       "(same rows deleted by both => retryable, decided by the committer)")


def _index_rewrite_overlap(index_txn: transaction_pb2.Transaction, rewrite_txn: transaction_pb2.Transaction,
                           cell: _Cell) -> Verdict:
    covered = indexed_fragments(index_txn)
    if covered is None:
        return cell.retryable("a new index records no fragment bitmap, so it may cover a rewritten fragment")
    return cell.overlap(frozenset(f for f in touched_fragments(rewrite_txn) if covers(covered, f)), cell.retryable)


def _overlap(mine: Transaction, theirs: Transaction, cell: _Cell) -> Verdict:
    return cell.overlap(touched_fragments(mine) & touched_fragments(theirs), cell.retryable)


def _rewrite_vs_index(mine: Transaction, theirs: Transaction, cell: _Cell) -> Verdict:
    if FRAGMENT_REUSE_INDEX_NAME in _new_index_names(theirs):
        return cell.rebase("the concurrent fragment-reuse index is carried over")
    return _index_rewrite_overlap(theirs, mine, cell)


def _config_vs_config(mine: Transaction, theirs: Transaction, cell: _Cell) -> Verdict:
    keys = _shared_config_keys(mine, theirs)
    if keys:
        return cell.incompatible(f"both change config keys {sorted(keys)}")
    a, b = mine.update_config, theirs.update_config
    if _touches_schema_metadata(a) and _touches_schema_metadata(b):
        return cell.incompatible("both change the schema metadata")
    fields = _touched_field_metadata(a) & _touched_field_metadata(b)
    if fields:
        return cell.incompatible(f"both change the metadata of fields {sorted(fields)}")
    return cell.compatible("no config key or metadata in common")


def _config_vs_overwrite(mine: Transaction, theirs: Transaction, cell: _Cell) -> Verdict:
    """Always INCOMPATIBLE (the matrix); the reason says whether the UpdateConfig touches metadata or a key the
    Overwrite also sets, or only other config keys (the case pylance 14.0.2 lets land: spec/findings.md F-038)."""
    config = mine.update_config
    if _touches_schema_metadata(config) or _touched_field_metadata(config):
        return cell.incompatible("it changes schema or field metadata")
    keys = _shared_config_keys(mine, theirs)
    if keys:
        return cell.incompatible(f"both set config keys {sorted(keys)}")
    return cell.incompatible("it changes only config keys the Overwrite does not set", "config_keys_over_overwrite")


def _replacement_vs_replacement(mine: Transaction, theirs: Transaction, cell: _Cell) -> Verdict:
    clashes = {
        (group.fragment_id, field)
        for group in mine.data_replacement.replacements
        for other in theirs.data_replacement.replacements
        if group.fragment_id == other.fragment_id
        for field in set(group.new_file.fields) & set(other.new_file.fields)
    }
    if clashes:
        return cell.retryable(f"both replace fields {sorted({f for _, f in clashes})} of fragments "
                              f"{sorted({i for i, _ in clashes})}")
    return cell.compatible("no field of a common fragment is replaced by both")


def _bases_vs_bases(mine: Transaction, theirs: Transaction, cell: _Cell) -> Verdict:
    clash = _base_clash(mine.update_bases.new_bases, theirs.update_bases.new_bases)
    if clash:
        return cell.incompatible(clash)
    return cell.compatible("no base id, name or path in common")


_REPLACED = ("Overwrite", "Restore")
_WAL = (*_REPLACED, "UpdateMemWalState")
_INCOMPATIBLE: dict[str, tuple[str, ...]] = {
    "Append": _WAL, "Delete": _WAL, "Update": _REPLACED, "CreateIndex": _WAL, "Rewrite": _REPLACED,
    "Merge": (*_WAL, "Project"), "Project": _WAL, "Restore": ("UpdateMemWalState",), "ReserveFragments": _REPLACED,
    "DataReplacement": _WAL,
}
"""Row -> the columns it is INCOMPATIBLE with whatever the two transactions hold."""

_MERGED = "a Merge rewrites the fragment list"
_RETRYABLE: dict[tuple[str, str], str] = {
    ("Delete", "Merge"): _MERGED, ("Update", "Merge"): _MERGED, ("Rewrite", "Merge"): _MERGED,
    ("DataReplacement", "Merge"): _MERGED, ("Overwrite", "Overwrite"): "two overwrites always race",
    ("Overwrite", "UpdateMemWalState"): "", ("Project", "Project"): "the schema changed",
    ("Project", "Merge"): "the schema changed",
    **{("Merge", column): "the fragment list changed"
       for column in ("Update", "Append", "Delete", "Merge", "Rewrite", "DataReplacement")},
}
"""(row, column) -> why the cell is RETRYABLE whatever the two transactions hold."""

_RULES: dict[tuple[str, str], _Rule] = {
    **{(row, column): _rebase_deletions for row in ("Delete", "Update") for column in ("Delete", "Update")},
    **{(row, column): _overlap for row in ("Delete", "Update") for column in ("Rewrite", "DataReplacement")},
    **{("Rewrite", column): _overlap for column in ("DataReplacement", "Delete", "Update", "Rewrite")},
    ("DataReplacement", "Rewrite"): _overlap, ("DataReplacement", "Update"): _overlap,
    ("Overwrite", "UpdateConfig"): lambda mine, theirs, cell: cell.when(
        _shared_config_keys(mine, theirs), cell.retryable, "both set config keys", "no config key in common"),
    ("CreateIndex", "DataReplacement"): lambda mine, theirs, cell: cell.when(
        _new_index_fields(mine) & _replaced_fields(theirs), cell.retryable, "it replaces the data of indexed fields",
        "no indexed field is replaced"),
    ("CreateIndex", "CreateIndex"): lambda mine, theirs, cell: cell.when(
        _new_index_names(mine) & _new_index_names(theirs) & SINGLETON_INDEX_NAMES, cell.rebase,
        "both create the singleton index"),
    ("DataReplacement", "CreateIndex"): lambda mine, theirs, cell: cell.when(
        _replaced_fields(mine) & _new_index_fields(theirs), cell.retryable,
        "the concurrent index covers replaced fields", "no replaced field is indexed"),
    ("CreateIndex", "Rewrite"): _index_rewrite_overlap, ("Rewrite", "CreateIndex"): _rewrite_vs_index,
    ("UpdateConfig", "UpdateConfig"): _config_vs_config, ("UpdateConfig", "Overwrite"): _config_vs_overwrite,
    ("DataReplacement", "DataReplacement"): _replacement_vs_replacement,
    ("UpdateBases", "UpdateBases"): _bases_vs_bases,
}
"""(row, column) -> the rule of a cell that depends on what the two transactions hold."""


def judge(committing: transaction_pb2.Transaction, concurrent: transaction_pb2.Transaction, *,
          concurrent_version: int | None = None) -> Verdict:
    """Judge ``committing`` (a row of docs/lance-format.md §7.3) against ``concurrent`` (a column), the
    transaction of a version that landed after ``committing.read_version``.

    ``concurrent_version``, when given, is the version ``concurrent`` produced; it only appears in the reason.
    Raises ValueError only when a transaction carries no operation.

    The rules, row by row (§7.3; "overlapping" = :func:`touched_fragments` intersect, unlisted = COMPATIBLE):

    * Append: INCOMPATIBLE with Overwrite, Restore, UpdateMemWalState.
    * Delete: INCOMPATIBLE with Overwrite, Restore, UpdateMemWalState; RETRYABLE with Merge (always) and with
      Rewrite, DataReplacement on overlapping fragments; REBASE with Delete, Update on overlapping fragments.
    * Update: as Delete, except that UpdateMemWalState is not listed (COMPATIBLE).
    * Overwrite: RETRYABLE with Overwrite (always), with UpdateConfig setting one of its config keys, and with
      UpdateMemWalState.
    * CreateIndex: INCOMPATIBLE with Overwrite, Restore, UpdateMemWalState; RETRYABLE with Rewrite of
      fragments the new indices cover (an index without a fragment bitmap covers everything) and with
      DataReplacement of an indexed field; REBASE with CreateIndex of the same singleton index
      (:data:`SINGLETON_INDEX_NAMES`).
    * Rewrite: INCOMPATIBLE with Overwrite, Restore; RETRYABLE with Merge (always), with DataReplacement,
      Delete, Update, Rewrite on overlapping fragments and with CreateIndex covering rewritten fragments;
      REBASE with CreateIndex of the fragment-reuse index.
    * Merge: INCOMPATIBLE with Overwrite, Restore, UpdateMemWalState, Project; RETRYABLE with Update, Append,
      Delete, Merge, Rewrite, DataReplacement (always).
    * Project: INCOMPATIBLE with Overwrite, Restore, UpdateMemWalState; RETRYABLE with Project, Merge.
    * Restore: INCOMPATIBLE with UpdateMemWalState.
    * ReserveFragments: INCOMPATIBLE with Overwrite, Restore.
    * UpdateConfig: INCOMPATIBLE with Overwrite, and with UpdateConfig touching the same config key (upserted
      by one, upserted or deleted by the other), both the schema metadata, or the metadata of the same field.
    * DataReplacement: INCOMPATIBLE with Overwrite, Restore, UpdateMemWalState; RETRYABLE with Merge, with
      DataReplacement of the same field of the same fragment, with CreateIndex on a replaced field, and with
      Rewrite, Update on overlapping fragments.
    * UpdateBases: INCOMPATIBLE with UpdateBases registering a base with the same non-zero id, the same name
      (names compare as optionals, so two unnamed bases clash) or the same path; never conflicts with data
      operations.
    * Clone: INCOMPATIBLE with anything, a Clone being only valid as the first commit of a new dataset.
    * UpdateMemWalState: no row in the matrix, COMPATIBLE.

    Delete/Update against Delete/Update on a common fragment is REBASE (whether both deleted the same rows
    is the committer's to find out), except RETRYABLE where one side removed it whole (``_rebase_deletions``).
    """
    cell = _Cell(operation_of(committing), operation_of(concurrent), concurrent_version)
    if cell.row == "Clone":
        return cell.incompatible("a Clone is only valid as the first commit of a new dataset")
    if cell.column in _INCOMPATIBLE.get(cell.row, ()):
        return cell.incompatible()
    if (cell.row, cell.column) in _RETRYABLE:
        return cell.retryable(_RETRYABLE[cell.row, cell.column])
    rule = _RULES.get((cell.row, cell.column))
    if rule is not None:
        return rule(committing, concurrent, cell)
    if cell.row == "UpdateBases":
        return cell.compatible("registering bases never conflicts with data operations")
    if cell.row == "UpdateMemWalState":
        return cell.compatible("the matrix lists no conflict for this pair")
    return cell.compatible()
