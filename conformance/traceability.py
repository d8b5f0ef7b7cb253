"""The traceability matrix (spec/traceability.toml): every normative or checkable statement of the five
source documents, paraphrased, with its disposition — the requirements that cover it (fully or partly),
the reason it is not adopted, or the statement of another document it repeats.

``check_matrix`` holds the matrix and the catalogue to each other: every statement has exactly one
disposition, every requirement it names exists, and every requirement's ``statements`` are exactly the
statements that name it. ``case_problems`` holds the matrix and the breach cases to each other: a covered
statement names at least one breach case (``cases``, a must-reject case of the golden corpus that breaks it,
``conformance.corpus.breaches``), each case it names expects one of its requirements, and each
case's statements name it back. ``render_matrix`` is the part of spec/README.md that shows the counts.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .catalogue import Requirement


class MatrixError(Exception):
    """The traceability matrix (spec/traceability.toml) breaks its own rules or disagrees with the catalogue."""


#: Why a statement is not adopted as a requirement.
REASONS = ("guidance", "contradicted", "untestable", "out of scope")
DISPOSITIONS = ("covered", "partly", "not_adopted", "same_as")
_ID = re.compile(r"^([A-Z]{2})-(\d{3})$")


@dataclass(frozen=True)
class Statement:
    """One statement of one document and what became of it."""

    id: str
    document: str
    section: str
    says: str
    disposition: str  # one of DISPOSITIONS
    requirements: tuple[str, ...] = ()  # covered / partly
    note: str = ""  # gap (partly), why (not_adopted)
    reason: str = ""  # not_adopted
    same_as: str = ""
    cases: tuple[str, ...] = ()  # covered (at least one) / partly: breach cases of the golden corpus


@dataclass(frozen=True)
class Reading:
    """Where the documents contradict one another, the reading spec/ takes."""

    topic: str
    statements: tuple[str, ...]
    reading: str


@dataclass(frozen=True)
class Matrix:
    documents: dict[str, str]
    statements: dict[str, Statement]
    readings: tuple[Reading, ...]

    def counts(self) -> Counter[str]:
        """Distinct statements (repeats merged) by disposition, and not-adopted ones by reason."""
        out: Counter[str] = Counter()
        for s in self.statements.values():
            if s.disposition == "same_as":
                out["repeats"] += 1
                continue
            out["statements"] += 1
            out[s.disposition] += 1
            if s.disposition == "not_adopted":
                out[f"not adopted: {s.reason}"] += 1
        return out

    def covered_share(self) -> float:
        """Fully covered statements as a share of the adoptable ones (covered + partly)."""
        c = self.counts()
        adoptable = c["covered"] + c["partly"]
        return c["covered"] / adoptable if adoptable else 1.0


def _statement(entry: dict[str, object], documents: dict[str, str]) -> Statement:
    sid = str(entry.get("id", ""))
    match = _ID.match(sid)
    if not match or match.group(1) not in documents:
        raise MatrixError(f"statement id {sid!r} is not XX-NNN with XX a document of [documents]")
    if not entry.get("section") or not entry.get("says"):
        raise MatrixError(f"{sid}: section and says are required")
    present = [d for d in DISPOSITIONS if d in entry]
    if len(present) != 1:
        raise MatrixError(f"{sid}: needs exactly one disposition of {DISPOSITIONS}, has {present or 'none'}")
    kind = present[0]
    base = Statement(sid, documents[match.group(1)], str(entry["section"]), str(entry["says"]), kind)
    if kind in ("covered", "partly"):
        requirements = entry[kind]
        if not isinstance(requirements, list) or not requirements:
            raise MatrixError(f"{sid}: {kind} must list at least one requirement id")
        if kind == "partly" and not entry.get("gap"):
            raise MatrixError(f"{sid}: a partly covered statement says what is not covered (gap)")
        cases = entry.get("cases", [])
        if not isinstance(cases, list) or not all(isinstance(c, str) for c in cases):
            raise MatrixError(f"{sid}: cases must be a list of breach case ids")
        return replace(base, requirements=tuple(map(str, requirements)), note=str(entry.get("gap", "")),
                       cases=tuple(cases))
    if "cases" in entry:
        raise MatrixError(f"{sid}: only a covered or partly covered statement names breach cases")
    if kind == "not_adopted":
        if entry["not_adopted"] not in REASONS:
            raise MatrixError(f"{sid}: not_adopted reason must be one of {REASONS}")
        if not entry.get("why"):
            raise MatrixError(f"{sid}: a statement not adopted says why")
        return replace(base, reason=str(entry["not_adopted"]), note=str(entry["why"]))
    return replace(base, same_as=str(entry["same_as"]))


def parse_matrix(text: str) -> Matrix:
    """Parse and validate matrix TOML on its own (ids, dispositions, repeats that resolve)."""
    data = tomllib.loads(text)
    documents = {str(k): str(v) for k, v in data.get("documents", {}).items()}
    statements: dict[str, Statement] = {}
    for entry in data.get("statement", []):
        statement = _statement(entry, documents)
        if statement.id in statements:
            raise MatrixError(f"statement id {statement.id} appears twice")
        statements[statement.id] = statement
    for s in statements.values():
        if s.disposition == "same_as":
            target = statements.get(s.same_as)
            if target is None or target.disposition == "same_as":
                raise MatrixError(f"{s.id}: same_as {s.same_as!r} names no statement with a disposition of its own")
    readings = []
    for entry in data.get("reading", []):
        cited = tuple(map(str, entry.get("statements", ())))
        unknown = [c for c in cited if c not in statements]
        if not entry.get("topic") or not entry.get("reading") or not cited or unknown:
            raise MatrixError(f"reading {entry.get('topic')!r}: needs a topic, a reading and known statements "
                              f"(unknown: {unknown})")
        readings.append(Reading(str(entry["topic"]), cited, str(entry["reading"])))
    return Matrix(documents, statements, tuple(readings))


def check_matrix(matrix: Matrix, catalogue: dict[str, Requirement]) -> None:
    """Raise MatrixError unless the matrix and the catalogue agree: every requirement a statement names
    exists, and each requirement's ``statements`` are exactly those naming it."""
    naming: dict[str, set[str]] = {}
    for s in matrix.statements.values():
        for rid in s.requirements:
            if rid not in catalogue:
                raise MatrixError(f"{s.id} names requirement {rid}, which does not exist")
            naming.setdefault(rid, set()).add(s.id)
    for rid, req in catalogue.items():
        if set(req.statements) != naming.get(rid, set()):
            raise MatrixError(f"{rid} cites statements {sorted(req.statements)}, but the statements naming it are "
                              f"{sorted(naming.get(rid, set()))}")


