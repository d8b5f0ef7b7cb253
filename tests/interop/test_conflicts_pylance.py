"""Differential tests of ``reference.conflicts.judge`` against the real pylance 14.0.2 committer.

Every race has the same shape: a dataset is created (version ``v``); a handle is opened at ``v``; a
*winner* commits one or more versions; then the *loser* commits through the stale handle, i.e. at
``read_version=v`` (``LanceDataset.commit(uri, op, read_version=v)`` or a dataset method on the stale
handle, with ``conflict_retries=0`` where the method has its own retry loop). pylance's outcome is one of

* ``lands``        -- the commit succeeded (judge: COMPATIBLE or REBASE),
* ``retryable``    -- "Retryable commit conflict" (or, through ``delete``/``update`` with no retries left,
  "Too many concurrent writers"),
* ``incompatible`` -- "Incompatible transaction".

The protos judged are the real ones: the winners' transactions are read back from the manifests (and
checked byte-identical to ``_transactions/*.txn``); the loser's attempted transaction is captured by
running the very same loser action on a copy of the dataset taken before the winner committed, where it
lands unopposed. judge() is then applied to the attempted transaction against each landed one in
ascending order, as the commit loop does (docs/lance-format.md §7.2 step 3).

Where pylance disagrees with the matrix of docs/lance-format.md §7.3, judge() is not bent: the test asserts
pylance's actual behaviour and is named ``test_finding_*`` (see the docstrings for the reproduction).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance import DatasetBasePath, LanceOperation
from lance.file import LanceFileWriter

from reference.codec import decode_manifest_file, decode_transaction
from reference.conflicts import Resolution, Verdict, judge, operation_of
from reference.layout import parse_manifest_name
from reference.proto import transaction_pb2

pytestmark = pytest.mark.interop

Transaction = transaction_pb2.Transaction
Action = Callable[[Any], object]  # takes a lance.LanceDataset handle

LANDS, RETRYABLE, INCOMPATIBLE = "lands", "retryable", "incompatible"
_OUTCOME_OF = {
    Resolution.COMPATIBLE: LANDS,
    Resolution.REBASE: LANDS,
    Resolution.RETRYABLE: RETRYABLE,
    Resolution.INCOMPATIBLE: INCOMPATIBLE,
}


# --- reading what landed ---------------------------------------------------------------------------


def transaction_at(uri: str, version: int) -> Transaction:
    """The transaction of ``version``: the manifest's inline copy, checked against ``_transactions/``."""
    versions = Path(uri) / "_versions"
    for entry in versions.iterdir():
        name = parse_manifest_name(entry.name)
        if name is not None and name.version == version:
            decoded = decode_manifest_file(entry.read_bytes(), str(entry))
            assert decoded.transaction is not None and decoded.transaction_bytes is not None
            txn_file = Path(uri) / "_transactions" / decoded.manifest.transaction_file
            assert txn_file.read_bytes() == decoded.transaction_bytes  # docs/lance-format.md §8
            assert decode_transaction(txn_file.read_bytes()) == decoded.transaction
            return decoded.transaction
    raise AssertionError(f"no manifest of version {version} under {versions}")


# --- races -----------------------------------------------------------------------------------------


@dataclass
class Race:
    read_version: int
    attempted: Transaction  # what the loser tried to commit (captured on the copy)
    landed: list[tuple[int, Transaction]]  # the winner's versions, ascending
    outcome: str  # lands | retryable | incompatible | error
    error: BaseException | None

    def verdict(self) -> Verdict:
        """judge() against each landed transaction in order; the first non-compatible one decides."""
        assert self.attempted.read_version == self.read_version
        verdicts = [judge(self.attempted, txn, concurrent_version=v) for v, txn in self.landed]
        for verdict in verdicts:
            if verdict.resolution in (Resolution.RETRYABLE, Resolution.INCOMPATIBLE):
                return verdict
        rebases = [v for v in verdicts if v.resolution is Resolution.REBASE]
        return rebases[0] if rebases else verdicts[-1]

    def expected(self) -> str:
        return _OUTCOME_OF[self.verdict().resolution]


