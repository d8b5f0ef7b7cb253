"""The requirement catalogue and the traceability matrix: load spec/requirements.toml and
spec/traceability.toml, hold them to their rules, and generate spec/README.md from both
(``python -m lancespec.cli.catalogue --write``).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from lancespec.reference.errors import CatalogueError

from .traceability import Matrix, render_matrix

SEVERITIES = ("MUST", "SHOULD")
_ID = re.compile(r"^([A-Z]+)-(\d{3})$")

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
    """One normative statement."""

    id: str
    severity: str
    rule: str
    document: str
    section: str
    checks: tuple[str, ...]
    tests: tuple[str, ...]
    statements: tuple[str, ...] = ()

    @property
    def area(self) -> str:
        return self.id.split("-")[0]


def parse_catalogue(text: str) -> dict[str, Requirement]:
    """Parse and validate catalogue TOML: ids well-formed and unique, severities known, sources named."""
    data = tomllib.loads(text)
    out: dict[str, Requirement] = {}
    for entry in data.get("requirement", []):
        rid = entry.get("id", "")
        if not _ID.match(rid):
            raise CatalogueError(f"requirement id {rid!r} is not AREA-NNN")
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
                               tuple(entry.get("checks", ())), tuple(entry.get("tests", ())), statements)
    return out


@cache
def load_catalogue() -> dict[str, Requirement]:
    """The catalogue shipped with lancespec (spec/requirements.toml)."""
    return parse_catalogue(resources.files("lancespec.spec").joinpath("requirements.toml").read_text())


def render_markdown(catalogue: dict[str, Requirement], matrix: Matrix) -> str:
    """The human-readable catalogue: the matrix's counts and readings, then the requirements grouped by
    area, in id order."""
    musts = sum(r.severity == "MUST" for r in catalogue.values())
    lines = [
        "# The requirement catalogue",
        "",
        "<!-- Generated from requirements.toml and traceability.toml by"
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
            covered = ", ".join([f"`{c}`" for c in r.checks] + [f"`{t}`" for t in r.tests])
            lines.append(f"| {r.id} | {r.severity} | {r.rule} | `{r.document}`: {r.section} | "
                         f"{', '.join(r.statements)} | {covered} |")
    return "\n".join(lines) + "\n"


def readme_path() -> Path:
    return Path(str(resources.files("lancespec.spec").joinpath("README.md")))
