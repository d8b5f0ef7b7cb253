"""The checker against hand-built histories: a clean one passes, and each anomaly class is flagged with an
excerpt naming the operations involved, through ``check`` and by its own function; the attribution and the
row model on their own. No server: the three views (history, wire log, final storage) are built by hand."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from conformance.operations import (
    Append,
    Cleanup,
    Delete,
    DeleteTag,
    Operation,
    Overwrite,
    ShallowClone,
    Tag,
)
from reference.layout import ManifestNaming, manifest_name
from simulator import checker
from simulator.attribution import SETUP, Breach, FinalState, VersionState, Where, attribute
from simulator.checker import ANOMALY_CLASSES, Anomaly, check
from simulator.history import History, OpKey
from simulator.proxy import WireWrite
from simulator.rowmodel import Observation, op_of_row, replay
from simulator.workload import Planned, initial_ids, row_id

INITIAL = tuple(initial_ids(0))
A = (row_id(0, 0, 0), row_id(0, 0, 1))  # w0#0's rows
B = (row_id(1, 0, 0),)  # w1#0's rows
C = (row_id(2, 0, 0),)  # w2#0's rows


def key(version: int, dataset: str = "ds0") -> str:
    return f"{dataset}/_versions/{manifest_name(version, ManifestNaming.V2)}"


class Run:
    """A hand-built run: operations with their invocation/completion times, manifests the endpoint accepted,
    and the retained versions."""

    def __init__(self) -> None:
        self.raw: list[tuple[float, int, str, Planned, dict[str, Any]]] = []
        self.wire: list[WireWrite] = []
        self.final = FinalState(versions={"ds0": {1: VersionState("setup", INITIAL, read_version=0)}},
                                initial=("ds0",))

    def op(self, writer: int, index: int, kind: str, start: float, end: float, outcome: str,
           ids: Sequence[int] = (), dataset: str = "ds0", **value: Any) -> None:
        """An operation of the plan's shape: ``kind`` an append, overwrite or delete of ``ids``, a cleanup, a
        tag_create or tag_delete of ``name``, or a clone (a tag, then a shallow clone) named ``name``."""
        name, start_id = str(value.pop("name", "")), ids[0] if ids else 0
        steps: dict[str, tuple[Operation, ...]] = {
            "append": (Append(dataset, start_id, len(ids), max_rows_per_file=None),),
            "overwrite": (Overwrite(dataset, start_id, len(ids), max_rows_per_file=None),),
            "delete": (Delete(dataset, tuple(ids)),), "cleanup": (Cleanup(dataset, retain_versions=1),),
            "tag_create": (Tag(dataset, name, None, None),), "tag_delete": (DeleteTag(dataset, name),),
            "clone": (Tag(dataset, name, None, None), ShallowClone(dataset, name, name))}
        op = Planned(writer, index, steps[kind])
        self.raw.append((start, writer, "invoke", op, {}))
        self.raw.append((end, writer, outcome, op, value))

    def put(self, client: int, t: float, version: int, md5: str, status: int = 200, dataset: str = "ds0") -> None:
        self.wire.append(WireWrite(client, t, "manifest-put", "b", key(version, dataset), status, md5))

    def delete(self, client: int, t: float, object_key: str) -> None:
        self.wire.append(WireWrite(client, t, "delete", "b", object_key, 204))

    def keep(self, version: int, md5: str, rows: Sequence[int] | None, dataset: str = "ds0", **kw: Any) -> None:
        self.final.versions.setdefault(dataset, {})[version] = VersionState(
            md5, None if rows is None else tuple(rows), **kw)

    def check(self) -> tuple[list[str], Any, History]:
        history = History.build(self.raw)
        result = check(history, self.wire, self.final)
        return [a.kind for a in result.anomalies], result, history


def clean() -> Run:
    """w0 appends A (v2), w1 appends B (v3); every version retained and right."""
    run = Run()
    run.op(0, 0, "append", 1.0, 2.0, "ok", A, version=2)
    run.put(0, 1.5, 2, "m2")
    run.op(1, 0, "append", 2.1, 3.0, "ok", B, version=3)
    run.put(1, 2.5, 3, "m3")
    run.keep(2, "m2", INITIAL + A, read_version=1)
    run.keep(3, "m3", INITIAL + A + B, read_version=2)
    return run


def test_clean_history_has_no_anomaly() -> None:
    kinds, result, _ = clean().check()
    assert kinds == []
    assert result.commits == 2
    assert result.owners[("ds0", 2)] == (0, 0) and result.owners[("ds0", 3)] == (1, 0)


def test_clean_history_with_delete_overwrite_clone_cleanup_and_unknowns() -> None:
    run = clean()
    # w2#0 deletes A (v4, read at v3); w0#1 overwrites with C' (v5); w1#1's append is unknown and did
    # commit (v6); w2#1's append is unknown and did not (its manifest PUT was refused); w0#2 clones v6.
    over = (row_id(0, 1, 0),)
    late = (row_id(1, 1, 0),)
    run.op(2, 0, "delete", 3.1, 4.0, "ok", A, version=4)
    run.put(2, 3.5, 4, "m4")
    run.op(0, 1, "overwrite", 4.1, 5.0, "ok", over, version=5)
    run.put(0, 4.5, 5, "m5")
    run.op(1, 1, "append", 5.1, 6.0, "unknown", late, error="reset")
    run.put(1, 5.5, 6, "m6")
    run.op(2, 1, "append", 5.2, 6.1, "unknown", (row_id(2, 1, 0),), error="reset")
    run.put(2, 5.6, 6, "m6-refused", status=412)
    run.op(0, 2, "clone", 6.2, 7.0, "ok", version=6, source_version=6, name="clone-a")
    run.put(0, 6.5, 6, "c6", dataset="clone-a")
    # a cleanup removed v2 and v4 (and nothing they share with retained versions)
    run.op(1, 2, "cleanup", 7.1, 8.0, "ok")
    run.delete(1, 7.5, key(2))
    run.delete(1, 7.6, key(4))
    del run.final.versions["ds0"][2]
    run.keep(5, "m5", over, read_version=4)
    run.keep(6, "m6", over + late, read_version=5)
    run.keep(6, "c6", over + late, dataset="clone-a", read_version=6)
    kinds, result, _ = run.check()
    assert kinds == []
    assert result.resolutions == {(1, 1): True, (2, 1): False}


def excerpt_names(result: Any, history: History, kind: str) -> list[str]:
    anomaly = next(a for a in result.anomalies if a.kind == kind)
    lines = anomaly.excerpt(history)
    assert lines, f"{kind} has no excerpt"
    return lines


def last_writer_wins() -> Run:
    """w2#0 was also told v3: its manifest was accepted, then overwritten by w1's (last writer wins)."""
    run = clean()
    run.op(2, 0, "append", 2.0, 3.1, "ok", C, version=3)
    run.put(2, 2.4, 3, "m3-other")
    return run


