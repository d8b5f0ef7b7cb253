"""Certify reports for a person (text), for programs (JSON, schema in spec/certify-report.schema.json)
and for CI systems (JUnit XML: one test case per requirement checked)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from lancespec.reference import __version__
from lancespec.reference.printable import printable

from .catalogue import load_catalogue
from .findings import Report

REPORT_FORMAT = "lancespec.certify/1"


def to_json(report: Report) -> dict[str, Any]:
    """The JSON document (see spec/certify-report.schema.json)."""
    return {
        "format": REPORT_FORMAT,
        "lancespec_version": __version__,
        "uri": report.uri,
        "conformant": report.conformant,
        "readable": report.readable,
        "exit_code": report.exit_code,
        "cannot_judge": report.cannot_judge,
        "internal_error": report.internal_error,
        "versions": report.versions,
        "checks": report.checks_run,
        "requirements_checked": report.requirements_checked,
        "summary": {
            "must": len(report.must_findings),
            "should": len(report.findings) - len(report.must_findings),
        },
        "findings": [f.to_json() for f in report.findings],
    }


def render_json(report: Report) -> str:
    return json.dumps(to_json(report), indent=2) + "\n"


def _where(version: int | None, branch: str | None = None) -> str:
    where = f"v{version}" if version is not None else "dataset"
    return f"{printable(branch)}@{where}" if branch else where


def render_text(report: Report) -> str:
    """A short summary, then one line per finding: severity, requirement, where, what. Every value the
    dataset controls is escaped and cut (``printable``), so no name can forge or break a line."""
    musts = len(report.must_findings)
    shoulds = len(report.findings) - musts
    verdict = ("INTERNAL ERROR" if report.internal_error is not None else "UNREADABLE" if not report.readable
               else "CANNOT JUDGE" if report.cannot_judge
               else "CONFORMANT" if report.conformant else "NOT CONFORMANT")
    versions = ", ".join(map(str, report.versions)) or "none"
    lines = [
        f"{verdict}: {printable(report.uri)}",
        f"  versions checked: {versions}; {len(report.checks_run)} checks covering "
        f"{len(report.requirements_checked)} requirements; {musts} MUST and {shoulds} SHOULD findings",
    ]
    lines += [f"  {printable(reason)}" for reason in report.cannot_judge]
    if report.internal_error is not None:
        lines.append(f"  a lancespec bug stopped certification (the findings are those made before it): "
                     f"{printable(report.internal_error)}")
    for f in report.findings:
        lines.append(f"{f.severity:6} {f.requirement:10} {_where(f.version, f.branch):12} {printable(f.path)}: "
                     f"{printable(f.message)}")
    return "\n".join(lines) + "\n"


def render_junit(report: Report) -> str:
    """One ``testcase`` per requirement checked, failed when it has a MUST finding; SHOULD findings
    are reported in ``system-out`` without failing the case. Every value is ``printable``, which leaves
    no character XML forbids, so the document is always well-formed."""
    catalogue = load_catalogue()
    by_requirement: dict[str, list[str]] = {}
    for f in report.findings:
        by_requirement.setdefault(f.requirement, []).append(
            f"{_where(f.version)} {printable(f.path)}: {printable(f.message)}")
    checked = sorted(set(report.requirements_checked) | set(by_requirement))
    failures = sum(
        1 for r in checked if r in by_requirement and catalogue[r].severity == "MUST"
    )
    errors = [m for m in ("the dataset could not be read" if not report.readable else None,
                          printable(report.internal_error) if report.internal_error is not None else None) if m]
    errors += [printable(reason) for reason in report.cannot_judge]
    suite = ET.Element("testsuite", name=f"lancespec certify {printable(report.uri)}", tests=str(len(checked)),
                       failures=str(failures), errors=str(len(errors)))
    for message in errors:
        ET.SubElement(suite, "error", message=message)
    for rid in checked:
        req = catalogue[rid]
        case = ET.SubElement(suite, "testcase", classname=f"lancespec.{req.area}", name=f"{rid} {req.rule}")
        messages = by_requirement.get(rid, [])
        if messages and req.severity == "MUST":
            failure = ET.SubElement(case, "failure", message=f"{len(messages)} finding(s)", type=rid)
            failure.text = "\n".join(messages)
        elif messages:
            ET.SubElement(case, "system-out").text = "SHOULD: " + "\n".join(messages)
    text: str = ET.tostring(suite, encoding="unicode", xml_declaration=True)
    return text + "\n"


RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit}
