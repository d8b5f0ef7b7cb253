"""The requirement catalogue and the traceability matrix: load spec/requirements.toml and
spec/traceability.toml, hold them to their rules, and generate spec/README.md from both and from the
registered checks.

Which checks judge a requirement is written once, where each check is registered (``checks.version_check``,
``checks.dataset_check``): ``coverage`` derives each requirement's checks from there, and ``check_coverage``
holds checks, tests and requirements to each other.

    python -m lancespec.cli.catalogue --write    # regenerate spec/README.md
    python -m lancespec.cli.catalogue --check    # exit 1 when spec/README.md is stale
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from .traceability import Matrix, render_matrix

if TYPE_CHECKING:
    from .checks import Check


class CatalogueError(Exception):
    """The requirement catalogue (spec/requirements.toml) breaks its own rules."""


SEVERITIES = ("MUST", "SHOULD")
_ID = re.compile(r"^([A-Z]+)-(\d{3})$")
_KEYS = frozenset({"id", "severity", "rule", "source", "statements", "tests"})

DOCUMENTS = {
    "multi-base": "the Lance blog post on the multi-base layout",
    "storage-layout": "the Lance Storage Layout Specification",
    "table-format": "the Lance Table Format specification",
    "clones": "the Lance blog post \"Dive Deep into Clone Primitives in Lance Format\"",
    "blob-v2": "the Lance blog post \"Lance Blob V2\"",
    "implicit": "required by the format's working, stated by no document",
}


@dataclass(frozen=True)
class Requirement:
    """One normative statement. ``tests``: the test files that cover it beside the checks (which name their
    requirements themselves: ``coverage``)."""

    id: str
    severity: str
    rule: str
    document: str
    section: str
    tests: tuple[str, ...]
    statements: tuple[str, ...] = ()

    @property
    def area(self) -> str:
        return self.id.split("-")[0]


def parse_catalogue(text: str) -> dict[str, Requirement]:
    """Parse and validate catalogue TOML: ids well-formed and unique, severities known, sources named, no
    key but the known ones (a requirement does not name its checks: they name it)."""
    data = tomllib.loads(text)
    out: dict[str, Requirement] = {}
    for entry in data.get("requirement", []):
        rid = entry.get("id", "")
        if not _ID.match(rid):
            raise CatalogueError(f"requirement id {rid!r} is not AREA-NNN")
        if unknown := sorted(set(entry) - _KEYS):
            raise CatalogueError(f"{rid}: unknown key(s) {', '.join(unknown)} (checks name their requirements "
                                 "where they are registered)")
        if rid in out:
            raise CatalogueError(f"requirement id {rid} appears twice")
        if entry.get("severity") not in SEVERITIES:
            raise CatalogueError(f"{rid}: severity must be one of {SEVERITIES}")
        source = entry.get("source", {})
        if source.get("document") not in DOCUMENTS or not source.get("section"):
            raise CatalogueError(f"{rid}: source must name a known document and a section")
        if not entry.get("rule"):
            raise CatalogueError(f"{rid}: rule is empty")
        statements = tuple(entry.get("statements", ()))
        if not statements and source["document"] != "implicit":
            raise CatalogueError(f"{rid}: cites no statement of spec/traceability.toml")
        out[rid] = Requirement(rid, entry["severity"], entry["rule"], source["document"], source["section"],
                               tuple(entry.get("tests", ())), statements)
    return out


@cache
def load_catalogue() -> dict[str, Requirement]:
    """The catalogue shipped with lancespec (spec/requirements.toml)."""
    return parse_catalogue(resources.files("lancespec.spec").joinpath("requirements.toml").read_text())


def coverage(checks: Iterable[Check]) -> dict[str, tuple[str, ...]]:
    """Requirement id -> the names of the checks that declare it, in name order."""
    out: dict[str, list[str]] = {}
    for check in sorted(checks, key=lambda c: c.name):
        for rid in check.requirements:
            out.setdefault(rid, []).append(check.name)
    return {rid: tuple(names) for rid, names in out.items()}


def check_coverage(catalogue: Mapping[str, Requirement], checks: Iterable[Check]) -> None:
    """Raise CatalogueError unless checks and catalogue agree: every requirement a check declares exists,
    and every requirement (MUST or SHOULD) is judged by a check or names a test that covers it."""
    covered = coverage(checks)
    unknown = sorted(f"{name} declares {rid}" for rid, names in covered.items() if rid not in catalogue
                     for name in names)
    if unknown:
        raise CatalogueError(f"checks declare requirements the catalogue lacks: {'; '.join(unknown)}")
    uncovered = sorted(rid for rid, req in catalogue.items() if rid not in covered and not req.tests)
    if uncovered:
        raise CatalogueError(f"no check declares and no test covers {', '.join(uncovered)}")


def render_markdown(catalogue: dict[str, Requirement], matrix: Matrix, checks: Iterable[Check]) -> str:
    """The human-readable catalogue: the matrix's counts and readings, then the requirements grouped by
    area, in id order, each with the checks that declare it and the tests it names."""
    covered = coverage(checks)
    musts = sum(r.severity == "MUST" for r in catalogue.values())
    lines = [
        "# The requirement catalogue",
        "",
        "<!-- Generated from requirements.toml, traceability.toml and the registered checks by"
        " `python -m lancespec.cli.catalogue --write`."
        " Do not edit. -->",
        "",
        f"{len(catalogue)} requirements ({musts} MUST, {len(catalogue) - musts} SHOULD) drawn from the five source "
        "documents and from what the format requires without stating it. Each has a stable id (never "
        "renumbered), the rule in our words, its source, and the checks (`lancespec certify`) and tests that "
        "cover it. Divergences of pylance from these rules are in [findings.md](findings.md).",
        "",
        "Sources:",
        "",
    ]
    lines += [f"- `{doc}`: {title}" for doc, title in DOCUMENTS.items()]
    lines += ["", *render_matrix(matrix)]
    areas: dict[str, list[Requirement]] = {}
    for req in sorted(catalogue.values(), key=lambda r: (r.area, r.id)):
        areas.setdefault(req.area, []).append(req)
    for area, reqs in areas.items():
        lines += ["", f"## {area}", "", "| id | severity | rule | source | statements | covered by |",
                  "|---|---|---|---|---|---|"]
        for r in reqs:
            by = ", ".join(f"`{name}`" for name in (*covered.get(r.id, ()), *r.tests))
            lines.append(f"| {r.id} | {r.severity} | {r.rule} | `{r.document}`: {r.section} | "
                         f"{', '.join(r.statements)} | {by} |")
    return "\n".join(lines) + "\n"


def readme_path() -> Path:
    return Path(str(resources.files("lancespec.spec").joinpath("README.md")))