def classify(exc: BaseException | None) -> str:
    if exc is None:
        return LANDS
    text = str(exc)
    if isinstance(exc, OSError) and ("Retryable commit conflict" in text or "Too many concurrent writers" in text):
        return RETRYABLE
    if isinstance(exc, OSError) and "Incompatible transaction" in text:
        return INCOMPATIBLE
    return "error"


def race(root: Path, make: Callable[[str], object], winner: Action, loser: Action) -> Race:
    uri, shadow = str(root / "ds"), str(root / "shadow")
    make(uri)
    shutil.copytree(uri, shadow)
    stale = lance.dataset(uri)
    base = stale.version

    shadow_handle = lance.dataset(shadow)
    loser(shadow_handle)
    attempted = transaction_at(shadow, lance.dataset(shadow).version)

    winner(lance.dataset(uri))
    latest = lance.dataset(uri).version
    landed = [(v, transaction_at(uri, v)) for v in range(base + 1, latest + 1)]
    assert landed, "the winner committed nothing"

    error: BaseException | None = None
    try:
        loser(stale)
    except Exception as exc:
        error = exc
    return Race(base, attempted, landed, classify(error), error)


# --- datasets and actions --------------------------------------------------------------------------


def make_plain(uri: str) -> None:
    """Version 1: 10 rows ``a = b = 0..9`` in fragments 0 (a < 5) and 1 (a >= 5)."""
    lance.write_dataset(pa.table({"a": list(range(10)), "b": list(range(10))}), uri, max_rows_per_file=5)


def make_two_files(uri: str) -> None:
    """Version 2: as ``make_plain`` but ``b`` (field 1) lives in its own data file in each fragment."""
    ds = lance.write_dataset(pa.table({"a": list(range(10))}), uri, max_rows_per_file=5)
    ds.add_columns({"b": "a * 10"})


def _new_rows(uri: str) -> list[Any]:
    return list(lance.fragment.write_fragments(pa.table({"a": [100], "b": [100]}), uri))


def commit(op: Callable[[Any], Any]) -> Action:
    """A low-level commit at the handle's version of the operation ``op(handle)`` builds."""
    return lambda d: lance.LanceDataset.commit(d.uri, op(d), read_version=d.version)


def append() -> Action:
    return commit(lambda d: LanceOperation.Append(_new_rows(d.uri)))


def overwrite() -> Action:
    return commit(lambda d: LanceOperation.Overwrite(d.schema, _new_rows(d.uri)))


def restore() -> Action:
    return commit(lambda d: LanceOperation.Restore(1))


def delete(predicate: str) -> Action:
    return lambda d: d.delete(predicate, conflict_retries=0)


def stale_delete(fragment_id: int, predicate: str) -> Action:
    """A LanceOperation.Delete built from the handle's fragment and committed at the handle's version."""
    def op(d: Any) -> Any:
        return LanceOperation.Delete([d.get_fragment(fragment_id).delete(predicate)], [], predicate)
    return commit(op)


def update(predicate: str) -> Action:
    return lambda d: d.update({"b": "b + 100"}, predicate, conflict_retries=0)


def compact() -> Action:
    return lambda d: d.optimize.compact_files()


def index(column: str) -> Action:
    return lambda d: d.create_scalar_index(column, "BTREE")


def replace_b(fragment_id: int) -> Action:
    """DataReplacement of field 1 (``b``) of one fragment (needs ``make_two_files``)."""
    def op(d: Any) -> Any:
        name = f"{uuid.uuid4().hex}.lance"
        path = os.path.join(d.uri, "data", name)
        writer = LanceFileWriter(path, pa.schema([pa.field("b", pa.int64())]), version="2.2")
        writer.write_batch(pa.table({"b": [7] * 5}))
        writer.close()
        new_file = lance.fragment.DataFile(name, [1], [0], 2, 2, os.path.getsize(path))
        return LanceOperation.DataReplacement([LanceOperation.DataReplacementGroup(fragment_id, new_file)])
    return commit(op)


