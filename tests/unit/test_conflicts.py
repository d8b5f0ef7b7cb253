"""The conflict matrix of docs/lance-format.md §7.3, cell by cell, against ``reference.conflicts.judge``.

The expectations below are transcribed from the document's table (row = committing, column = concurrent),
not from the implementation: ``LISTED`` holds every cell the table names, everything else must be
compatible. Minimal Transaction protos are built by ``txn(kind, fragments)``, where ``fragments`` are the
existing fragment ids the operation touches (for a CreateIndex: the fragments its index covers).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyroaring import BitMap

from reference.conflicts import (
    FRAGMENT_REUSE_INDEX_NAME,
    MEM_WAL_INDEX_NAME,
    OPERATIONS,
    Resolution,
    Verdict,
    indexed_fragments,
    judge,
    operation_of,
    removed_fragments,
    touched_fragments,
)
from reference.proto import table_pb2, transaction_pb2

T = transaction_pb2.Transaction
C = Resolution.COMPATIBLE
B = Resolution.REBASE
R = Resolution.RETRYABLE
X = Resolution.INCOMPATIBLE

KINDS = tuple(OPERATIONS.values())
DEFAULT_FRAGMENTS = (1, 2)


def _frags(ids: Iterable[int]) -> list[table_pb2.DataFragment]:
    return [table_pb2.DataFragment(id=i, physical_rows=10) for i in ids]


def _index(name: str = "a_idx", fields: Iterable[int] = (0,), fragments: Iterable[int] | None = (1, 2)
           ) -> table_pb2.IndexMetadata:
    bitmap = b"" if fragments is None else BitMap(list(fragments)).serialize()
    return table_pb2.IndexMetadata(name=name, fields=list(fields), fragment_bitmap=bitmap)


def _config(*entries: tuple[str, str | None]) -> T.UpdateMap:
    return T.UpdateMap(update_entries=[
        T.UpdateMapEntry(key=k) if v is None else T.UpdateMapEntry(key=k, value=v) for k, v in entries
    ])


def _base(path: str, name: str | None = None, id: int = 0) -> table_pb2.BasePath:
    if name is None:
        return table_pb2.BasePath(path=path, id=id)
    return table_pb2.BasePath(path=path, name=name, id=id)


def txn(kind: str, fragments: Iterable[int] = DEFAULT_FRAGMENTS, **opts: Any) -> T:
    """A minimal transaction of ``kind`` (Lance's operation name) at read_version 1."""
    ids = list(fragments)
    t = T(read_version=1, uuid="00000000-0000-4000-8000-000000000000")
    if kind == "Append":
        t.append.CopyFrom(T.Append(fragments=_frags([0])))
    elif kind == "Delete":
        t.delete.CopyFrom(T.Delete(updated_fragments=_frags(ids),
                                   deleted_fragment_ids=opts.get("removed", []), predicate="a > 1"))
    elif kind == "Overwrite":
        config = opts.get("config", {"k": "1"})
        t.overwrite.CopyFrom(T.Overwrite(fragments=_frags([0]), config_upsert_values=config))
    elif kind == "CreateIndex":
        t.create_index.CopyFrom(T.CreateIndex(new_indices=[
            _index(opts.get("name", "a_idx"), opts.get("fields", (0,)),
                   None if opts.get("no_bitmap") else ids)
        ]))
    elif kind == "Rewrite":
        group = T.Rewrite.RewriteGroup(old_fragments=_frags(ids), new_fragments=_frags([1000]))
        t.rewrite.CopyFrom(T.Rewrite(groups=[group]))
    elif kind == "Merge":
        t.merge.CopyFrom(T.Merge(fragments=_frags(ids)))
    elif kind == "Restore":
        t.restore.CopyFrom(T.Restore(version=1))
    elif kind == "ReserveFragments":
        t.reserve_fragments.CopyFrom(T.ReserveFragments(num_fragments=2))
    elif kind == "Update":
        t.update.CopyFrom(T.Update(updated_fragments=_frags(ids),
                                   removed_fragment_ids=opts.get("removed", []),
                                   new_fragments=_frags([1000])))
    elif kind == "Project":
        t.project.CopyFrom(T.Project())
    elif kind == "UpdateConfig":
        default = T.UpdateConfig(config_updates=_config(("k", "2")))
        t.update_config.CopyFrom(opts.get("update_config", default))
    elif kind == "DataReplacement":
        fields = list(opts.get("fields", (0,)))
        t.data_replacement.CopyFrom(T.DataReplacement(replacements=[
            T.DataReplacementGroup(fragment_id=i,
                                   new_file=table_pb2.DataFile(path=f"{i}.lance", fields=fields))
            for i in ids
        ]))
    elif kind == "UpdateMemWalState":
        t.update_mem_wal_state.CopyFrom(T.UpdateMemWalState())
    elif kind == "Clone":
        t.clone.CopyFrom(T.Clone(is_shallow=True, ref_version=1, ref_path="/src"))
    elif kind == "UpdateBases":
        t.update_bases.CopyFrom(T.UpdateBases(new_bases=opts.get("bases", [_base("/b", "b")])))
    else:  # pragma: no cover
        raise AssertionError(kind)
    assert operation_of(t) == kind
    return t


# --- the document's table, transcribed -------------------------------------------------------------------
# (committing, concurrent) -> resolution, with the default builders (their fragments overlap, the default
# Overwrite and UpdateConfig share config key "k", the default UpdateBases share the name "b").

LISTED: dict[tuple[str, str], Resolution] = {
    ("Append", "Overwrite"): X, ("Append", "Restore"): X, ("Append", "UpdateMemWalState"): X,

    ("Delete", "Overwrite"): X, ("Delete", "Restore"): X, ("Delete", "UpdateMemWalState"): X,
    ("Delete", "Merge"): R, ("Delete", "Rewrite"): R, ("Delete", "DataReplacement"): R,
    ("Delete", "Delete"): B, ("Delete", "Update"): B,

    ("Overwrite", "Overwrite"): R, ("Overwrite", "UpdateConfig"): R, ("Overwrite", "UpdateMemWalState"): R,

    ("CreateIndex", "Overwrite"): X, ("CreateIndex", "Restore"): X, ("CreateIndex", "UpdateMemWalState"): X,
    ("CreateIndex", "Rewrite"): R, ("CreateIndex", "DataReplacement"): R,
    # ("CreateIndex", "CreateIndex") is rebase only for the same singleton index: see test_singleton_index.

    ("Rewrite", "Overwrite"): X, ("Rewrite", "Restore"): X,
    ("Rewrite", "Merge"): R, ("Rewrite", "DataReplacement"): R, ("Rewrite", "Delete"): R,
    ("Rewrite", "Update"): R, ("Rewrite", "Rewrite"): R, ("Rewrite", "CreateIndex"): R,

    ("Merge", "Overwrite"): X, ("Merge", "Restore"): X, ("Merge", "UpdateMemWalState"): X,
    ("Merge", "Project"): X,
    ("Merge", "Update"): R, ("Merge", "Append"): R, ("Merge", "Delete"): R, ("Merge", "Merge"): R,
    ("Merge", "Rewrite"): R, ("Merge", "DataReplacement"): R,

    ("Project", "Overwrite"): X, ("Project", "Restore"): X, ("Project", "UpdateMemWalState"): X,
    ("Project", "Project"): R, ("Project", "Merge"): R,

    ("Restore", "UpdateMemWalState"): X,

    ("ReserveFragments", "Overwrite"): X, ("ReserveFragments", "Restore"): X,

    ("Update", "Overwrite"): X, ("Update", "Restore"): X,
    ("Update", "Rewrite"): R, ("Update", "DataReplacement"): R, ("Update", "Merge"): R,
    ("Update", "Delete"): B, ("Update", "Update"): B,

    ("UpdateConfig", "Overwrite"): X, ("UpdateConfig", "UpdateConfig"): X,

    ("DataReplacement", "Overwrite"): X, ("DataReplacement", "Restore"): X,
    ("DataReplacement", "UpdateMemWalState"): X,
    ("DataReplacement", "DataReplacement"): R, ("DataReplacement", "CreateIndex"): R,
    ("DataReplacement", "Rewrite"): R, ("DataReplacement", "Update"): R, ("DataReplacement", "Merge"): R,

    ("UpdateBases", "UpdateBases"): X,

    # "Clone: only valid as the first commit of a new dataset": any concurrent commit makes it fail.
    **{("Clone", column): X for column in KINDS},
}

# Cells the table qualifies with "on overlapping fragments" (and their resolution when they overlap).
OVERLAP_CELLS: dict[tuple[str, str], Resolution] = {
    ("Delete", "Rewrite"): R, ("Delete", "DataReplacement"): R,
    ("Delete", "Delete"): B, ("Delete", "Update"): B,
    ("Update", "Rewrite"): R, ("Update", "DataReplacement"): R,
    ("Update", "Delete"): B, ("Update", "Update"): B,
    ("CreateIndex", "Rewrite"): R,
    ("Rewrite", "DataReplacement"): R, ("Rewrite", "Delete"): R, ("Rewrite", "Update"): R,
    ("Rewrite", "Rewrite"): R, ("Rewrite", "CreateIndex"): R,
    ("DataReplacement", "DataReplacement"): R, ("DataReplacement", "Rewrite"): R,
    ("DataReplacement", "Update"): R,
}

UNLISTED = sorted((row, column) for row in KINDS for column in KINDS if (row, column) not in LISTED)


def check(committing: T, concurrent: T, expected: Resolution) -> Verdict:
    verdict = judge(committing, concurrent)
    assert verdict.resolution is expected, verdict.reason
    return verdict


def test_every_operation_of_the_oneof_is_covered() -> None:
    oneof = T.DESCRIPTOR.oneofs_by_name["operation"]
    assert [f.name for f in oneof.fields] == list(OPERATIONS)
    assert len(KINDS) == 15


@pytest.mark.parametrize(("row", "column"), sorted(LISTED), ids=lambda v: str(v))
def test_listed_cell(row: str, column: str) -> None:
    verdict = check(txn(row), txn(column), LISTED[row, column])
    assert row in verdict.reason and column in verdict.reason


@pytest.mark.parametrize(("row", "column"), UNLISTED, ids=lambda v: str(v))
def test_unlisted_cell_is_compatible(row: str, column: str) -> None:
    check(txn(row), txn(column), C)


@pytest.mark.parametrize(("row", "column"), sorted(OVERLAP_CELLS), ids=lambda v: str(v))
def test_overlap_cells_need_a_common_fragment(row: str, column: str) -> None:
    check(txn(row, [1, 2]), txn(column, [3, 4]), C)
    verdict = check(txn(row, [1, 2]), txn(column, [2, 3]), OVERLAP_CELLS[row, column])
    assert "[2]" in verdict.reason  # the common fragment is named


@pytest.mark.parametrize(("row", "column"),
                         [("Delete", "Merge"), ("Update", "Merge"), ("Rewrite", "Merge"),
                          ("DataReplacement", "Merge"),
                          ("Merge", "Delete"), ("Merge", "Rewrite"), ("Merge", "DataReplacement"),
                          ("Merge", "Update"), ("Merge", "Merge")])
def test_merge_cells_do_not_depend_on_overlap(row: str, column: str) -> None:
    check(txn(row, [1, 2]), txn(column, [3, 4]), R)


def test_reason_names_operations_and_version() -> None:
    verdict = judge(txn("Append"), txn("Overwrite"), concurrent_version=4)
    assert verdict == Verdict(X, "Append is incompatible with a concurrent Overwrite (version 4)")


# --- Delete / Update against Delete / Update -----------------------------------------------------------


@pytest.mark.parametrize("row", ["Delete", "Update"])
@pytest.mark.parametrize("column", ["Delete", "Update"])
def test_deletion_vectors_on_same_fragment_rebase(row: str, column: str) -> None:
    verdict = check(txn(row, [0]), txn(column, [0]), B)
    assert "[0]" in verdict.reason


@pytest.mark.parametrize("row", ["Delete", "Update"])
@pytest.mark.parametrize("column", ["Delete", "Update"])
def test_fragment_removed_whole_by_concurrent_is_retryable(row: str, column: str) -> None:
    check(txn(row, [0]), txn(column, [], removed=[0]), R)
    check(txn(row, [0]), txn(column, [], removed=[5]), C)
    check(txn(row, [0, 5]), txn(column, [0], removed=[7]), B)


@pytest.mark.parametrize("row", ["Delete", "Update"])
def test_fragment_removed_whole_by_committing_is_retryable(row: str) -> None:
    check(txn(row, [], removed=[0]), txn("Delete", [0]), R)
    check(txn(row, [3], removed=[4]), txn("Delete", [0]), C)


def test_delete_against_update_mem_wal_state_but_not_update() -> None:
    check(txn("Delete"), txn("UpdateMemWalState"), X)
    check(txn("Update"), txn("UpdateMemWalState"), C)


# --- indices ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted([FRAGMENT_REUSE_INDEX_NAME, MEM_WAL_INDEX_NAME]))
def test_singleton_index(name: str) -> None:
    check(txn("CreateIndex", name=name), txn("CreateIndex", name=name), B)


def test_regular_indices_never_clash() -> None:
    check(txn("CreateIndex", name="a_idx"), txn("CreateIndex", name="a_idx"), C)
    check(txn("CreateIndex", name=FRAGMENT_REUSE_INDEX_NAME), txn("CreateIndex", name="a_idx"), C)


def test_index_without_bitmap_overlaps_every_rewrite() -> None:
    check(txn("CreateIndex", [1], no_bitmap=True), txn("Rewrite", [9]), R)
    check(txn("Rewrite", [9]), txn("CreateIndex", [1], no_bitmap=True), R)


def test_rewrite_after_fragment_reuse_index_rebases() -> None:
    check(txn("Rewrite", [1]), txn("CreateIndex", [1], name=FRAGMENT_REUSE_INDEX_NAME), B)


def test_data_replacement_against_index_depends_on_fields() -> None:
    check(txn("CreateIndex", fields=[0]), txn("DataReplacement", fields=[0, 1]), R)
    check(txn("CreateIndex", fields=[0]), txn("DataReplacement", fields=[1]), C)
    check(txn("DataReplacement", fields=[1]), txn("CreateIndex", fields=[1]), R)
    check(txn("DataReplacement", fields=[1]), txn("CreateIndex", fields=[0]), C)


def test_data_replacement_needs_same_fragment_and_field() -> None:
    check(txn("DataReplacement", [1], fields=[0]), txn("DataReplacement", [1], fields=[0]), R)
    check(txn("DataReplacement", [1], fields=[0]), txn("DataReplacement", [1], fields=[1]), C)
    check(txn("DataReplacement", [1], fields=[0]), txn("DataReplacement", [2], fields=[0]), C)


def test_deprecated_rewrite_form_counts() -> None:
    old = T(read_version=1, rewrite=T.Rewrite(old_fragments=_frags([4]), new_fragments=_frags([9])))
    assert touched_fragments(old) == {4}
    check(txn("Delete", [4]), old, R)


# --- config ---------------------------------------------------------------------------------------


def _uc(**fields: Any) -> T:
    return txn("UpdateConfig", update_config=T.UpdateConfig(**fields))


def test_update_config_keys() -> None:
    check(_uc(config_updates=_config(("a", "1"))), _uc(config_updates=_config(("b", "1"))), C)
    check(_uc(config_updates=_config(("a", "1"))), _uc(config_updates=_config(("a", "2"))), X)
    check(_uc(config_updates=_config(("a", "1"))), _uc(config_updates=_config(("a", None))), X)
    check(_uc(config_updates=_config(("a", None))), _uc(config_updates=_config(("a", "1"))), X)
    check(_uc(config_updates=_config(("a", None))), _uc(config_updates=_config(("a", None))), C)
    check(_uc(upsert_values={"a": "1"}), _uc(config_updates=_config(("a", "2"))), X)  # deprecated form
    check(_uc(delete_keys=["a"]), _uc(upsert_values={"a": "2"}), X)


def test_update_config_metadata() -> None:
    schema = _config(("owner", "x"))
    check(_uc(schema_metadata_updates=schema), _uc(schema_metadata_updates=schema), X)
    check(_uc(schema_metadata={"owner": "x"}), _uc(schema_metadata_updates=schema), X)
    check(_uc(schema_metadata_updates=schema), _uc(config_updates=_config(("a", "1"))), C)
    check(_uc(field_metadata_updates={1: schema}), _uc(field_metadata_updates={1: schema}), X)
    check(_uc(field_metadata_updates={1: schema}), _uc(field_metadata_updates={2: schema}), C)
    check(_uc(table_metadata_updates=schema), _uc(table_metadata_updates=schema), C)  # not in the matrix


def test_update_config_against_any_overwrite() -> None:
    check(_uc(config_updates=_config(("a", "1"))), txn("Overwrite", config={}), X)


def test_overwrite_against_update_config_on_same_key() -> None:
    check(txn("Overwrite", config={"a": "1"}), _uc(config_updates=_config(("a", "2"))), R)
    check(txn("Overwrite", config={"a": "1"}), _uc(config_updates=_config(("a", None))), R)
    check(txn("Overwrite", config={"a": "1"}), _uc(config_updates=_config(("b", "2"))), C)
    check(txn("Overwrite", config={}), _uc(config_updates=_config(("b", "2"))), C)
    check(txn("Overwrite", config={}), txn("Overwrite", config={}), R)


# --- UpdateBases ----------------------------------------------------------------------------------


def _ub(*bases: table_pb2.BasePath) -> T:
    return txn("UpdateBases", bases=list(bases))


@pytest.mark.parametrize(("mine", "theirs", "expected"), [
    ([_base("/x", "a")], [_base("/y", "b")], C),
    ([_base("/x", "a")], [_base("/y", "a")], X),  # same name
    ([_base("/x")], [_base("/y")], X),  # two unnamed bases: names compare as optionals
    ([_base("/x", "a")], [_base("/y")], C),
    ([_base("/x", "")], [_base("/y")], C),  # "" is a name, distinct from no name
    ([_base("/x", "a")], [_base("/x", "b")], X),  # same path
    ([_base("/x", "a", id=5)], [_base("/y", "b", id=5)], X),  # same non-zero id
    ([_base("/x", "a", id=0)], [_base("/y", "b", id=0)], C),  # ids 0 = assigned at commit
    ([_base("/x", "a", id=5)], [_base("/y", "b", id=6)], C),
    ([_base("/x", "a"), _base("/z", "c")], [_base("/y", "b"), _base("/z", "d")], X),
    ([], [_base("/y")], C),
], ids=lambda v: repr(v) if isinstance(v, Resolution) else None)
def test_update_bases(mine: list[table_pb2.BasePath], theirs: list[table_pb2.BasePath],
                      expected: Resolution) -> None:
    check(_ub(*mine), _ub(*theirs), expected)
    check(_ub(*theirs), _ub(*mine), expected)


@pytest.mark.parametrize("other", [k for k in KINDS if k not in ("UpdateBases", "Clone")])
def test_update_bases_never_conflicts_with_data_operations(other: str) -> None:
    check(_ub(_base("/b", "b")), txn(other), C)
    check(txn(other), _ub(_base("/b", "b")), LISTED.get((other, "UpdateBases"), C))


# --- helpers ---------------------------------------------------------------------------------------


def test_touched_fragments() -> None:
    assert touched_fragments(txn("Delete", [1], removed=[2])) == {1, 2}
    assert touched_fragments(txn("Update", [1], removed=[3])) == {1, 3}  # not the new fragment 1000
    assert touched_fragments(txn("Rewrite", [4, 5])) == {4, 5}
    assert touched_fragments(txn("DataReplacement", [6])) == {6}
    assert touched_fragments(txn("Merge", [0, 1])) == {0, 1}
    for kind in ("Append", "Overwrite", "Clone", "CreateIndex", "Restore", "UpdateBases", "Project"):
        assert touched_fragments(txn(kind)) == frozenset(), kind
    assert removed_fragments(txn("Delete", [1], removed=[2])) == {2}
    assert removed_fragments(txn("Rewrite")) == frozenset()


def test_indexed_fragments() -> None:
    assert set(indexed_fragments(txn("CreateIndex", [3, 70000])) or ()) == {3, 70000}
    assert indexed_fragments(txn("CreateIndex", no_bitmap=True)) is None
    broken = txn("CreateIndex")
    broken.create_index.new_indices[0].fragment_bitmap = b"not a bitmap"
    assert indexed_fragments(broken) is None
    assert not indexed_fragments(txn("Append")) and indexed_fragments(txn("Append")) is not None


def test_operation_of() -> None:
    assert [operation_of(txn(k)) for k in KINDS] == list(KINDS)
    with pytest.raises(ValueError, match="no operation"):
        operation_of(T(read_version=1))
    with pytest.raises(ValueError):
        judge(T(read_version=1), txn("Append"))


# --- properties -----------------------------------------------------------------------------------

fragment_sets = st.frozensets(st.integers(min_value=0, max_value=40), max_size=6)


@given(row=st.sampled_from(KINDS), column=st.sampled_from(KINDS), a=fragment_sets, b=fragment_sets,
       version=st.none() | st.integers(min_value=1, max_value=2**63))
def test_judge_never_raises(row: str, column: str, a: frozenset[int], b: frozenset[int],
                            version: int | None) -> None:
    verdict = judge(txn(row, sorted(a)), txn(column, sorted(b)), concurrent_version=version)
    assert isinstance(verdict.resolution, Resolution)
    assert row in verdict.reason and column in verdict.reason
    if version is not None:
        assert f"(version {version})" in verdict.reason
    if (row, column) not in LISTED and (row, column) not in OVERLAP_CELLS and (row, column) != (
            "CreateIndex", "CreateIndex"):
        assert verdict.resolution is C


@given(cell=st.sampled_from(sorted(OVERLAP_CELLS)), a=fragment_sets, b=fragment_sets)
def test_overlap_cells_flip_exactly_on_intersection(cell: tuple[str, str], a: frozenset[int],
                                                   b: frozenset[int]) -> None:
    row, column = cell
    verdict = judge(txn(row, sorted(a)), txn(column, sorted(b)))
    assert verdict.resolution is (OVERLAP_CELLS[cell] if a & b else C), verdict.reason


@given(row=st.sampled_from(["Delete", "Update"]), column=st.sampled_from(["Delete", "Update"]),
       a_updated=fragment_sets, a_removed=fragment_sets, b_updated=fragment_sets, b_removed=fragment_sets)
def test_deletion_vector_cells(row: str, column: str, a_updated: frozenset[int], a_removed: frozenset[int],
                               b_updated: frozenset[int], b_removed: frozenset[int]) -> None:
    a_updated, b_updated = a_updated - a_removed, b_updated - b_removed
    shared = (a_updated | a_removed) & (b_updated | b_removed)
    expected = C if not shared else R if shared & (a_removed | b_removed) else B
    verdict = judge(txn(row, sorted(a_updated), removed=sorted(a_removed)),
                    txn(column, sorted(b_updated), removed=sorted(b_removed)))
    assert verdict.resolution is expected, verdict.reason
