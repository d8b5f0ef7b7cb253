"""The requirement catalogue: load spec/requirements.toml and hold it to its rules. The lowest floor of
the judge's data: the checks, the traceability matrix and the report read it; ``coverage`` holds it against
the registered checks and the matrix and renders spec/README.md.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path


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
    return parse_catalogue(resources.files("spec").joinpath("requirements.toml").read_text())


def readme_path() -> Path:
    return Path(str(resources.files("spec").joinpath("README.md")))
