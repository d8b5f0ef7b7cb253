"""Setting findings aside for a run: ``--ignore ID`` and baseline files a CI can commit.

An id is a requirement of the catalogue (every finding of it is set aside) or the finding id of a known
divergence (spec/divergences.toml: every finding that matches it). A baseline file is TOML::

    format = "lancespec.baseline/1"
    [[ignore]]
    id = "F-004"
    reason = "why this is accepted (free text)"

``write_baseline`` writes one from a run: one entry per known divergence the run found and per requirement
with findings no divergence explains. ``settle`` marks the findings of a report: its known divergence
(``Finding.known``), then the id that sets it aside (``Finding.set_aside``), the divergence's id before the
requirement's. What is set aside counts for nothing: the exit status follows the rest.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from lancespec.reference.errors import InvalidOption

from .catalogue import load_catalogue
from .divergences import annotate, known_ids, load_divergences
from .findings import Finding, Report

BASELINE_FORMAT = "lancespec.baseline/1"
IGNORE_OPTION = "--ignore"


def check_id(text: str) -> str:
    """``text`` if it is a requirement id or a known divergence id; InvalidOption naming what is accepted."""
    if text in load_catalogue() or text in known_ids():
        return text
    raise InvalidOption(f"{text!r} is neither a requirement of the catalogue (e.g. MAN-013) nor a known divergence "
                     f"({', '.join(sorted(known_ids()))})")


def read_baseline(path: str) -> dict[str, str]:
    """The ids a baseline file sets aside, each mapped to ``baseline {path}``. InvalidOption (a command-line
    mistake: exit 2) when the file is missing, is not such a file, or names an unknown id."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidOption(f"baseline {path} does not exist") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidOption(f"baseline {path} cannot be read: {exc}") from None
    if data.get("format") != BASELINE_FORMAT:
        raise InvalidOption(f"baseline {path} is not a {BASELINE_FORMAT} file (format = {data.get('format')!r})")
    entries = data.get("ignore", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("id"), str)
                                                for e in entries):
        raise InvalidOption(f"baseline {path}: every [[ignore]] entry needs an id")
    return {check_id(e["id"]): f"baseline {path}" for e in entries}


def set_aside_ids(ignore: Iterable[str], baselines: Iterable[str]) -> dict[str, str]:
    """Every id a run sets aside (``--ignore`` ids and baseline files), each mapped to where it came from."""
    out: dict[str, str] = {}
    for path in baselines:
        out.update(read_baseline(path))
    for rid in ignore:
        out[check_id(rid)] = IGNORE_OPTION
    return out


def settle(report: Report) -> None:
    """Mark every finding of ``report`` with the known divergence it matches and the id that sets it aside
    (``report.set_aside``), if any."""
    marked = []
    for finding in annotate(report.findings, report.uri):
        by = next((i for i in (finding.known, finding.requirement) if i is not None and i in report.set_aside), None)
        marked.append(finding if by is None else dataclasses.replace(finding, set_aside=by))
    report.findings = marked


def set_aside_counts(report: Report) -> dict[str, int]:
    """For each id the run set aside, how many findings it set aside (0: it matched nothing)."""
    counts = Counter(f.set_aside for f in report.findings if f.set_aside is not None)
    return {rid: counts[rid] for rid in report.set_aside}


def render_baseline(report: Report, lancespec_version: str) -> str:
    """A baseline file setting aside every finding of ``report``: the known divergence ids it found, and the
    requirements with findings no divergence explains."""
    summaries = {d.finding: d.summary for d in load_divergences()}
    lines = [f"# lancespec certify baseline, written by lancespec {lancespec_version} from a run on "
             f"{json.dumps(report.uri)}.",
             "# Given with --baseline FILE, every finding of an id below is set aside: it is reported, and the exit",
             "# status ignores it. Remove an entry once the writer no longer needs it.",
             f"format = {json.dumps(BASELINE_FORMAT)}"]
    by_id: dict[str, list[Finding]] = {}
    for finding in report.findings:
        by_id.setdefault(finding.known or finding.requirement, []).append(finding)
    for rid, found in sorted(by_id.items()):
        severities = "/".join(sorted({f.severity for f in found}))
        what = f"known divergence: {summaries[rid]}" if rid in summaries else load_catalogue()[rid].rule
        reason = f"{len(found)} {severities} finding(s) when written. {what}"
        lines += ["", "[[ignore]]", f"id = {json.dumps(rid)}", f"reason = {json.dumps(reason, ensure_ascii=False)}"]
    return "\n".join(lines) + "\n"


def write_baseline(report: Report, path: str, lancespec_version: str) -> None:
    """Write ``render_baseline`` to ``path``."""
    Path(path).write_text(render_baseline(report, lancespec_version), encoding="utf-8")


def known_divergences_seen(findings: Iterable[Finding]) -> Mapping[str, str]:
    """The summary of every known divergence some finding matches, by finding id."""
    seen = {f.known for f in findings if f.known is not None}
    return {d.finding: d.summary for d in load_divergences() if d.finding in seen}


__all__ = [
    "BASELINE_FORMAT",
    "check_id",
    "known_divergences_seen",
    "read_baseline",
    "render_baseline",
    "set_aside_counts",
    "set_aside_ids",
    "settle",
    "write_baseline",
]