def add_bases(root: Path, *bases: tuple[str, str | None, int | None]) -> Action:
    """``add_bases`` of (directory under root, name, id) triples."""
    def act(d: Any) -> object:
        made = []
        for directory, name, base_id in bases:
            (root / directory).mkdir(exist_ok=True)
            made.append(DatasetBasePath(str(root / directory), name=name, id=base_id))
        return d.add_bases(made)
    return act


# --- races where pylance and the matrix agree --------------------------------------------------------

# (id, make, winner, loser, expected pylance outcome); ``root`` is filled in for add_bases below.
AGREEING: list[tuple[str, Callable[[str], object], Action, Action, str]] = [
    ("append-vs-append", make_plain, append(), append(), LANDS),
    ("append-after-overwrite", make_plain, overwrite(), append(), INCOMPATIBLE),
    ("overwrite-after-append", make_plain, append(), overwrite(), LANDS),
    ("overwrite-after-overwrite", make_plain, overwrite(), overwrite(), RETRYABLE),
    ("append-after-restore", make_plain, restore(), append(), INCOMPATIBLE),
    ("restore-after-append", make_plain, append(), restore(), LANDS),
    # Delete vs Delete through two handles: same fragment rebases, other fragment is compatible.
    ("delete-vs-delete-same-fragment", make_plain, delete("a = 1"), delete("a = 2"), LANDS),
    ("delete-vs-delete-other-fragment", make_plain, delete("a = 1"), delete("a = 7"), LANDS),
    ("stale-op-delete-other-fragment", make_plain, delete("a = 1"), stale_delete(1, "a = 7"), LANDS),
    ("delete-after-overwrite", make_plain, overwrite(), delete("a = 1"), INCOMPATIBLE),
    ("stale-op-delete-after-overwrite", make_plain, overwrite(), stale_delete(0, "a = 2"), INCOMPATIBLE),
    ("delete-after-restore", make_plain, restore(), delete("a = 1"), INCOMPATIBLE),
    # A fragment removed whole by either side: the same rows were necessarily deleted by both.
    ("delete-after-whole-fragment-delete", make_plain, delete("a < 5"), delete("a = 2"), RETRYABLE),
    ("whole-fragment-delete-after-delete", make_plain, delete("a = 2"), delete("a < 5"), RETRYABLE),
    ("update-vs-delete-same-fragment", make_plain, delete("a = 1"), update("a = 2"), LANDS),
    ("delete-vs-update-same-fragment", make_plain, update("a = 2"), delete("a = 1"), LANDS),
    ("update-vs-update-other-fragment", make_plain, update("a = 7"), update("a = 2"), LANDS),
    ("update-vs-update-same-fragment", make_plain, update("a = 1"), update("a = 2"), LANDS),
    ("delete-after-merge", make_plain, lambda d: d.add_columns({"c": "a * 2"}), delete("a = 1"), RETRYABLE),
    ("update-after-merge", make_plain, lambda d: d.add_columns({"c": "a * 2"}), update("a = 1"), RETRYABLE),
    # Config and metadata.
    ("config-same-key", make_plain, lambda d: d.update_config({"k": "1"}), lambda d: d.update_config({"k": "2"}),
     INCOMPATIBLE),
    ("config-other-key", make_plain, lambda d: d.update_config({"k": "1"}), lambda d: d.update_config({"j": "2"}),
     LANDS),
    ("config-delete-vs-set", make_plain, lambda d: d.update_config({"k": None}),
     lambda d: d.update_config({"k": "2"}), INCOMPATIBLE),
    ("schema-metadata-twice", make_plain, lambda d: d.update_schema_metadata({"k": "1"}),
     lambda d: d.update_schema_metadata({"j": "2"}), INCOMPATIBLE),
    ("field-metadata-same-field", make_plain, lambda d: d.update_field_metadata({"a": {"k": "1"}}),
     lambda d: d.update_field_metadata({"a": {"j": "1"}}), INCOMPATIBLE),
    ("field-metadata-other-field", make_plain, lambda d: d.update_field_metadata({"a": {"k": "1"}}),
     lambda d: d.update_field_metadata({"b": {"j": "1"}}), LANDS),
    ("schema-metadata-after-overwrite", make_plain, overwrite(), lambda d: d.update_schema_metadata({"k": "1"}),
     INCOMPATIBLE),
    ("overwrite-after-config", make_plain, lambda d: d.update_config({"k": "1"}), overwrite(), LANDS),
    # Schema changes.
    ("project-vs-project", make_plain, lambda d: d.drop_columns(["b"]), lambda d: d.drop_columns(["b"]),
     RETRYABLE),
    ("project-after-append", make_plain, append(), lambda d: d.drop_columns(["b"]), LANDS),
    ("project-after-merge", make_plain, lambda d: d.add_columns({"c": "a * 2"}), lambda d: d.drop_columns(["b"]),
     RETRYABLE),
    ("merge-after-append", make_plain, append(), lambda d: d.add_columns({"c": "a * 2"}), RETRYABLE),
    ("append-after-merge", make_plain, lambda d: d.add_columns({"c": "a * 2"}), append(), LANDS),
    ("merge-after-project", make_plain, lambda d: d.drop_columns(["b"]), lambda d: d.add_columns({"c": "a * 2"}),
     INCOMPATIBLE),
    # Indices and compaction (compaction commits ReserveFragments, then Rewrite).
    ("index-after-append", make_plain, append(), index("a"), LANDS),
    ("index-after-index", make_plain, index("b"), index("a"), LANDS),
    ("index-after-overwrite", make_plain, overwrite(), index("a"), INCOMPATIBLE),
    ("index-after-compaction", make_plain, compact(), index("a"), RETRYABLE),
    ("compaction-after-index", make_plain, index("a"), compact(), RETRYABLE),
    ("compaction-after-delete", make_plain, delete("a = 1"), compact(), RETRYABLE),
    ("delete-after-compaction", make_plain, compact(), delete("a = 1"), RETRYABLE),
    ("compaction-after-compaction", make_plain, compact(), compact(), RETRYABLE),
    ("compaction-after-append", make_plain, append(), compact(), LANDS),
    ("compaction-after-overwrite", make_plain, overwrite(), compact(), INCOMPATIBLE),
    # DataReplacement (field b of fragment 0 unless said otherwise).
    ("replacement-after-update-same-fragment", make_two_files, update("a = 1"), replace_b(0), RETRYABLE),
    ("replacement-after-update-other-fragment", make_two_files, update("a = 7"), replace_b(0), LANDS),
    ("replacement-after-delete", make_two_files, delete("a = 1"), replace_b(0), LANDS),
    ("replacement-after-merge", make_two_files, lambda d: d.add_columns({"c": "a * 2"}), replace_b(0), RETRYABLE),
    ("replacement-vs-replacement-same-fragment", make_two_files, replace_b(0), replace_b(0), RETRYABLE),
    ("replacement-vs-replacement-other-fragment", make_two_files, replace_b(1), replace_b(0), LANDS),
    ("replacement-after-compaction", make_two_files, compact(), replace_b(0), RETRYABLE),
    ("replacement-after-index-on-field", make_two_files, index("b"), replace_b(0), RETRYABLE),
    ("replacement-after-index-on-other-field", make_two_files, index("a"), replace_b(0), LANDS),
    ("index-on-field-after-replacement", make_two_files, replace_b(0), index("b"), RETRYABLE),
    ("delete-after-replacement-same-fragment", make_two_files, replace_b(0), delete("a = 1"), RETRYABLE),
    ("delete-after-replacement-other-fragment", make_two_files, replace_b(1), delete("a = 1"), LANDS),
    ("update-after-replacement", make_two_files, replace_b(0), update("a = 1"), RETRYABLE),
    ("compaction-after-replacement", make_two_files, replace_b(0), compact(), RETRYABLE),
    ("merge-after-replacement", make_two_files, replace_b(0), lambda d: d.add_columns({"c": "a * 2"}), RETRYABLE),
]