def test_lost_commit_and_duplicate_version_on_last_writer_wins() -> None:
    kinds, result, history = last_writer_wins().check()
    assert "lost-commit" in kinds and "duplicate-version" in kinds and "lost-rows" in kinds
    lines = excerpt_names(result, history, "lost-commit")
    assert any("w2 ok" in line and "version 3" in line for line in lines)
    assert any("w1 ok" in line for line in lines)  # the operation whose manifest took the version
    assert result.by_invariant()["acknowledged-commits-kept"] == 1


def reused_after_cleanup() -> Run:
    """A cleanup (w2#0) deletes v2's manifest once v3 exists; a slow writer (w3#0), whose PUT was built on
    v1 long ago, lands on the freed name v2 and is told success."""
    run = clean()
    stale = (row_id(3, 0, 0),)
    run.op(2, 0, "cleanup", 3.1, 3.3, "ok")
    run.delete(2, 3.2, key(2))
    run.op(3, 0, "append", 1.2, 3.6, "ok", stale, version=2)
    run.put(3, 3.5, 2, "m2-stale")
    run.keep(2, "m2-stale", INITIAL + stale, read_version=1)
    return run


def test_version_reused_after_cleanup_freed_it() -> None:
    kinds, result, history = reused_after_cleanup().check()
    assert "version-reused" in kinds and "duplicate-version" not in kinds
    lost = [a for a in result.anomalies if a.kind == "lost-commit"]
    assert [a.message.split()[0] for a in lost] == ["w3#0"]  # the stale writer, not w0 whose v2 was collected
    lines = excerpt_names(result, history, "version-reused")
    assert any("cleanup" in line for line in lines) and any("w3 ok" in line for line in lines)


