"""Known divergences as data (spec/divergences.toml) and setting findings aside for a run: ``--ignore``,
``--baseline``, ``--write-baseline``. The report says what was set aside in text, JSON (validated against
the published schema) and JUnit, and the exit status follows what was not set aside."""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import jsonschema
import pyarrow as pa
import pytest

from conformance.catalogue import load_catalogue
from conformance.divergences import DivergenceFileError, load_divergences, parse_divergences
from conformance.findings import Finding
from lancespec.cli import main
from reference import ops
from reference.codec import decode_manifest_file, encode_manifest_file
from reference.table import Dataset

SCHEMA = json.loads(resources.files("spec").joinpath("certify-report.schema.json").read_text())
FINDINGS_MD = Path(__file__).resolve().parents[2] / "spec" / "findings.md"


@pytest.fixture
def breached(tmp_path: Path) -> str:
    """Three versions; from v2 on, two fragments of each version share an id (MAN-001, no known divergence)."""
    uri = str(tmp_path / "breached")
    ops.create(uri, pa.table({"a": list(range(4))}), max_rows_per_file=2)
    for _ in range(2):
        ops.append(Dataset.open(uri), pa.table({"a": [9]}))
    for version in (2, 3):
        snapshot = Dataset.open(uri).snapshot(version)
        manifest_file = decode_manifest_file(Path(snapshot.manifest_uri).read_bytes())
        manifest_file.manifest.fragments[1].id = manifest_file.manifest.fragments[0].id
        Path(snapshot.manifest_uri).write_bytes(encode_manifest_file(manifest_file.manifest,
                                                                     manifest_file.transaction_bytes))
    return uri


def test_divergence_file_names_findings_that_exist() -> None:
    documented = set(re.findall(r"^## (F-\d{3}):", FINDINGS_MD.read_text(), flags=re.MULTILINE))
    entries = load_divergences()
    assert entries and {d.finding for d in entries} <= documented
    assert all(d.requirement in load_catalogue() for d in entries)


@pytest.mark.parametrize(("text", "why"), [
    ('[[divergence]]\nfinding = "F-004"\nrequirement = "MAN-013"\nsummary = "s"\n', "code must"),
    ('[[divergence]]\nfinding = "F-004"\nrequirement = "MAN-013"\nsummary = "s"\ncode = "Field type"\n', "code must"),
    ('[[divergence]]\nfinding = "F-4"\nrequirement = "MAN-013"\nsummary = "s"\ncode = "x"\n', "F-NNN"),
    ('[[divergence]]\nfinding = "F-004"\nrequirement = "NOPE-001"\nsummary = "s"\ncode = "x"\n', "catalogue"),
    ('[[divergence]]\nfinding = "F-004"\nrequirement = "MAN-013"\nsummary = "s"\ncode = "x"\npath = "("\n',
     "regular"),
    ('[[divergence]]\nfinding = "F-004"\nrequirement = "MAN-013"\nsummary = "s"\ncode = "x"\nmessage = "x"\n',
     "unknown keys"),  # messages are never matched
])
def test_divergence_file_rules(text: str, why: str) -> None:
    with pytest.raises(DivergenceFileError, match=why):
        parse_divergences(text)


def test_predicates_match_requirement_code_path_and_root() -> None:
    [entry] = parse_divergences('[[divergence]]\nfinding = "F-010"\nrequirement = "CLONE-001"\nbranch = true\n'
                                'code = "gone"\nsummary = "s"\npath = \'^(?!{root}(/|$))\'\n')
    outside = Finding("CLONE-001", "MUST", 1, "/old/data/x.lance", "gone", branch="feat", code="gone")
    assert entry.matches(outside, "/new")
    assert entry.matches(dataclasses.replace(outside, message="reworded entirely"), "/new")  # the code decides
    assert not entry.matches(dataclasses.replace(outside, code="other"), "/new")
    assert not entry.matches(outside, "/old")  # {root} is the certified root
    assert not entry.matches(dataclasses.replace(outside, branch=None), "/new")  # main root
    assert not entry.matches(dataclasses.replace(outside, requirement="BASE-004"), "/new")


def test_detail_predicate_is_exact() -> None:
    [entry] = parse_divergences('[[divergence]]\nfinding = "F-010"\nrequirement = "BASE-008"\ncode = "BASE-008"\n'
                                'detail = "base 0"\nsummary = "s"\n')
    base0 = Finding("BASE-008", "SHOULD", 1, "/r/_versions/1.manifest", "m", detail="base 0")
    assert base0.code == "BASE-008"  # a finding without a code carries its requirement id
    assert entry.matches(base0, "/r")
    assert not entry.matches(dataclasses.replace(base0, detail="base 10"), "/r")