def assert_agrees(r: Race, expected: str) -> None:
    verdict = r.verdict()
    assert r.outcome == expected, f"pylance: {r.outcome} ({r.error!r}); judge: {verdict.reason}"
    assert r.expected() == expected, f"judge: {verdict.reason}; pylance: {r.outcome} ({r.error!r})"


@pytest.mark.parametrize(("make", "winner", "loser", "expected"), [c[1:] for c in AGREEING],
                         ids=[c[0] for c in AGREEING])
def test_agrees(tmp_path: Path, make: Callable[[str], object], winner: Action, loser: Action,
                expected: str) -> None:
    assert_agrees(race(tmp_path, make, winner, loser), expected)


def test_error_names_both_operations(tmp_path: Path) -> None:
    r = race(tmp_path, make_plain, overwrite(), append())
    assert isinstance(r.error, OSError)
    assert "This Append transaction is incompatible with concurrent transaction Overwrite" in str(r.error)
    assert [operation_of(t) for _, t in r.landed] == ["Overwrite"]
    assert r.verdict().reason == "Append is incompatible with a concurrent Overwrite (version 2)"


def test_append_vs_append_protos(tmp_path: Path) -> None:
    """Both appends land (v2, v3); the v3 transaction still records read_version 1."""
    uri = str(tmp_path / "ds")
    make_plain(uri)
    for rows in ([1], [2]):
        lance.LanceDataset.commit(uri, LanceOperation.Append(
            list(lance.fragment.write_fragments(pa.table({"a": rows, "b": rows}), uri))), read_version=1)
    first, second = transaction_at(uri, 2), transaction_at(uri, 3)
    assert first.read_version == second.read_version == 1
    assert judge(second, first).resolution is Resolution.COMPATIBLE
    assert lance.dataset(uri).count_rows() == 12