def test_version_reused_by_a_request_held_before_it_was_forwarded() -> None:
    """The endpoint's order is the forwarding order: a PUT that arrived before the cleanup's delete but was
    held (a pause) and forwarded after it took the freed name."""
    run = clean()
    stale = (row_id(3, 0, 0),)
    run.op(2, 0, "cleanup", 3.1, 3.3, "ok")
    run.delete(2, 3.2, key(2))
    run.op(3, 0, "append", 1.2, 3.6, "ok", stale, version=2)
    run.wire.append(WireWrite(3, 1.9, "manifest-put", "b", key(2), 200, "m2-stale", forwarded=3.4))
    run.keep(2, "m2-stale", INITIAL + stale, read_version=1)
    kinds, _, _ = run.check()
    assert "version-reused" in kinds and "duplicate-version" not in kinds


def vanished() -> Run:
    run = clean()
    del run.final.versions["ds0"][3]
    return run


def test_vanished_version() -> None:
    kinds, _, _ = vanished().check()
    assert "vanished-version" in kinds


def gapped() -> Run:
    run = clean()
    run.op(2, 0, "append", 3.1, 4.0, "ok", C, version=5)
    run.put(2, 3.5, 5, "m5")
    run.keep(5, "m5", INITIAL + A + B + C, read_version=3)
    return run


def test_version_gap() -> None:
    kinds, result, _ = gapped().check()
    assert "version-gap" in kinds
    gap = next(a for a in result.anomalies if a.kind == "version-gap")
    assert gap.version == 4


def unreadable() -> Run:
    run = clean()
    run.keep(3, "m3", None, error="FormatError: bad footer", read_version=2)
    return run


def test_unreadable_version() -> None:
    kinds, _, _ = unreadable().check()
    assert kinds == ["unreadable-version"]


def rows_lost() -> Run:
    run = clean()
    run.keep(3, "m3", INITIAL + B, read_version=2)
    return run


def test_lost_rows() -> None:
    kinds, result, history = rows_lost().check()
    assert kinds == ["lost-rows"]
    assert any("w0 invoke" in line for line in excerpt_names(result, history, "lost-rows"))


def rows_doubled() -> Run:
    run = clean()
    run.keep(3, "m3", INITIAL + A + A + B, read_version=2)
    return run


def test_duplicate_rows() -> None:
    kinds, _, _ = rows_doubled().check()
    assert kinds == ["duplicate-rows"]


def phantom_of_failed() -> Run:
    run = clean()
    run.op(2, 0, "append", 2.0, 2.2, "failed", C, error="CommitConflict")
    run.keep(3, "m3", INITIAL + A + B + C, read_version=2)
    return run


def test_phantom_rows_of_a_failed_operation() -> None:
    kinds, _, _ = phantom_of_failed().check()
    assert kinds == ["phantom-rows"]


def committed_twice() -> Run:
    """w1#0's transaction landed twice: a retry after a lost acknowledgement was committed as a new version."""
    run = clean()
    run.put(1, 2.8, 4, "m4-again")
    run.keep(4, "m4-again", INITIAL + A + B + B, read_version=2)
    return run


