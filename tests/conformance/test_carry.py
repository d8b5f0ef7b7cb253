"""The carry of fragment-local findings across versions (``conformance.carry``): a fragment every version
holds unchanged is judged once per root, and the report is the lazy path's, where every version is judged
whole (the second source of truth, ``certify(..., lazy=True)``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conformance_kit import build_reference_dataset, certify_both_ways, rows

from conformance import certify as certify_module
from conformance.carry import context_key
from conformance.checks import REGISTRY, all_checks
from reference import ops
from reference.table import Dataset


def _fragments_judged(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Wrap files.data_files_exist so that each call records how many fragments it was given."""
    all_checks()
    seen: list[int] = []
    check = REGISTRY["files.data_files_exist"]
    original = check.func

    def counting(ctx: object) -> None:
        seen.append(len(ctx.snap.fragments))  # type: ignore[attr-defined]
        original(ctx)

    monkeypatch.setitem(REGISTRY, check.name, type(check)(check.name, check.scope, check.requirements, counting,
                                                           check.prefetch, check.fragment_local))
    return seen


def test_appends_judge_each_fragment_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = build_reference_dataset(tmp_path)  # v1: 3 fragments; v2: + 1
    dataset = Dataset(uri)
    ops.append(dataset, rows(16, 4))  # v3: + 1
    seen = _fragments_judged(monkeypatch)
    certify_module.certify(uri, all_versions=True)
    assert seen == [3, 1, 1]
    seen.clear()
    certify_module.certify(uri, all_versions=True, lazy=True)
    assert seen == [3, 4, 5]


def test_a_damaged_fragment_is_reported_in_every_version_that_holds_it(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path)
    ops.append(Dataset(uri), rows(16, 4))
    first = sorted((tmp_path / "ds" / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)[0]
    first.write_bytes(first.read_bytes()[:-3])
    report = certify_both_ways(uri, all_versions=True)
    assert sorted(f.version for f in report.findings if f.requirement == "BASE-004") == [1, 2, 3]


def test_a_delete_and_a_new_base_are_judged_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = build_reference_dataset(tmp_path, bases=True, deletions=["arrow"])  # v3 rewrites fragment 0
    dataset = Dataset(uri)
    ops.add_bases(dataset, [ops.DatasetBasePath(str(tmp_path / "more"), name="more")])  # v4: other context
    ops.append(dataset, rows(16, 4))  # v5: carried from v4
    seen = _fragments_judged(monkeypatch)
    certify_both_ways(uri, all_versions=True)
    assert seen[:5] == [3, 1, 4, 4, 1]


def test_the_context_ignores_only_what_every_version_changes(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path)
    dataset = Dataset(uri)
    first, second = dataset.snapshot(1), dataset.snapshot(2)
    assert context_key(first.manifest) == context_key(second.manifest)
    ops.add_bases(dataset, [ops.DatasetBasePath(str(tmp_path / "more"), name="more")])
    assert context_key(dataset.snapshot(3).manifest) != context_key(second.manifest)
