"""Known divergences as data: which findings a documented divergence of a real writer explains.

spec/divergences.toml lists, per divergence of spec/findings.md that certify can see, the requirement it
breaches, the code of the findings it shows as (``Finding.code``: what is wrong, in a word that does not
change when a message is reworded) and optional predicates on where (a regular expression on the path, the
element named by the detail, the kind of root). Messages are never matched. ``annotate`` marks every
finding that matches an entry with the entry's finding id (``Finding.known``). No check knows about
divergences: the knowledge lives in the data file alone.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources

from .catalogue import load_catalogue
from .findings import Finding


class DivergenceFileError(Exception):
    """spec/divergences.toml breaks its own rules: a fault of lancespec's own data (exit 3)."""


_FINDING_ID = re.compile(r"^F-\d{3}$")
_CODE = re.compile(r"^([a-z][a-z0-9_]*|[A-Z]+-\d{3})$")  # a word, or the requirement id (its one kind)
_PREDICATES = ("path", "detail", "branch")


@dataclass(frozen=True)
class Divergence:
    """One entry: finding ``finding`` (an F-id of spec/findings.md) shows as findings of ``requirement``
    with code ``code`` whose path matches the expression ``path`` (``{root}`` standing for the certified
    root), whose detail is ``detail`` and, when ``branch`` is set, that are (True) or are not (False) about a
    branch root; each predicate holds when not given."""

    finding: str
    requirement: str
    code: str
    summary: str
    path: str | None = None
    detail: str | None = None
    branch: bool | None = None

    def matches(self, finding: Finding, root: str) -> bool:
        """Whether ``finding``, made certifying the dataset at ``root``, is this divergence."""
        if finding.requirement != self.requirement or finding.code != self.code:
            return False
        if self.branch is not None and (finding.branch is not None) != self.branch:
            return False
        if self.detail is not None and finding.detail != self.detail:
            return False
        return self.path is None or _compile(self.path, root).search(finding.path) is not None


@cache
def _compile(pattern: str, root: str) -> re.Pattern[str]:
    return re.compile(pattern.replace("{root}", re.escape(root.rstrip("/"))))


def parse_divergences(text: str) -> tuple[Divergence, ...]:
    """Parse and validate the divergence file: known keys, F-ids well-formed, requirements in the catalogue,
    a code per entry, path expressions that compile."""
    catalogue = load_catalogue()
    out = []
    for entry in tomllib.loads(text).get("divergence", []):
        label = f"{entry.get('finding')}/{entry.get('requirement')}"
        unknown = set(entry) - {"finding", "requirement", "code", "summary", *_PREDICATES}
        if unknown:
            raise DivergenceFileError(f"{label}: unknown keys {sorted(unknown)}")
        if not _FINDING_ID.match(str(entry.get("finding", ""))):
            raise DivergenceFileError(f"{label}: finding must be an F-NNN id")
        if entry.get("requirement") not in catalogue:
            raise DivergenceFileError(f"{label}: requirement is not in the catalogue")
        if not str(entry.get("summary", "")).strip():
            raise DivergenceFileError(f"{label}: no summary")
        if not _CODE.match(str(entry.get("code", ""))):
            raise DivergenceFileError(f"{label}: code must name the findings' code (Finding.code, such as "
                                      "field_type_all_parent)")
        if "path" in entry:
            try:
                re.compile(entry["path"].replace("{root}", "/r"))
            except re.error as exc:
                raise DivergenceFileError(f"{label}: path is no regular expression: {exc}") from exc
        out.append(Divergence(**entry))
    return tuple(out)


@cache
def load_divergences() -> tuple[Divergence, ...]:
    """The divergences shipped with lancespec (spec/divergences.toml)."""
    return parse_divergences(resources.files("spec").joinpath("divergences.toml").read_text())


def known_ids() -> set[str]:
    """The finding ids of every known divergence (what ``--ignore`` accepts besides requirement ids)."""
    return {d.finding for d in load_divergences()}


def annotate(findings: Iterable[Finding], root: str) -> list[Finding]:
    """``findings`` with ``known`` set to the finding id of the first divergence each one matches."""
    out = []
    for finding in findings:
        match = next((d for d in load_divergences() if d.matches(finding, root)), None)
        out.append(finding if match is None else dataclasses.replace(finding, known=match.finding))
    return out


__all__ = ["Divergence", "DivergenceFileError", "annotate", "known_ids", "load_divergences", "parse_divergences"]
