"""Certify reports for a person (text: one line per requirement with findings, repeats folded), for
programs (JSON, schema in spec/certify-report.schema.json: every finding) and for CI systems (JUnit XML: one
test case per requirement checked). All three say which findings match a known divergence and what the run
set aside (``conformance.baseline``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from reference import __version__
from reference.printable import Rendered, json_chunks, json_text, printable

from .baseline import is_fingerprint, known_divergences_seen, set_aside_counts
from .catalogue import load_catalogue
from .findings import Finding, Report

REPORT_FORMAT = "lancespec.certify/1"
#: Distinct messages shown per requirement in the text report (JSON lists every finding).
SHOWN_MESSAGES = 3


def version_ranges(versions: Iterable[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``"1-3, 5"``: a list of versions as a person reads it."""
    runs: list[list[int]] = []
    for v in sorted(set(versions)):
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs) or "none"


def to_json(report: Report) -> dict[str, Any]:
    """The JSON document (see spec/certify-report.schema.json)."""
    counted = report.counted_findings
    return {
        "format": REPORT_FORMAT,
        "lancespec_version": __version__,
        "uri": report.uri,
        "conformant": report.conformant,
        "readable": report.readable,
        "exit_code": report.exit_code,
        "outcome": report.outcome,
        "cannot_read": report.cannot_read,
        "cannot_judge": report.cannot_judge,
        "internal_error": report.internal_error,
        "versions": report.versions,
        "branch_versions": report.branch_versions,
        "checks": report.checks_run,
        "requirements_checked": report.requirements_checked,
        "summary": {
            "must": len(report.must_findings),
            "should": len(counted) - len(report.must_findings),
            "known": sum(f.known is not None for f in report.findings),
            "set_aside": len(report.findings) - len(counted),
        },
        "set_aside": [{"id": rid, "by": report.set_aside[rid], "findings": n}
                      for rid, n in set_aside_counts(report).items()],
        "known_divergences": dict(known_divergences_seen(report.findings)),
        "findings": [f.to_json() for f in report.findings],
        "carried_over": report.carried_over.to_json() if report.carried_over is not None else None,
        "evidence": report.evidence.to_json(report.findings) if report.evidence is not None else None,
    }


def render_json(report: Report) -> str:
    return json_text(to_json(report))


def stream_json(report: Report) -> Iterator[str]:
    """``render_json`` in pieces, for writing as they are made (``json_chunks``)."""
    return json_chunks(to_json(report))


def where(places: Iterable[tuple[str | None, int | None]]) -> str:
    """Where findings were made, from their (branch, version) pairs: ``v1-7``, ``feat@v3-4``, ``dataset``,
    joined by ``; ``."""
    by_branch: dict[str | None, list[int | None]] = {}
    for branch, version in places:
        by_branch.setdefault(branch, []).append(version)
    parts = []
    for branch, versions in sorted(by_branch.items(), key=lambda item: item[0] or ""):
        numbers = [v for v in versions if v is not None]
        shown = ", ".join(filter(None, ["dataset" if None in versions else "",
                                        f"v{version_ranges(numbers)}" if numbers else ""]))
        parts.append(f"{printable(branch)}@{shown}" if branch else shown)
    return "; ".join(parts)


def _where(findings: Sequence[Finding]) -> str:
    return where((f.branch, f.version) for f in findings)


def _tag(findings: Sequence[Finding]) -> str:
    """`` [known divergence F-004]`` when findings of the group match a known divergence."""
    known = Counter(f.known for f in findings if f.known is not None)
    if not known:
        return ""
    parts = [rid if n == len(findings) else f"{rid} for {n}" for rid, n in sorted(known.items())]
    return f" [known divergence {', '.join(parts)}]"


def _place(f: Finding) -> str:
    """`` [path (detail)]``, less what the message already names."""
    path = "" if f.path in f.message else printable(f.path)
    detail = printable(f.detail) if f.detail else ""
    shown = f"{path} ({detail})" if path and detail else path or detail
    return f" [{shown}]" if shown else ""


def _group_lines(findings: Sequence[Finding]) -> list[str]:
    """One line per requirement: severity, id, how many findings, where, the known divergence, and what (the
    message when the findings say one thing; else up to ``SHOWN_MESSAGES`` distinct ones on lines below,
    each with where it was made). The file is named when the findings share it."""
    lines = []
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.requirement, f.severity), []).append(f)
    for (rid, severity), group in sorted(groups.items(), key=lambda item: (item[0][1] != "MUST", item[0][0])):
        said: dict[tuple[str, str | None], list[Finding]] = {}
        for f in group:
            said.setdefault((f.message, f.detail), []).append(f)
        head = f"{severity:6} {rid:10} {len(group):>3}x {_where(group)}{_tag(group)}"
        if len(said) == 1:
            where = _place(group[0]) if len({f.path for f in group}) == 1 else ""
            lines.append(f"{head}: {printable(group[0].message)}{where}")
            continue
        lines.append(f"{head}:")
        for (message, _), same in list(said.items())[:SHOWN_MESSAGES]:
            where = _place(same[0]) if len({f.path for f in same}) == 1 else ""
            lines.append(f"         {_where(same)}: {printable(message)}{where}")
        if len(said) > SHOWN_MESSAGES:
            lines.append(f"         ... and {len(said) - SHOWN_MESSAGES} more (--format json lists every finding)")
    return lines