def test_duplicate_commit() -> None:
    kinds, _, _ = committed_twice().check()
    assert "duplicate-commit" in kinds and "duplicate-rows" in kinds


def gc_deleted() -> Run:
    run = clean()
    run.op(2, 0, "cleanup", 3.1, 4.0, "ok")
    run.delete(2, 3.5, "ds0/data/abc.lance")
    run.keep(3, "m3", None, missing=("ds0/data/abc.lance",), read_version=2)
    return run


def test_gc_deleted_reachable() -> None:
    kinds, result, history = gc_deleted().check()
    assert "gc-deleted-reachable" in kinds and "unreadable-version" in kinds
    lines = excerpt_names(result, history, "gc-deleted-reachable")
    assert any("cleanup" in line for line in lines)


def unknown_both() -> Run:
    """w2#0's outcome is unknown and no manifest of it was accepted (not committed), yet its rows are in v3."""
    run = clean()
    run.op(2, 0, "append", 2.0, 2.2, "unknown", C, error="reset")
    run.keep(3, "m3", INITIAL + A + B + C, read_version=2)
    return run


def test_unknown_resolved_both_ways() -> None:
    kinds, result, _ = unknown_both().check()
    assert kinds == ["unknown-both-ways"]
    assert result.resolutions[(2, 0)] is False


def failed_committed() -> Run:
    run = clean()
    run.op(2, 0, "append", 3.1, 4.0, "failed", C, error="CommitConflict")
    run.put(2, 3.5, 4, "m4")
    run.keep(4, "m4", INITIAL + A + B + C, read_version=3)
    return run


def test_failed_but_committed() -> None:
    kinds, _, _ = failed_committed().check()
    assert kinds == ["failed-but-committed"]


def unattributed() -> Run:
    run = clean()
    run.put(1, 9.0, 4, "m4")  # w1 sent it after its only operation had completed
    run.keep(4, "m4", INITIAL + A + B, read_version=3)
    return run


def test_unattributed_version() -> None:
    kinds, _, _ = unattributed().check()
    assert kinds == ["unattributed-version"]


def tag_overwritten() -> Run:
    """A delete of tag 'shared-0' (w2#1) ends; then w0#1 creates it and, after w0#1 was told so, w1#1 creates
    it again and is told so too: nothing deleted it between the two creates."""
    run = clean()
    run.op(2, 1, "tag_delete", 3.1, 3.3, "ok", name="shared-0")
    run.op(0, 1, "tag_create", 3.5, 3.9, "ok", name="shared-0", tag_version=3)
    run.op(1, 1, "tag_create", 4.0, 4.4, "ok", name="shared-0", tag_version=3)
    return run


def test_tag_overwritten_and_what_excuses_it() -> None:
    kinds, result, history = tag_overwritten().check()
    assert kinds == ["tag-overwritten"]
    assert any("w1 ok" in line and "shared-0" in line for line in excerpt_names(result, history, "tag-overwritten"))
    # both told at once (overlapping creates): still only one could have found the name free
    run = clean()
    run.op(0, 1, "tag_create", 3.5, 4.2, "ok", name="shared-0", tag_version=3)
    run.op(1, 1, "tag_create", 3.6, 4.1, "ok", name="shared-0", tag_version=3)
    assert run.check()[0] == ["tag-overwritten"]
    # a delete that certainly failed between them excuses nothing
    run = tag_overwritten()
    run.op(3, 0, "tag_delete", 3.95, 3.98, "failed", name="shared-0", error="tag 'shared-0' not found")
    assert run.check()[0] == ["tag-overwritten"]
    # a delete between them (told ok, or unknown) may have freed the name; a refused create, another name,
    # another dataset or a delete of another name: no anomaly
    for outcome in ("ok", "unknown"):
        run = tag_overwritten()
        run.op(3, 0, "tag_delete", 3.8, 4.05, outcome, name="shared-0")
        assert run.check()[0] == [], outcome
    run = clean()
    run.op(0, 1, "tag_create", 3.5, 3.9, "ok", name="shared-0", tag_version=3)
    run.op(1, 1, "tag_create", 4.0, 4.4, "failed", name="shared-0", error="tag 'shared-0' already exists")
    run.op(2, 1, "tag_create", 4.5, 4.6, "ok", name="shared-1", tag_version=3)
    run.op(3, 0, "tag_create", 4.7, 4.8, "ok", name="shared-0", dataset="ds1", tag_version=1)
    assert run.check()[0] == []


