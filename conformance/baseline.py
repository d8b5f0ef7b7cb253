"""Setting findings aside for a run: ``--ignore ID`` and baseline files a CI can commit.

``--ignore ID`` names a requirement of the catalogue (every finding of it is set aside) or the finding id
of a known divergence (spec/divergences.toml: every finding that matches it).

A baseline sets aside *findings*, not requirements: each entry is the fingerprint of one finding, so that a
new breach of a requirement the baseline already holds still fails. A fingerprint names the requirement,
the code of what is wrong (``Finding.code``, never the message, so rewording a message changes nothing) and
where in the dataset (``location``: the path relative to the certified root, and the element the finding
names, as ``REQ[/code]@location[#detail]``). It leaves out the version, so the same fact seen in several
versions (a data file that versions 3 to 9 reference and that is missing) is one entry; a finding about a
version's manifest as a whole (no element named) is a fact of that version, and its location is that
version's manifest. The file is TOML (docs/baselines.md)::

    format = "lancespec.baseline/2"
    [[finding]]
    fingerprint = "BASE-004/data_file_missing@data/0110...lance#fragment 3"
    note = "what it said when written (free text, not matched)"
    [[ignore]]
    id = "F-004"
    reason = "why this is accepted (free text)"

``[[ignore]]`` entries mean what ``--ignore`` means; ``render_baseline`` writes one for each known divergence
the run found (a behaviour of the writer, set aside wherever it shows) and a ``[[finding]]`` for each other
finding. ``lancespec.baseline/1`` files, which set aside whole requirement ids, are refused with a line
saying how to write a new one. ``settle`` marks the findings of a report: its known divergence
(``Finding.known``), then what sets it aside (``Finding.set_aside``: the divergence id, the fingerprint,
then the requirement id). What is set aside counts for nothing: the exit status follows the rest.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from reference.errors import InvalidOption
from reference.printable import json_safe, toml_string
from reference.store.uri import local_path, relative_to, scheme_of, split_bucket

from .catalogue import load_catalogue
from .divergences import annotate, known_ids, load_divergences
from .findings import Finding, Report

BASELINE_FORMAT = "lancespec.baseline/2"
RETIRED_FORMATS = ("lancespec.baseline/1",)
IGNORE_OPTION = "--ignore"

_FINGERPRINT = re.compile(r"^(?P<requirement>[A-Z]+-\d{3})(/(?P<code>[A-Za-z0-9_-]+))?@(?P<location>.+)$")
_VERSION_MANIFEST = re.compile(r"(^|/)_versions/[^/]+\.manifest$")


def check_id(text: str) -> str:
    """``text`` if it is a requirement id or a known divergence id; InvalidOption naming what is accepted."""
    if text in load_catalogue() or text in known_ids():
        return text
    raise InvalidOption(f"{text!r} is neither a requirement of the catalogue (e.g. MAN-013) nor a known divergence "
                     f"({', '.join(sorted(known_ids()))})")


def location(path: str, root: str) -> str:
    """``path`` relative to the dataset ``root`` ("." for the root itself, ``../src/data/x.lance`` for a
    place beside it on the same store), or as given when it lies on another store: the same place has the
    same location wherever the dataset is copied with what lies beside it."""
    root = root.rstrip("/")
    if path.rstrip("/") == root:
        return "."
    below = relative_to(path, root)
    if below is not None:
        return below
    if scheme_of(path) == scheme_of(root) == "file":
        return posixpath.relpath(posixpath.normpath(local_path(path)), posixpath.normpath(local_path(root)))
    if scheme_of(path) == scheme_of(root) and split_bucket(path)[0] == split_bucket(root)[0]:
        return posixpath.relpath("/" + split_bucket(path)[1], "/" + split_bucket(root)[1])
    return path


def fingerprint(finding: Finding, root: str) -> str:
    """``REQ[/code]@location[#detail]`` of ``finding`` made certifying ``root`` (the code is left out when it
    is the requirement id). Findings about an element of a version's manifest (``detail`` set: a fragment,
    a base, a field) name the manifest without its version: the element is the same in every version that
    holds it."""
    where = location(finding.path, root)
    if finding.detail is not None:
        where = _VERSION_MANIFEST.sub(r"\1_versions/*.manifest", where) + f"#{finding.detail}"
    code = "" if finding.code == finding.requirement else f"/{finding.code}"
    return str(json_safe(f"{finding.requirement}{code}@{where}"))  # a name that is not UTF-8 as text TOML carries


def is_fingerprint(text: str) -> bool:
    """Whether ``text`` is a fingerprint (not a requirement or divergence id)."""
    return _FINGERPRINT.match(text) is not None


def read_baseline(path: str) -> dict[str, str]:
    """The divergence and requirement ids and the fingerprints a baseline file sets aside, each mapped to
    ``baseline {path}``. InvalidOption (a command-line mistake: exit 2) when the file is missing, is not
    such a file (a retired format says how to write a new one), or names an unknown id."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidOption(f"baseline {path} does not exist") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:  # nested past the parser
        raise InvalidOption(f"baseline {path} cannot be read: {str(exc)[:200]}") from None
    if data.get("format") in RETIRED_FORMATS:
        raise InvalidOption(f"baseline {path} is a {data['format']} file, which set aside whole requirements; write "
                            f"a {BASELINE_FORMAT} one with: lancespec certify URI --write-baseline {path} "
                            "(--ignore ID still sets a whole requirement aside)")
    if data.get("format") != BASELINE_FORMAT:
        raise InvalidOption(f"baseline {path} is not a {BASELINE_FORMAT} file (format = {data.get('format')!r})")
    ignored, found = data.get("ignore", []), data.get("finding", [])
    if not isinstance(ignored, list) or not all(isinstance(e, dict) and isinstance(e.get("id"), str)
                                                for e in ignored):
        raise InvalidOption(f"baseline {path}: every [[ignore]] entry needs an id")
    if not isinstance(found, list) or not all(isinstance(e, dict) and isinstance(e.get("fingerprint"), str)
                                              for e in found):
        raise InvalidOption(f"baseline {path}: every [[finding]] entry needs a fingerprint")
    out = {check_id(e["id"]): f"baseline {path}" for e in ignored}
    for entry in found:
        match = _FINGERPRINT.match(entry["fingerprint"])
        if match is None or match["requirement"] not in load_catalogue():
            raise InvalidOption(f"baseline {path}: {entry['fingerprint']!r} is no fingerprint of a requirement of "
                                "the catalogue (REQ[/code]@location)")
        out[entry["fingerprint"]] = f"baseline {path}"
    return out