#: A breach case as the matrix sees it: the requirement it must produce and the statements it breaks.
BreachIndex = Mapping[str, tuple[str, tuple[str, ...]]]


def breach_index() -> dict[str, tuple[str, tuple[str, ...]]]:
    """The registered breach cases (``conformance.corpus.breaches``) by id."""
    from .corpus.breaches import BREACHES

    return {b.id: (b.requirement, b.statements) for b in BREACHES.values()}


def case_problems(matrix: Matrix, breaches: BreachIndex) -> list[str]:
    """Where the matrix and the breach cases disagree (empty when they agree): a covered statement naming
    no case, a case that does not exist or expects a requirement the statement does not name, a case
    breaking a statement that does not name it."""
    problems = []
    for s in matrix.statements.values():
        if s.disposition == "covered" and not s.cases:
            problems.append(f"{s.id} is covered ({', '.join(s.requirements)}) but names no breach case: add one in "
                            "conformance/corpus/breach_*.py and list it under `cases`, or make the statement "
                            "partly covered saying what no breach can show")
        for case in s.cases:
            if case not in breaches:
                problems.append(f"{s.id} names breach case {case}, which is not registered")
                continue
            requirement, statements = breaches[case]
            if requirement not in s.requirements:
                problems.append(f"{s.id} names breach case {case}, which expects {requirement}, not one of the "
                                f"statement's requirements {list(s.requirements)}")
            if s.id not in statements:
                problems.append(f"{s.id} names breach case {case}, whose statements {list(statements)} omit it")
    for case, (_requirement, statements) in breaches.items():
        for sid in statements:
            named = matrix.statements.get(sid)
            if named is None or case not in named.cases:
                problems.append(f"breach case {case} breaks {sid}, which does not name it under `cases`")
    return problems


@cache
def load_matrix() -> Matrix:
    """The matrix shipped with lancespec (spec/traceability.toml)."""
    return parse_matrix(resources.files("spec").joinpath("traceability.toml").read_text())


def render_matrix(matrix: Matrix, breaches: BreachIndex | None = None) -> list[str]:
    """The README section: counts, the breach cases behind the covered statements, the readings taken where
    the documents disagree, the partly covered statements (with what is missing) and those not adopted."""
    breaches = breach_index() if breaches is None else breaches
    c = matrix.counts()
    distinct = [s for s in matrix.statements.values() if s.disposition != "same_as"]
    backed = [s for s in distinct if s.disposition == "covered" and s.cases]
    unbacked = [s.id for s in distinct if s.disposition == "covered" and not s.cases]
    reasons = ", ".join(f"{c[f'not adopted: {r}']} {r}" for r in REASONS)
    lines = [
        "## Traceability",
        "",
        f"[traceability.toml](traceability.toml) traces {len(matrix.statements)} statements of the five documents "
        f"({c['repeats']} of them repeat another document's statement and are merged), so "
        f"**{c['statements']} distinct statements**: **{c['covered']} covered**, **{c['partly']} partly covered**, "
        f"**{c['not_adopted']} not adopted** ({reasons}), **0 without a disposition**. Covered statements are "
        f"{matrix.covered_share():.0%} of the adoptable ones (covered + partly).",
        "",
        f"Every covered statement is backed by a breach case: a must-reject case of the golden corpus "
        f"(`fixtures/cases/breach-*`, docs/fixtures.md) that breaks it and that `lancespec certify` must flag with "
        f"its requirement and no other MUST. **{len(breaches)} breach cases**; **{len(backed)} covered statements "
        f"with a case**, **{len(unbacked)} covered without a case**"
        + (f" ({', '.join(unbacked)})." if unbacked else "."),
        "",
        "| document | statements | covered | partly | not adopted | repeats |",
        "|---|---|---|---|---|---|",
    ]
    for prefix, title in matrix.documents.items():
        mine = [s for s in matrix.statements.values() if s.id.startswith(prefix + "-")]
        n = Counter(s.disposition for s in mine)
        lines.append(f"| {title} | {len(mine)} | {n['covered']} | {n['partly']} | {n['not_adopted']} | "
                     f"{n['same_as']} |")
    lines += ["", "### Readings where the documents disagree", ""]
    for r in matrix.readings:
        lines.append(f"- **{r.topic}** ({', '.join(r.statements)}): {r.reading}")
    partly = [s for s in matrix.statements.values() if s.disposition == "partly"]
    lines += ["", "### Partly covered", ""]
    lines += [f"- {s.id} ({', '.join(s.requirements)}): {s.says} Not covered: {s.note}" for s in partly]
    not_adopted = [s for s in matrix.statements.values() if s.disposition == "not_adopted"]
    lines += ["", "### Not adopted", ""]
    lines += [f"- {s.id} ({s.reason}): {s.says} Why: {s.note}" for s in not_adopted]
    return lines