# --- UpdateBases -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("first", "second", "expected"), [
    ((("b1", "x", None),), (("b2", "y", None),), LANDS),
    ((("b1", "x", None),), (("b2", "x", None),), INCOMPATIBLE),  # same name
    ((("b1", "x", None),), (("b1", "y", None),), INCOMPATIBLE),  # same path
    ((("b1", "x", 5),), (("b2", "y", 5),), INCOMPATIBLE),  # same explicit id
    ((("b1", "x", 5),), (("b2", "y", 6),), LANDS),
], ids=["other-name", "same-name", "same-path", "same-id", "other-id"])
def test_add_bases_vs_add_bases(tmp_path: Path, first: tuple[tuple[str, str | None, int | None], ...],
                                second: tuple[tuple[str, str | None, int | None], ...], expected: str) -> None:
    assert_agrees(race(tmp_path, make_plain, add_bases(tmp_path, *first), add_bases(tmp_path, *second)), expected)


def test_add_bases_after_append(tmp_path: Path) -> None:
    assert_agrees(race(tmp_path, make_plain, append(), add_bases(tmp_path, ("b1", "x", None))), LANDS)


def test_append_after_add_bases(tmp_path: Path) -> None:
    assert_agrees(race(tmp_path, make_plain, add_bases(tmp_path, ("b1", "x", None)), append()), LANDS)


def test_add_bases_ids_are_assigned_at_commit(tmp_path: Path) -> None:
    """The UpdateBases transaction keeps id 0 (assigned at commit), so auto ids never clash in judge()."""
    r = race(tmp_path, make_plain, add_bases(tmp_path, ("b1", "x", None)), add_bases(tmp_path, ("b2", "y", None)))
    assert [b.id for b in r.landed[0][1].update_bases.new_bases] == [0]
    assert sorted(lance.dataset(str(tmp_path / "ds")).base_paths()) == [1, 2]


# --- the committer's part: the same rows -------------------------------------------------------------


def test_same_rows_are_decided_by_the_committer(tmp_path: Path) -> None:
    """Not a disagreement. §7.3: Delete vs Delete on a common fragment rebases, "same rows => retryable".
    Which rows an updated fragment lost is not in the protos, so judge() answers REBASE and leaves the rows
    to the committer -- which, finding row 1 deleted by both, gives up (retries exhausted)."""
    r = race(tmp_path, make_plain, delete("a = 1"), delete("a = 1"))
    assert r.verdict().resolution is Resolution.REBASE
    assert r.outcome == RETRYABLE
    assert "Too many concurrent writers" in str(r.error)