def set_aside_ids(ignore: Iterable[str], baselines: Iterable[str]) -> dict[str, str]:
    """Everything a run sets aside (``--ignore`` ids and the entries of baseline files), each mapped to
    where it came from."""
    out: dict[str, str] = {}
    for path in baselines:
        out.update(read_baseline(path))
    for rid in ignore:
        out[check_id(rid)] = IGNORE_OPTION
    return out


def settle(report: Report) -> None:
    """Mark every finding of ``report`` with the known divergence it matches and what sets it aside
    (``report.set_aside``: its divergence id, its fingerprint, its requirement id), if any."""
    marked = []
    for finding in annotate(report.findings, report.uri):
        keys = (finding.known, fingerprint(finding, report.uri), finding.requirement)
        by = next((k for k in keys if k is not None and k in report.set_aside), None)
        marked.append(finding if by is None else dataclasses.replace(finding, set_aside=by))
    report.findings = marked


def set_aside_counts(report: Report) -> dict[str, int]:
    """For each id or fingerprint the run set aside, how many findings it set aside (0: it matched nothing)."""
    counts = Counter(f.set_aside for f in report.findings if f.set_aside is not None)
    return {rid: counts[rid] for rid in report.set_aside}


def render_baseline(report: Report, lancespec_version: str) -> tuple[str, int]:
    """A baseline file setting aside every finding of ``report`` (the known divergences it found by id, every
    other finding by fingerprint), and how many entries it holds."""
    summaries = {d.finding: d.summary for d in load_divergences()}
    lines = [f"# lancespec certify baseline, written by lancespec {lancespec_version} from a run on "
             f"{toml_string(report.uri)}.",
             "# Given with --baseline FILE, the findings below are set aside: reported, and not counted in the exit",
             "# status; any other finding counts, also of the same requirement. Remove an entry once it is fixed.",
             f"format = {toml_string(BASELINE_FORMAT)}"]
    divergences: dict[str, list[Finding]] = {}
    fingerprints: dict[str, list[Finding]] = {}
    for finding in report.findings:
        if finding.known is not None:
            divergences.setdefault(finding.known, []).append(finding)
        else:
            fingerprints.setdefault(fingerprint(finding, report.uri), []).append(finding)
    for rid, found in sorted(divergences.items()):
        reason = f"{len(found)} finding(s) when written. Known divergence: {summaries[rid]}"
        lines += ["", "[[ignore]]", f"id = {toml_string(rid)}", f"reason = {toml_string(reason)}"]
    for key, found in sorted(fingerprints.items()):
        versions = sorted({f.version for f in found if f.version is not None})
        seen = "" if not versions else f", v{versions[0]}" + (f"..{versions[-1]}" if len(versions) > 1 else "")
        note = f"{found[0].severity}{seen}: {found[0].message}"
        lines += ["", "[[finding]]", f"fingerprint = {toml_string(key)}", f"note = {toml_string(note)}"]
    return "\n".join(lines) + "\n", len(divergences) + len(fingerprints)


def known_divergences_seen(findings: Iterable[Finding]) -> Mapping[str, str]:
    """The summary of every known divergence some finding matches, by finding id."""
    seen = {f.known for f in findings if f.known is not None}
    return {d.finding: d.summary for d in load_divergences() if d.finding in seen}


__all__ = [
    "BASELINE_FORMAT",
    "check_id",
    "fingerprint",
    "is_fingerprint",
    "known_divergences_seen",
    "location",
    "read_baseline",
    "render_baseline",
    "set_aside_counts",
    "set_aside_ids",
    "settle",
]
