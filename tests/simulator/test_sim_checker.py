"""The checker against hand-built histories: a clean one passes, and each anomaly class is flagged with an
excerpt naming the operations involved. No server: the three views (history, wire log, final storage) are
built by hand."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from lancespec.reference.layout import ManifestNaming, manifest_name
from lancespec.simulator.checker import ANOMALY_CLASSES, FinalState, VersionState, check, op_of_row
from lancespec.simulator.history import History
from lancespec.simulator.proxy import WireWrite
from lancespec.simulator.workload import Op, initial_ids, row_id

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
        self.raw: list[tuple[float, int, str, Op, dict[str, Any]]] = []
        self.wire: list[WireWrite] = []
        self.final = FinalState(versions={"ds0": {1: VersionState("setup", INITIAL, read_version=0)}},
                                initial=("ds0",))

    def op(self, writer: int, index: int, kind: str, start: float, end: float, outcome: str,
           ids: Sequence[int] = (), dataset: str = "ds0", **value: Any) -> None:
        op = Op(writer, index, kind, dataset, tuple(ids), name=str(value.pop("name", "")))
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


def test_lost_commit_and_duplicate_version_on_last_writer_wins() -> None:
    run = clean()
    # w2#0 was also told v3: its manifest was accepted, then overwritten by w1's (last writer wins).
    run.op(2, 0, "append", 2.0, 3.1, "ok", C, version=3)
    run.put(2, 2.4, 3, "m3-other")
    kinds, result, history = run.check()
    assert "lost-commit" in kinds and "duplicate-version" in kinds and "lost-rows" in kinds
    lines = excerpt_names(result, history, "lost-commit")
    assert any("w2 ok" in line and "version 3" in line for line in lines)
    assert any("w1 ok" in line for line in lines)  # the operation whose manifest took the version
    assert result.by_invariant()["acknowledged-commits-kept"] == 1


def test_version_reused_after_cleanup_freed_it() -> None:
    run = clean()
    # a cleanup (w2#0) deletes v2's manifest once v3 exists; a slow writer (w3#0), whose PUT was built on
    # v1 long ago, lands on the freed name v2 and is told success.
    stale = (row_id(3, 0, 0),)
    run.op(2, 0, "cleanup", 3.1, 3.3, "ok")
    run.delete(2, 3.2, key(2))
    run.op(3, 0, "append", 1.2, 3.6, "ok", stale, version=2)
    run.put(3, 3.5, 2, "m2-stale")
    run.keep(2, "m2-stale", INITIAL + stale, read_version=1)
    kinds, result, history = run.check()
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


def test_vanished_version() -> None:
    run = clean()
    del run.final.versions["ds0"][3]
    kinds, _, _ = run.check()
    assert "vanished-version" in kinds


def test_version_gap() -> None:
    run = clean()
    run.op(2, 0, "append", 3.1, 4.0, "ok", C, version=5)
    run.put(2, 3.5, 5, "m5")
    run.keep(5, "m5", INITIAL + A + B + C, read_version=3)
    kinds, result, _ = run.check()
    assert "version-gap" in kinds
    gap = next(a for a in result.anomalies if a.kind == "version-gap")
    assert gap.version == 4


def test_unreadable_version() -> None:
    run = clean()
    run.keep(3, "m3", None, error="FormatError: bad footer", read_version=2)
    kinds, _, _ = run.check()
    assert kinds == ["unreadable-version"]


def test_lost_rows() -> None:
    run = clean()
    run.keep(3, "m3", INITIAL + B, read_version=2)
    kinds, result, history = run.check()
    assert kinds == ["lost-rows"]
    assert any("w0 invoke" in line for line in excerpt_names(result, history, "lost-rows"))


def test_duplicate_rows() -> None:
    run = clean()
    run.keep(3, "m3", INITIAL + A + A + B, read_version=2)
    kinds, _, _ = run.check()
    assert kinds == ["duplicate-rows"]


def test_phantom_rows_of_a_failed_operation() -> None:
    run = clean()
    run.op(2, 0, "append", 2.0, 2.2, "failed", C, error="CommitConflict")
    run.keep(3, "m3", INITIAL + A + B + C, read_version=2)
    kinds, _, _ = run.check()
    assert kinds == ["phantom-rows"]


def test_duplicate_commit() -> None:
    run = clean()
    # w1#0's transaction landed twice: a retry after a lost acknowledgement was committed as a new version.
    run.put(1, 2.8, 4, "m4-again")
    run.keep(4, "m4-again", INITIAL + A + B + B, read_version=2)
    kinds, _, _ = run.check()
    assert "duplicate-commit" in kinds and "duplicate-rows" in kinds


def test_gc_deleted_reachable() -> None:
    run = clean()
    run.op(2, 0, "cleanup", 3.1, 4.0, "ok")
    run.delete(2, 3.5, "ds0/data/abc.lance")
    run.keep(3, "m3", None, missing=("ds0/data/abc.lance",), read_version=2)
    kinds, result, history = run.check()
    assert "gc-deleted-reachable" in kinds and "unreadable-version" in kinds
    lines = excerpt_names(result, history, "gc-deleted-reachable")
    assert any("cleanup" in line for line in lines)


def test_unknown_resolved_both_ways() -> None:
    run = clean()
    # w2#0's outcome is unknown and no manifest of it was accepted (not committed), yet its rows are in v3.
    run.op(2, 0, "append", 2.0, 2.2, "unknown", C, error="reset")
    run.keep(3, "m3", INITIAL + A + B + C, read_version=2)
    kinds, result, _ = run.check()
    assert kinds == ["unknown-both-ways"]
    assert result.resolutions[(2, 0)] is False


def test_failed_but_committed() -> None:
    run = clean()
    run.op(2, 0, "append", 3.1, 4.0, "failed", C, error="CommitConflict")
    run.put(2, 3.5, 4, "m4")
    run.keep(4, "m4", INITIAL + A + B + C, read_version=3)
    kinds, _, _ = run.check()
    assert kinds == ["failed-but-committed"]


def test_unattributed_version() -> None:
    run = clean()
    run.put(1, 9.0, 4, "m4")  # w1 sent it after its only operation had completed
    run.keep(4, "m4", INITIAL + A + B, read_version=3)
    kinds, _, _ = run.check()
    assert kinds == ["unattributed-version"]


@pytest.mark.parametrize("kind", sorted(ANOMALY_CLASSES))
def test_every_anomaly_class_has_a_test(kind: str) -> None:
    """Each class in ANOMALY_CLASSES is produced by one of the hand-built histories above."""
    produced = {
        "lost-commit", "vanished-version", "duplicate-version", "version-reused", "version-gap",
        "unreadable-version", "lost-rows",
        "duplicate-rows", "phantom-rows", "duplicate-commit", "gc-deleted-reachable", "unknown-both-ways",
        "failed-but-committed", "unattributed-version",
    }
    assert kind in produced


def test_row_ids_name_their_operation() -> None:
    assert op_of_row(row_id(3, 17, 2)) == (3, 17)
    assert op_of_row(initial_ids(1)[0]) == (-1, 1)
