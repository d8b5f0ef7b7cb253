"""``lancespec certify --format html``: one self-contained page built from the certify JSON report
(spec/certify-report.schema.json) and the inspect documents of the dataset's lineage, and nothing else;
the catalogue (spec/requirements.toml) supplies what each requirement id means.

The page: the verdict; the lineage diagram with the versions and locations findings point to marked;
the findings grouped by requirement (rule, source document and section, severity; each finding's version
and file), known divergences folded and labelled; the catalogue's coverage (checked with findings,
checked clean, not checked and why). Filter by severity and area (the areas of the checks, as ``certify
--only`` names them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.catalogue import DOCUMENTS, SEVERITIES, Requirement, load_catalogue
from conformance.checks import all_checks
from conformance.checks import areas as check_areas
from conformance.coverage import coverage
from conformance.report import where
from conformance.traceability import Matrix, load_matrix

from .dot import to_dot, to_svg
from .html import Facet, esc, filter_attr, inline_svg, page, table
from .lineage import Doc, Lineage, Mark, VersionRef, build_lineage, lane_name, location

#: The finding key that labels a finding as a known divergence (its value is the label); such findings
#: are folded under their requirement.
DIVERGENCE_KEY = "known_divergence"

#: The keys every finding has (spec/certify-report.schema.json); any other key is shown beside it.
_FINDING_KEYS = ("requirement", "severity", "version", "branch", "path", "message")


def _note(key: str, value: Any) -> str:
    """A finding's other key in words (``set_aside_by: MAN-013`` -> ``set aside by MAN-013``); empty when it
    has no value."""
    if value is None or value == "" or value == [] or value == {}:
        return ""
    return f"{key.replace('_', ' ')} {', '.join(map(str, value)) if isinstance(value, list) else value}"


#: The area of a finding whose requirement no registered check declares (none, as the catalogue stands).
OTHER_AREA = "other"


def areas_of(requirement: str) -> list[str]:
    """The areas a requirement is checked in: those of the registered checks that declare it, the same list
    as ``certify --only`` (one requirement can be judged in several, MAN-xxx in ``manifest`` and
    ``evolution``); empty when no check judges it (the catalogue's coverage then says it is held by tests)."""
    return sorted({c.area for c in all_checks().values() if requirement in c.requirements})


def _finding_areas(requirement: str) -> list[str]:
    return areas_of(requirement) or [OTHER_AREA]


def verdict(report: Mapping[str, Any]) -> str:
    """The report's verdict, in the words of the text report (``conformance.report.VERDICTS``)."""
    from conformance.report import VERDICTS

    return VERDICTS[report["outcome"]]


def finding_marks(report: Mapping[str, Any]) -> dict[VersionRef, Mark]:
    """The versions findings point to, each marked with its findings' severities and requirements (the
    diagram outlines them, and collapses a run of them only where every version carries the same)."""
    root = location(report["uri"])
    out: dict[VersionRef, set[str]] = {}
    for f in report["findings"]:
        if f["version"] is not None:
            ref = VersionRef(root, lane_name(f.get("branch")), f["version"])
            out.setdefault(ref, set()).add(f"{f['severity']} {f['requirement']}")
    return {ref: frozenset(mark) for ref, mark in out.items()}


def _marks(lineage: Lineage, report: Mapping[str, Any]) -> dict[str, set[tuple[str, str]]]:
    """Node id -> (severity, area) of the findings at it (one pair per area of the finding's requirement): a
    finding's version, and the location its path lies in."""
    root = location(report["uri"])
    out: dict[str, set[tuple[str, str]]] = {}
    for f in report["findings"]:
        kinds = {(f["severity"], area) for area in _finding_areas(f["requirement"])}
        if f["version"] is not None:
            step = lineage.step_for(VersionRef(root, lane_name(f.get("branch")), f["version"]))
            if step is not None:
                out.setdefault(step.id, set()).update(kinds)
        loc = lineage.location_for(f["path"])
        if loc is not None:
            out.setdefault(loc.id, set()).update(kinds)
    return out


def _finding_rows(findings: Sequence[Mapping[str, Any]]) -> list[str]:
    """One row per distinct thing said (message and extra keys): where it was said as version ranges
    (``v1-7; feat@v3``), how many findings, and the file, or every file folded when they differ. A writer
    whose every version carries the same divergence fills one row, not one per version."""
    said: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for f in findings:
        extra = "; ".join(filter(None, (_note(k, v) for k, v in f.items() if k not in _FINDING_KEYS
                                        and not (k == "code" and v == f["requirement"]))))  # the default code
        said.setdefault((f["message"], extra), []).append(f)
    rows = []
    for (message, extra), group in said.items():
        first = group[0]
        paths = [esc(p) for p in dict.fromkeys(f["path"] for f in group)]
        files = paths[0] if len(paths) == 1 else \
            f"<details><summary>{len(paths)} files</summary>{'<br>'.join(paths)}</details>"
        count = f" ({len(group)} findings)" if len(group) > 1 else ""
        rows.append(f'<tr class="finding counted" data-count="{len(group)}"'
                    f'{filter_attr(severity=[first["severity"]], area=_finding_areas(first["requirement"]))}>'
                    f'<td>{esc(where((f.get("branch"), f["version"]) for f in group))}{count}</td>'
                    f'<td class="path">{files}</td><td>{esc(message)}</td><td>{esc(extra)}</td></tr>')
    return rows


def _source(req: Requirement | None) -> str:
    if req is None:
        return '<span class="muted">not in this catalogue</span>'
    return f"{esc(DOCUMENTS[req.document])}, section “{esc(req.section)}”"


def _statements(req: Requirement | None, matrix: Matrix) -> str:
    """The statements of the five documents the requirement comes from (spec/traceability.toml), folded."""
    found = [matrix.statements[sid] for sid in (req.statements if req is not None else ()) if sid in matrix.statements]
    if not found:
        return ""
    items = "".join(f"<li><b>{esc(st.id)}</b> ({esc(matrix.documents.get(st.id.split('-')[0], ''))}, "
                    f"“{esc(st.section)}”): {esc(st.says)}</li>" for st in found)
    return f"<details><summary>the statements it comes from ({len(found)})</summary><ul>{items}</ul></details>"


def _requirement(rid: str, findings: Sequence[Mapping[str, Any]], req: Requirement | None, matrix: Matrix) -> str:
    severity = req.severity if req is not None else findings[0]["severity"]
    rule = esc(req.rule) if req is not None else ""
    head = ["where", "file", "what", "notes"]
    plain = [f for f in findings if not f.get(DIVERGENCE_KEY)]
    known = [f for f in findings if f.get(DIVERGENCE_KEY)]
    parts = [f'<section class="requirement" id="req-{esc(rid)}"'
             f'{filter_attr(severity=[severity], area=_finding_areas(rid))}>'
             f'<h3><span class="sev sev-{esc(severity)}">{esc(severity)}</span> {esc(rid)} '
             f'<span class="muted">({len(findings)} finding{"s" if len(findings) != 1 else ""})</span></h3>'
             f"<p>{rule}</p><p class=\"muted\">Source: {_source(req)}</p>{_statements(req, matrix)}"]
    if plain:
        parts.append(table(head, _finding_rows(plain)))
    for label in sorted({str(f[DIVERGENCE_KEY]) for f in known}):
        rows = [f for f in known if str(f[DIVERGENCE_KEY]) == label]
        parts.append(f'<details class="divergence"><summary>known divergence {esc(label)}: {len(rows)} '
                     f"finding{'s' if len(rows) != 1 else ''}</summary>"
                     f"{table(head, _finding_rows(rows))}</details>")
    parts.append("</section>")
    return "".join(parts)


def _coverage(report: Mapping[str, Any], catalogue: Mapping[str, Requirement]) -> str:
    checked = set(report["requirements_checked"])
    counts: dict[str, int] = {}
    for f in report["findings"]:
        counts[f["requirement"]] = counts.get(f["requirement"], 0) + 1
    judged = coverage(all_checks().values())
    rows = []
    for rid, req in sorted(catalogue.items()):
        if rid in counts:
            status = f'<a href="#req-{esc(rid)}">{counts[rid]} finding{"s" if counts[rid] != 1 else ""}</a>'
        elif rid in checked:
            status = "checked, no finding"
        elif judged.get(rid):
            status = '<span class="muted">not applicable: its checks did not run</span>'
        else:
            status = '<span class="muted">not applicable: no certify check (held by tests)</span>'
        rows.append(f'<tr class="coverage"{filter_attr(severity=[req.severity], area=areas_of(rid))}>'
                    f"<td>{esc(rid)}</td><td>{esc(req.severity)}</td><td>{esc(req.rule)}</td><td>{status}</td></tr>")
    return table(["requirement", "severity", "rule", "status"], rows)


def _diagram(report: Mapping[str, Any], docs: Sequence[Doc] | None, lineage_error: str | None) -> str:
    if docs is None:
        return f'<p class="muted">No diagram: the lineage could not be read ({esc(lineage_error or "")}).</p>'
    lineage = build_lineage(docs, finding_marks(report))
    svg = to_svg(to_dot(lineage, _marks(lineage, report)))
    return f'<div class="diagram">{inline_svg(svg)}</div>'


def certify_page(report: Mapping[str, Any], docs: Sequence[Doc] | None, lineage_error: str | None = None) -> str:
    """The page for the certify JSON ``report`` with the lineage ``docs`` (``gather``; None when the
    dataset's lineage could not be read, then ``lineage_error`` says why)."""
    catalogue = load_catalogue()
    word = verdict(report)
    tone = "verdict-ok" if word == "CONFORMANT" else "verdict-warn" if word == "CANNOT JUDGE" else "verdict-bad"
    summary = report["summary"]
    versions = ", ".join(map(str, report["versions"])) or "none"
    header = (f'<h1 class="{tone}">{esc(word)}</h1><div class="path">{esc(report["uri"])}</div>'
              f"<div>versions checked: {esc(versions)}; {len(report['checks'])} checks covering "
              f"{len(report['requirements_checked'])} requirements; {summary['must']} MUST and "
              f"{summary['should']} SHOULD findings; lancespec {esc(report.get('lancespec_version', ''))}</div>")
    notes = [esc(n) for n in report.get("cannot_judge", [])]
    if report.get("cannot_read") is not None:
        notes.append("cannot read (nothing was judged): " + esc(report["cannot_read"]))
    if report.get("internal_error") is not None:
        notes.append("a lancespec bug stopped certification (the findings are those made before it): "
                     + esc(report["internal_error"]))
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for f in report["findings"]:
        grouped.setdefault(f["requirement"], []).append(f)
    matrix = load_matrix()
    findings = "".join(_requirement(rid, fs, catalogue.get(rid), matrix) for rid, fs in sorted(grouped.items())) or \
        "<p>No findings.</p>"
    body = ("".join(f"<p class=\"verdict-warn\">{n}</p>" for n in notes)
            + f'<section id="lineage"><h2>Lineage</h2>{_diagram(report, docs, lineage_error)}</section>'
            + f'<section id="findings"><h2>Findings by requirement</h2>{findings}</section>'
            + f'<section id="coverage"><h2>Coverage of the catalogue</h2>{_coverage(report, catalogue)}</section>')
    areas = [*check_areas(), *([OTHER_AREA] if any(not areas_of(rid) for rid in grouped) else [])]
    facets = [Facet("severity", "severity", [(s, s) for s in SEVERITIES]),
              Facet("area", "area", [(a, a) for a in areas])]
    return page(f"lancespec certify: {word}", header, body, facets)
