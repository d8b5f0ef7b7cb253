"""The catalogue held against the registered checks and the traceability matrix, and spec/README.md
rendered from the three.

Which checks judge a requirement is written once, where each check is registered (``checks.version_check``,
``checks.dataset_check``): ``coverage`` derives each requirement's checks from there, and ``check_coverage``
holds checks, tests and requirements to each other.

    python -m lancespec.cli.catalogue --write    # regenerate spec/README.md
    python -m lancespec.cli.catalogue --check    # exit 1 when spec/README.md is stale
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .catalogue import DOCUMENTS, CatalogueError, Requirement
from .checks import Check
from .traceability import Matrix, render_matrix


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