def test_ignore_sets_a_requirement_aside(breached: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", breached, "--all-versions"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^MUST   MAN-001 +2x v2-3: ", out, flags=re.MULTILINE), out  # two findings, one line
    assert main(["certify", breached, "--all-versions", "--ignore", "MAN-001"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("CONFORMANT") and "set aside: MAN-001 (--ignore): 2 finding(s)" in out
    assert "set aside (not counted):" in out and "MAN-001" in out.split("set aside (not counted):")[1]


def test_ignoring_what_matched_nothing_is_said(breached: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", breached, "--ignore", "MAN-001", "--ignore", "F-012"]) == 0
    assert "F-012 (--ignore): matched no finding(s)" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["MAN-999", "F-999", "man-001", "../x"])
def test_an_unknown_id_is_a_usage_error(breached: str, bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["certify", breached, "--ignore", bad])
    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "neither a requirement" in err


def test_write_baseline_then_certify_with_it(breached: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "lancespec-baseline.toml"
    assert main(["certify", breached, "--all-versions", "--write-baseline", str(baseline)]) == 1
    capsys.readouterr()
    text = baseline.read_text()
    # MAN-001 about fragment 0 of the manifests of versions 2 and 3: one fact, one entry
    entries = tomllib.loads(text)["finding"]
    man001 = sorted(e["fingerprint"] for e in entries if e["fingerprint"].startswith("MAN-001"))
    assert text.startswith("# lancespec certify baseline") and 'format = "lancespec.baseline/2"' in text
    assert man001 == ["MAN-001@_versions/*.manifest#fragment 0"]
    assert main(["certify", breached, "--all-versions", "--baseline", str(baseline), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    assert sorted(e["id"] for e in document["set_aside"] if e["id"].startswith("MAN-001")) == man001
    assert [(e["by"], e["findings"]) for e in document["set_aside"] if e["id"] in man001] == \
        [(f"baseline {baseline}", 2)]
    assert document["summary"]["must"] == 0 and document["summary"]["set_aside"] >= 2
    assert {f["set_aside_by"] for f in document["findings"] if f["requirement"] == "MAN-001"} == set(man001)
    assert document["conformant"] is True and document["exit_code"] == 0


@pytest.mark.parametrize("content", ['format = "other/1"\n', "not toml [", 'format = "lancespec.baseline/2"\n'
                                     '[[ignore]]\nid = "NOPE-001"\n', 'format = "lancespec.baseline/2"\n'
                                     '[[finding]]\nfingerprint = "NOPE-001@data/x.lance"\n',
                                     'format = "lancespec.baseline/2"\n[[finding]]\nnote = "no fingerprint"\n'])
def test_a_bad_baseline_is_a_usage_error(breached: str, tmp_path: Path, content: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "b.toml"
    baseline.write_text(content)
    with pytest.raises(SystemExit) as stopped:
        main(["certify", breached, "--baseline", str(baseline)])
    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and (str(baseline) in err or "NOPE-001" in err)


def test_junit_skips_what_was_set_aside(breached: str, tmp_path: Path) -> None:
    out = tmp_path / "report.xml"
    assert main(["certify", breached, "--ignore", "MAN-001", "--format", "junit", "--output", str(out)]) == 0
    suite = ET.parse(out).getroot()
    [case] = [c for c in suite.findall("testcase") if c.get("name", "").startswith("MAN-001 ")]
    skipped = case.find("skipped")
    assert case.find("failure") is None and skipped is not None
    assert "set aside by MAN-001 (--ignore)" in skipped.get("message", "")
    assert suite.get("failures") == "0" and suite.get("skipped") == "1"


@pytest.mark.interop
def test_known_divergence_is_named_and_can_be_set_aside(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """F-012 (pylance accepts a relative base path): certify's BASE-002 MUST says it is F-012 in text,
    JSON and JUnit; --ignore F-012 sets exactly those findings aside and the exit status becomes 0."""
    from conformance.shapes import DIVERGENCE_SHAPES

    shape = DIVERGENCE_SHAPES["relative_base_path"](tmp_path / "shape")
    assert main(["certify", shape.uri]) == 1
    assert "[known divergence F-012]" in capsys.readouterr().out
    assert main(["certify", shape.uri, "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    assert {f["known_divergence"] for f in document["findings"] if f["requirement"] == "BASE-002"} == {"F-012"}
    assert "F-012" in document["known_divergences"]
    junit = tmp_path / "r.xml"
    assert main(["certify", shape.uri, "--format", "junit", "--output", str(junit)]) == 1
    capsys.readouterr()
    [case] = [c for c in ET.parse(junit).getroot().findall("testcase") if c.get("name", "").startswith("BASE-002")]
    failure = case.find("failure")
    assert failure is not None and "[known divergence F-012]" in (failure.text or "")
    assert main(["certify", shape.uri, "--ignore", "F-012"]) == 0