def format_breach() -> Run:
    """certify found a MUST breach at v3 (w1#0's version) and one on a branch's version (not attributed)."""
    run = clean()
    run.final.breaches = {"ds0": [Breach("COMMIT-002", 3, None, "version 3 was built on version 1 and ..."),
                                  Breach("MAN-002", 5, "feat", "fragment id 0 is used twice")]}
    return run


def test_format_breach_names_the_requirement_and_the_writer() -> None:
    kinds, result, history = format_breach().check()
    assert kinds == ["format-breach", "format-breach"]
    first, second = result.anomalies
    assert "ds0 v3: MUST COMMIT-002" in first.message and "written by w1#0" in first.message
    assert "(branch feat)" in second.message and "written by no operation" in second.message
    assert any("w1 ok" in line for line in first.excerpt(history))


@pytest.mark.parametrize("kind", sorted(ANOMALY_CLASSES))
def test_every_anomaly_class_has_a_test(kind: str) -> None:
    """Each class in ANOMALY_CLASSES is produced by one of the hand-built histories above."""
    produced = {
        "lost-commit", "vanished-version", "duplicate-version", "version-reused", "version-gap",
        "unreadable-version", "lost-rows",
        "duplicate-rows", "phantom-rows", "duplicate-commit", "gc-deleted-reachable", "unknown-both-ways",
        "failed-but-committed", "unattributed-version", "tag-overwritten", "format-breach",
    }
    assert kind in produced


def test_row_ids_name_their_operation() -> None:
    assert op_of_row(row_id(3, 17, 2)) == (3, 17)
    assert op_of_row(initial_ids(1)[0]) == (-1, 1)


# --- each anomaly function on its own, and the attribution and row model it reads ----------------------------

ROW_FUNCTIONS = {checker.lost_rows, checker.phantom_rows, checker.duplicate_rows, checker.unknown_both_ways}


def detect(function: Callable[..., list[Anomaly]], run: Run) -> tuple[list[Anomaly], History]:
    """``function``'s anomalies on ``run``, from the attribution (and the row model for the row classes)."""
    history = History.build(run.raw)
    att = attribute(history, run.wire, run.final)
    if function is checker.format_breaches:
        return function(att, run.final), history
    return (function(att, replay(att, run.final)) if function in ROW_FUNCTIONS else function(att)), history


def operations(anomaly: Anomaly, history: History) -> set[str]:
    """The operations the anomaly's excerpt shows, as ``w{writer}#{index}``."""
    return {f"w{e.op.writer}#{e.op.index}" for e in history.events if e.index in set(anomaly.events)}


