"""COMMIT-002 judged on a dataset's history (conformance/checks/conflicts.py), held to pylance 14.0.2's own committer.

Every race of tests/interop/test_conflicts_pylance.py is replayed as a history: version ``base`` is made, the
winner commits, then the loser runs on a *fresh* handle and lands on top (as a correct writer that retried
would). The history is then forged in the one way a writer that skipped judging would leave it: the loser's
transaction says it was built on ``base``. Whether that history is a breach is not decided by lancespec: the
loser's transaction, with ``read_version = base``, is handed to pylance's committer on a copy of the dataset
without the loser's version (``LanceDataset.commit``). Where pylance refuses it, certify must report COMMIT-002
on the forged history (and no other MUST); where pylance lands it, the history pylance itself wrote must
certify with no MUST at all.

The pairs where pylance's committer and the documented matrix (docs/lance-format.md §7.3) part ways are listed
with their finding, and tested to keep parting that way.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

import lance
import pytest
from interop.test_conflicts_pylance import AGREEING, INCOMPATIBLE, LANDS, RETRYABLE, Action, classify, make_plain

from conformance.certify import certify
from conformance.corpus.breach_conflicts import set_read_version
from conformance.findings import Report
from conformance.shapes import DIVERGENCE_SHAPES
from reference.codec import decode_manifest_file, decode_transaction
from reference.layout import TRANSACTIONS_DIR, parse_manifest_name

pytestmark = pytest.mark.interop

#: Races whose forged history pylance's low-level committer judges otherwise than the matrix: a Delete or an
#: Update committed through ``LanceDataset.commit`` carries no affected rows, so pylance cannot rebase it on a
#: concurrent Delete or Update of the same fragment and calls it retryable (spec/findings.md C-001); the
#: matrix rebases, so the history is not a breach.
LOW_LEVEL_CANNOT_REBASE = {
    "delete-vs-delete-same-fragment", "update-vs-delete-same-fragment", "delete-vs-update-same-fragment",
    "update-vs-update-same-fragment",
}

#: Races this replay cannot show, and why.
NOT_SHOWN = {
    "project-vs-project": "the column the loser drops is gone after the winner dropped it",
    "replacement-after-compaction": "the fragment the loser replaces was compacted away",
    "stale-op-delete-after-overwrite": "the fragment the loser deletes from is gone after the overwrite",
    "compaction-after-compaction": "nothing is left to compact after the winner's compaction",
    "compaction-after-overwrite": "the overwrite leaves one fragment: nothing to compact",
    "compaction-after-index": "pylance 14.0.2's read_transaction cannot rebuild a Rewrite that carries rewritten "
                              "indices (TypeError in LanceOperation.RewrittenIndex), so its committer cannot be asked",
}


def _manifest_of(root: Path, version: int) -> Path:
    for entry in (root / "_versions").iterdir():
        name = parse_manifest_name(entry.name)
        if name is not None and name.version == version:
            return entry
    raise AssertionError(f"{root} has no manifest of version {version}")


@dataclasses.dataclass
class History:
    root: Path  # base, the winner's versions, then the loser's, all landed
    base: int
    loser_version: int
    oracle: str  # pylance's committer on the loser's transaction built on ``base``: lands | retryable | ...
    oracle_root: Path  # where the oracle committed (its history, when it landed)


def replay(tmp: Path, make: Callable[[str], object], winner: Action, loser: Action) -> History:
    root = tmp / "ds"
    make(str(root))
    base = lance.dataset(str(root)).version
    winner(lance.dataset(str(root)))
    latest = lance.dataset(str(root)).version
    loser(lance.dataset(str(root)))
    landed = lance.dataset(str(root)).version
    assert landed > latest, "the loser committed nothing on a fresh handle"
    txn = lance.dataset(str(root)).read_transaction(landed)
    assert txn is not None
    oracle_root = tmp / "oracle"
    shutil.copytree(root, oracle_root)
    _manifest_of(oracle_root, landed).unlink()
    error: BaseException | None = None
    try:
        lance.LanceDataset.commit(str(oracle_root), dataclasses.replace(txn, read_version=base), max_retries=1)
    except Exception as exc:  # pylance's verdict, classified below
        error = exc
    return History(root, base, landed, classify(error), oracle_root)


def musts(report: Report) -> list[tuple[str, int | None]]:
    return [(f.requirement, f.version) for f in report.findings if f.severity == "MUST"]


CASES = [case for case in AGREEING if case[0] not in NOT_SHOWN]


@pytest.mark.parametrize(("make", "winner", "loser"), [c[1:4] for c in CASES], ids=[c[0] for c in CASES])
def test_history_judged_as_pylance_commits(request: pytest.FixtureRequest, tmp_path: Path,
                                           make: Callable[[str], object], winner: Action, loser: Action) -> None:
    history = replay(tmp_path, make, winner, loser)
    race = request.node.callspec.id
    if history.oracle == LANDS:
        report = certify(str(history.oracle_root), all_versions=True)
        assert musts(report) == [], f"pylance committed this history itself: {report.findings}"
        return
    assert history.oracle in (RETRYABLE, INCOMPATIBLE), f"pylance failed otherwise: {history.oracle}"
    set_read_version(str(history.root), history.loser_version, history.base)
    report = certify(str(history.root), all_versions=True)
    if race in LOW_LEVEL_CANNOT_REBASE:
        assert musts(report) == [], "the matrix rebases a Delete/Update on a common fragment (C-001)"
        return
    assert musts(report) == [("COMMIT-002", history.loser_version)], report.findings
    finding = next(f for f in report.findings if f.requirement == "COMMIT-002")
    assert f"built on version {history.base}" in finding.message


def test_every_refusal_kind_is_shown() -> None:
    """The races above include pairs pylance refuses as incompatible and as retryable, and pairs it lands."""
    expected = {case[4] for case in CASES}
    assert {LANDS, RETRYABLE, INCOMPATIBLE} <= expected


def test_a_restore_after_appends_is_judged_clean(tmp_path: Path) -> None:
    """Restore lands on anything but UpdateMemWalState: a history with concurrent appends and a restore built
    before them is conformant (the restore's transaction keeps the old read_version, as pylance writes it)."""
    root = tmp_path / "ds"
    make_plain(str(root))
    stale = lance.dataset(str(root))
    for value in (1, 2):
        lance.write_dataset(lance.dataset(str(root)).to_table().slice(0, 1), str(root), mode="append")
        assert lance.dataset(str(root)).version == value + 1
    lance.LanceDataset.commit(str(root), lance.LanceOperation.Restore(1), read_version=stale.version)
    txn = decode_transaction((root / TRANSACTIONS_DIR / _only_txn_of(root, 4)).read_bytes())
    assert txn.read_version == 1 and txn.WhichOneof("operation") == "restore"
    assert musts(certify(str(root), all_versions=True)) == []


def _only_txn_of(root: Path, version: int) -> str:
    path = _manifest_of(root, version)
    return decode_manifest_file(path.read_bytes(), str(path)).manifest.transaction_file


def test_finding_config_update_after_overwrite_is_reported(tmp_path: Path) -> None:
    """F-038: pylance 14.0.2 lands an UpdateConfig that only sets config keys after a concurrent Overwrite; the
    matrix calls the pair incompatible, so certify reports the history pylance wrote as COMMIT-002, marked as
    the known divergence."""
    shape = DIVERGENCE_SHAPES["config_over_overwrite"](tmp_path / "work")
    report = certify(shape.uri, all_versions=True)
    found = [f for f in report.findings if f.requirement == "COMMIT-002"]
    assert [(f.version, f.known, f.code) for f in found] == [(3, "F-038", "config_keys_over_overwrite")]
    assert "UpdateConfig is incompatible with a concurrent Overwrite (version 2)" in found[0].message