# --- findings: pylance 14.0.2 differs from the documented matrix ---------------------------------------


def test_finding_low_level_delete_on_common_fragment_is_retryable(tmp_path: Path) -> None:
    """FINDING. §7.3 Delete row: a concurrent Delete on the same fragment is a *rebase*. pylance 14.0.2
    rebases it for ``ds.delete`` (test_agrees[delete-vs-delete-same-fragment]) but a ``LanceOperation.Delete``
    committed with ``LanceDataset.commit`` carries no affected-row set, so the committer cannot merge the
    deletion vectors and reports a retryable conflict, even for disjoint rows.

    Reproduction::

        ds = lance.write_dataset(pa.table({"a": range(10)}), uri, max_rows_per_file=5)   # v1
        op = LanceOperation.Delete([ds.get_fragment(0).delete("a = 2")], [], "a = 2")
        ds.delete("a = 1")                                                              # v2
        lance.LanceDataset.commit(uri, op, read_version=1)
        # CommitConflictError: Retryable commit conflict for version 2: This Delete transaction was
        # preempted by concurrent transaction Delete at version 2. Please retry.
    """
    r = race(tmp_path, make_plain, delete("a = 1"), stale_delete(0, "a = 2"))
    assert r.verdict().resolution is Resolution.REBASE  # the matrix
    assert r.outcome == RETRYABLE  # pylance
    assert type(r.error).__name__ == "CommitConflictError"
    assert "Retryable commit conflict" in str(r.error)


def test_finding_config_update_after_overwrite_lands(tmp_path: Path) -> None:
    """FINDING. §7.3 UpdateConfig row: incompatible with any concurrent Overwrite. pylance 14.0.2 lets an
    UpdateConfig that only sets config keys land after an Overwrite (it only refuses when the UpdateConfig
    changes schema or field metadata -- test_agrees[schema-metadata-after-overwrite] -- or, per the
    source, a config key the Overwrite also sets).

    Reproduction::

        ds = lance.write_dataset(pa.table({"a": [1]}), uri)                             # v1
        lance.write_dataset(pa.table({"a": [2]}), uri, mode="overwrite")                 # v2
        ds.update_config({"k": "1"})                                                     # lands as v3
    """
    r = race(tmp_path, make_plain, overwrite(), lambda d: d.update_config({"k": "1"}))
    assert r.verdict().resolution is Resolution.INCOMPATIBLE  # the matrix
    assert r.outcome == LANDS  # pylance
    assert lance.dataset(str(tmp_path / "ds")).config().get("k") == "1"


def test_finding_two_unnamed_bases_fail_outside_the_resolver(tmp_path: Path) -> None:
    """FINDING (document wording). §7.3 UpdateBases row says "the same (non-None) name", i.e. two unnamed
    bases do not conflict. judge() treats names as optionals (two unnamed bases clash, INCOMPATIBLE) and
    pylance 14.0.2 does fail the second commit for good -- but not with a commit conflict: its conflict
    check lets the pair through, and the manifest build then rejects the duplicate name ``None`` with a
    ValueError (the same check as §10.2 for a single add_bases call).

    Reproduction::

        ds = lance.write_dataset(pa.table({"a": [1]}), uri); stale = lance.dataset(uri)
        ds.add_bases([DatasetBasePath("/tmp/x1")])
        stale.add_bases([DatasetBasePath("/tmp/x2")])
        # ValueError: Invalid user input: Conflict detected: Base path with name 'None' or path '/tmp/x2'
        # already exists. Existing: name='None', path='/tmp/x1'
    """
    r = race(tmp_path, make_plain, add_bases(tmp_path, ("b1", None, None)), add_bases(tmp_path, ("b2", None, None)))
    assert r.verdict().resolution is Resolution.INCOMPATIBLE
    assert r.outcome == "error"
    assert isinstance(r.error, ValueError)
    assert "Conflict detected" in str(r.error) and "name 'None'" in str(r.error)
    assert sorted(lance.dataset(str(tmp_path / "ds")).base_paths()) == [1]