#: the class, its function, the run that shows it, then per anomaly: (dataset, version, operations shown).
CASES: list[tuple[str, Callable[..., list[Anomaly]], Callable[[], Run], list[tuple[str, int, set[str]]]]] = [
    # told v3, and v3 holds w1#0's manifest: the one told and the one that owns
    ("lost-commit", checker.lost_commits, last_writer_wins, [("ds0", 3, {"w2#0", "w1#0"})]),
    # told v2, but took the name cleanup freed: the one told only
    ("lost-commit", checker.lost_commits, reused_after_cleanup, [("ds0", 2, {"w3#0"})]),
    ("vanished-version", checker.vanished_versions, vanished, [("ds0", 3, {"w1#0"})]),
    # two manifests accepted for v3 (w2#0's, then w1#0's), and two operations told v3
    ("duplicate-version", checker.duplicate_versions, last_writer_wins,
     [("ds0", 3, {"w2#0", "w1#0"}), ("ds0", 3, {"w1#0", "w2#0"})]),
    # the first committer, the cleanup that deleted its manifest, the stale writer that took the name
    ("version-reused", checker.reused_versions, reused_after_cleanup, [("ds0", 2, {"w0#0", "w2#0", "w3#0"})]),
    # v4 missing: the owners of v3 and v5
    ("version-gap", checker.version_gaps, gapped, [("ds0", 4, {"w1#0", "w2#0"})]),
    ("unreadable-version", checker.unreadable_versions, unreadable, [("ds0", 3, {"w1#0"})]),
    # w0#0's rows lacking in v3: the writer of the rows and the owner of v3
    ("lost-rows", checker.lost_rows, rows_lost, [("ds0", 3, {"w0#0", "w1#0"})]),
    ("duplicate-rows", checker.duplicate_rows, rows_doubled, [("ds0", 3, {"w0#0", "w1#0"})]),
    ("phantom-rows", checker.phantom_rows, phantom_of_failed, [("ds0", 3, {"w2#0", "w1#0"})]),
    # w1#0 owns v3 and v4: reported at its first version
    ("duplicate-commit", checker.duplicate_commits, committed_twice, [("ds0", 3, {"w1#0"})]),
    # the cleanup that deleted the file and the owner of the version that references it
    ("gc-deleted-reachable", checker.gc_deleted_reachable, gc_deleted, [("ds0", 3, {"w2#0", "w1#0"})]),
    ("unknown-both-ways", checker.unknown_both_ways, unknown_both, [("ds0", 3, {"w2#0", "w1#0"})]),
    ("failed-but-committed", checker.failed_but_committed, failed_committed, [("ds0", 4, {"w2#0"})]),
    # no operation wrote it: no excerpt
    ("unattributed-version", checker.unattributed_versions, unattributed, [("ds0", 4, set())]),
    # the two creates told ok; not the delete that ended before both
    ("tag-overwritten", checker.tags_overwritten, tag_overwritten, [("ds0", 3, {"w0#1", "w1#1"})]),
    # the owner of the version certify found in breach; a branch's version names no operation
    ("format-breach", checker.format_breaches, format_breach, [("ds0", 3, {"w1#0"}), ("ds0", 5, set())]),
]


@pytest.mark.parametrize(("kind", "function", "build", "expected"), CASES,
                         ids=[f"{f.__name__}-{b.__name__}" for _, f, b, _ in CASES])
def test_each_anomaly_function_finds_its_class_with_the_minimal_excerpt(
        kind: str, function: Callable[..., list[Anomaly]], build: Callable[[], Run],
        expected: list[tuple[str, int, set[str]]]) -> None:
    assert detect(function, clean())[0] == []
    found, history = detect(function, build())
    assert {a.kind for a in found} == {kind}
    assert [(a.dataset, a.version, operations(a, history)) for a in found] == expected


def test_every_anomaly_class_has_a_function_case() -> None:
    assert {kind for kind, *_ in CASES} == set(ANOMALY_CLASSES)


def test_attribution_of_a_reused_version() -> None:
    """Senders by arrival time, the owner by the retained manifest, the reuse with its three writes."""
    run = reused_after_cleanup()
    run.put(4, 0.5, 9, "m9")  # writer 4 ran nothing: no sender
    att = attribute(History.build(run.raw), run.wire, run.final)
    v2, v9 = att.versions[Where("ds0", 2)], att.versions[Where("ds0", 9)]
    assert [p.by for p in v2.puts] == [(0, 0), (3, 0)] and v2.owner == (3, 0)
    assert [(r.first.by, r.deletion.by, r.later.by) for r in v2.reuses] == [((0, 0), (2, 0), (3, 0))]
    assert v2.taken_by(OpKey(3, 0)) and not v2.taken_by(OpKey(0, 0))
    assert v9.owner is None and v9.state is None
    assert att.versions[Where("ds0", 1)].owner == SETUP
    assert att.told == {("ds0", 2): [(0, 0), (3, 0)], ("ds0", 3): [(1, 0)]}
    assert att.owned == {(3, 0): [("ds0", 2)], (1, 0): [("ds0", 3)]}
    assert att.deletions[key(2)][0].by == (2, 0)


