"""Reports list findings in one order whatever order they were found in (threads, Spark tasks): the order is
total over every field of a finding, so two findings that differ only in their branch or detail never swap."""

from __future__ import annotations

import itertools

from conformance.certify import order_findings
from conformance.findings import Finding


def _twins() -> list[Finding]:
    base = dict(requirement="CLONE-001", severity="MUST", version=3, path="/d/data/x.lance",
                message="inherited data file /d/data/x.lance does not exist")
    return [Finding(**base, branch="team/x", detail="fragment 0"),  # type: ignore[arg-type]
            Finding(**base, branch="team/x/sub", detail="fragment 0"),  # type: ignore[arg-type]
            Finding(**base, branch="team/x", detail="fragment 1"),  # type: ignore[arg-type]
            Finding(**base, branch=None, detail=None),  # type: ignore[arg-type]
            Finding(**{**base, "severity": "SHOULD"}, branch=None),  # type: ignore[arg-type]
            Finding(**base, branch=None, known="F-001")]  # type: ignore[arg-type]


def test_every_arrival_order_gives_one_list() -> None:
    twins = _twins()
    orders = {tuple(order_findings(p)) for p in itertools.permutations(twins)}
    assert len(orders) == 1
    assert len(next(iter(orders))) == len(twins)


def test_duplicates_are_dropped() -> None:
    twins = _twins()
    assert order_findings(twins + twins) == order_findings(twins)