def _versions_line(report: Report) -> str:
    parts = [f"main {version_ranges(report.versions)}" if report.branch_versions else version_ranges(report.versions)]
    parts += [f"{printable(name)} {version_ranges(vs)}" for name, vs in sorted(report.branch_versions.items())]
    return "; ".join(parts)


def _set_aside_parts(report: Report) -> list[str]:
    """What the run set aside, per id (``F-004 (--ignore): 2 finding(s)``), and the fingerprints of each
    baseline file as one part (``baseline b.toml: 3 finding(s) by 2 of 3 entries``)."""
    parts = []
    entries: dict[str, list[int]] = {}
    for rid, n in set_aside_counts(report).items():
        if is_fingerprint(rid):
            entries.setdefault(report.set_aside[rid], []).append(n)
        else:
            parts.append(f"{rid} ({report.set_aside[rid]}): {n if n else 'matched no'} finding(s)")
    for source, counts in entries.items():
        matched = sum(1 for n in counts if n)
        parts.append(f"{source}: {sum(counts)} finding(s) by {matched} of {len(counts)} entries")
    return parts


#: The verdict each outcome (``Report.outcome``) is shown with in text and HTML.
VERDICTS = {"conformant": "CONFORMANT", "breach": "NOT CONFORMANT", "cannot_judge": "CANNOT JUDGE",
            "cannot_read": "CANNOT READ", "internal_error": "INTERNAL ERROR"}


def render_text(report: Report) -> str:
    """A short summary, then one line per requirement with findings (``_group_lines``): what counts first,
    then what the run set aside. Every value the dataset controls is escaped and cut (``printable``), so no
    name can forge or break a line."""
    counted = report.counted_findings
    musts = len(report.must_findings)
    shoulds = len(counted) - musts
    known = sum(f.known is not None for f in counted)
    verdict = VERDICTS[report.outcome]
    if report.cannot_read is not None:  # nothing was judged: the cause, and no requirement id
        return f"{verdict}: {printable(report.uri)}\n  {printable(report.cannot_read)}\n"
    lines = [
        f"{verdict}: {printable(report.uri)}",
        f"  versions checked: {_versions_line(report)}; {len(report.checks_run)} checks covering "
        f"{len(report.requirements_checked)} requirements; {musts} MUST and {shoulds} SHOULD findings"
        + (f" ({known} of them known divergences)" if known else ""),
    ]
    if report.carried_over is not None:
        lines.append(f"  {printable(report.carried_over.line())}")
    if report.set_aside:
        lines.append("  set aside: " + ", ".join(_set_aside_parts(report)))
    lines += [f"  {printable(reason)}" for reason in report.cannot_judge]
    if report.internal_error is not None:
        lines.append(f"  a lancespec bug stopped certification (the findings are those made before it): "
                     f"{printable(report.internal_error)}")
    lines += _group_lines(counted)
    aside = [f for f in report.findings if f.set_aside is not None]
    if aside:
        lines.append("set aside (not counted):")
        lines += _group_lines(aside)
    return "\n".join(lines) + "\n"


def render_junit(report: Report) -> str:
    """One ``testcase`` per requirement checked, failed when it has a MUST finding the run did not set
    aside; SHOULD findings are reported in ``system-out`` without failing the case; a case whose findings
    were all set aside is ``skipped`` and says by what. Findings that match a known divergence say so.
    Every value is ``printable``, which leaves no character XML forbids, so the document is always
    well-formed."""
    catalogue = load_catalogue()
    counted: dict[str, list[str]] = {}
    aside: dict[str, list[Finding]] = {}
    for f in report.findings:
        if f.set_aside is not None:
            aside.setdefault(f.requirement, []).append(f)
            continue
        known = f" [known divergence {f.known}]" if f.known else ""
        counted.setdefault(f.requirement, []).append(
            f"{_where([f])}: {printable(f.message)}{_place(f)}{known}")
    checked = sorted(set(report.requirements_checked) | set(counted) | set(aside))
    failures = sum(1 for r in checked if r in counted and catalogue[r].severity == "MUST")
    errors = [m for m in (f"cannot read: {printable(report.cannot_read)}" if report.cannot_read is not None else None,
                          printable(report.internal_error) if report.internal_error is not None else None) if m]
    errors += [printable(reason) for reason in report.cannot_judge]
    skipped = sum(1 for r in checked if r in aside and r not in counted)
    suite = ET.Element("testsuite", name=f"lancespec certify {printable(report.uri)}", tests=str(len(checked)),
                       failures=str(failures), errors=str(len(errors)), skipped=str(skipped))
    for message in errors:
        ET.SubElement(suite, "error", message=message)
    for rid in checked:
        req = catalogue[rid]
        case = ET.SubElement(suite, "testcase", classname=f"lancespec.{req.area}", name=f"{rid} {req.rule}")
        messages = counted.get(rid, [])
        if messages and req.severity == "MUST":
            failure = ET.SubElement(case, "failure", message=f"{len(messages)} finding(s)", type=rid)
            failure.text = "\n".join(messages)
        elif messages:
            ET.SubElement(case, "system-out").text = "SHOULD: " + "\n".join(messages)
        elif rid in aside:
            by = sorted({f"{f.set_aside} ({report.set_aside.get(f.set_aside or '', '')})" for f in aside[rid]})
            ET.SubElement(case, "skipped", message=f"{len(aside[rid])} finding(s) set aside by {', '.join(by)}")
    text: str = ET.tostring(suite, encoding="unicode", xml_declaration=True)
    return text + "\n"


RENDERERS: dict[str, Callable[[Report], Rendered]] = {
    "text": render_text, "json": stream_json, "junit": render_junit}