def test_attribution_resolves_unknowns_and_lists_the_commits_the_model_applies() -> None:
    """An unknown outcome that owns a version committed (the model applies it where it owns, with the read
    version of its manifest); one that owns none did not; acknowledged ones apply where they were told."""
    run = clean()
    run.op(2, 0, "append", 3.1, 4.0, "unknown", C, error="reset")
    run.put(2, 3.5, 4, "m4")
    run.op(2, 1, "append", 4.1, 4.5, "unknown", (row_id(2, 1, 0),), error="reset")
    run.final.read_versions["m4"] = 3
    att = attribute(History.build(run.raw), run.wire, run.final)
    assert att.resolutions == {(2, 0): True, (2, 1): False}
    assert [(c.record.key, c.where, c.read_version) for c in att.commits] == [
        ((0, 0), ("ds0", 2), 1), ((1, 0), ("ds0", 3), 2), ((2, 0), ("ds0", 4), 3)]


def test_the_row_model_rebases_a_delete_over_appends_it_did_not_see() -> None:
    """A delete removes only the rows added at or before the version it read: w2#0 read v1, so A (added at
    v2) stays; B is removed by w0#1, which read v3."""
    run = clean()
    run.op(2, 0, "delete", 1.1, 3.5, "ok", A, version=4)
    run.put(2, 3.2, 4, "m4")
    run.op(0, 1, "delete", 3.6, 4.0, "ok", B, version=5)
    run.put(0, 3.8, 5, "m5")
    run.keep(4, "m4", INITIAL + A + B, read_version=1)
    run.keep(5, "m5", INITIAL + A, read_version=4)
    att = attribute(History.build(run.raw), run.wire, run.final)
    observed = {o.where: o for o in replay(att, run.final)}
    assert observed[Where("ds0", 4)].expected == frozenset(INITIAL + A + B)
    assert observed[Where("ds0", 5)].expected == frozenset(INITIAL + A)
    assert observed[Where("ds0", 1)].expected == frozenset(INITIAL)
    assert check(History.build(run.raw), run.wire, run.final).anomalies == []


def test_an_observation_names_the_operations_of_its_differences() -> None:
    o = Observation(Where("ds0", 3), frozenset(INITIAL + A), INITIAL + B + B)

    def by_op(found: dict[OpKey, list[int]]) -> dict[OpKey, list[int]]:
        return {op: sorted(ids) for op, ids in found.items()}

    assert by_op(o.lost()) == {(0, 0): sorted(A)}
    assert by_op(o.extra()) == {(1, 0): list(B)} and by_op(o.doubled()) == {(1, 0): list(B)}


def test_a_clone_is_modelled_from_its_source_version() -> None:
    """The clone's first version holds the rows of the source version it copied (v2), not the latest (v3)."""
    run = clean()
    run.op(0, 1, "clone", 3.1, 4.0, "ok", version=1, source_version=2, name="c")
    run.put(0, 3.5, 1, "c1", dataset="c")
    run.keep(1, "c1", INITIAL + A + B, dataset="c", read_version=0)
    att = attribute(History.build(run.raw), run.wire, run.final)
    observed = {o.where: o.expected for o in replay(att, run.final)}
    assert observed[Where("c", 1)] == frozenset(INITIAL + A)
    assert [(a.kind, a.dataset) for a in checker.phantom_rows(att, replay(att, run.final))] == [("phantom-rows", "c")]
