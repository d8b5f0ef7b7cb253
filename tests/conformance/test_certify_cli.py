"""``lancespec certify``: exit codes, the three report formats (JSON validated against the published
schema, JUnit parsed), --output, --only, the progress bar's silence off a terminal, and the pytest
plugin (fixture and --lance-certify items)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pyarrow as pa
import pytest

from conformance.catalogue import load_catalogue
from lancespec.cli import main
from reference import ops
from reference.codec import decode_manifest_file, encode_manifest_file
from reference.table import Dataset

SCHEMA = json.loads(resources.files("spec").joinpath("certify-report.schema.json").read_text())


@pytest.fixture
def clean(tmp_path: Path) -> str:
    uri = str(tmp_path / "clean")
    ops.create(uri, pa.table({"a": list(range(6))}), max_rows_per_file=2)
    ops.append(Dataset.open(uri), pa.table({"a": [7]}))
    return uri


@pytest.fixture
def breached(tmp_path: Path) -> str:
    """Two fragments share an id (MAN-001) in the latest manifest."""
    uri = str(tmp_path / "breached")
    ops.create(uri, pa.table({"a": list(range(4))}), max_rows_per_file=2)
    snapshot = Dataset.open(uri).snapshot()
    manifest_file = decode_manifest_file(Path(snapshot.manifest_uri).read_bytes())
    manifest = manifest_file.manifest
    manifest.fragments[1].id = manifest.fragments[0].id
    Path(snapshot.manifest_uri).write_bytes(encode_manifest_file(manifest, manifest_file.transaction_bytes))
    return uri


def test_exit_codes(clean: str, breached: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", clean]) == 0
    assert "CONFORMANT" in capsys.readouterr().out
    assert main(["certify", breached]) == 1
    out = capsys.readouterr().out
    assert "NOT CONFORMANT" in out and "MAN-001" in out
    assert main(["certify", str(tmp_path / "nothing")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"lancespec: cannot read: {tmp_path / 'nothing'}: does not exist\n"
    assert main(["certify", clean, "--version", "9"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"lancespec: error: {clean}: version 9 does not exist; the versions are 1-2\n"


def test_json_report_follows_its_schema(breached: str, clean: str, capsys: pytest.CaptureFixture[str]) -> None:
    for uri, conformant in ((clean, True), (breached, False)):
        main(["certify", uri, "--format", "json", "--all-versions"])
        document = json.loads(capsys.readouterr().out)
        jsonschema.validate(document, SCHEMA)
        assert document["conformant"] is conformant
        assert document["versions"] == Dataset.open(uri).versions()
    assert any(f["requirement"] == "MAN-001" and f["severity"] == "MUST" for f in document["findings"])


def test_junit_has_one_case_per_requirement(breached: str, tmp_path: Path) -> None:
    out = tmp_path / "report.xml"
    assert main(["certify", breached, "--format", "junit", "--output", str(out)]) == 1
    suite = ET.parse(out).getroot()
    cases = suite.findall("testcase")
    ids = [c.get("name", "").split()[0] for c in cases]
    assert len(ids) == len(set(ids)) == int(suite.get("tests", "0"))
    assert set(ids) <= set(load_catalogue())
    failed = [c.get("name", "").split()[0] for c in cases if c.find("failure") is not None]
    assert failed == ["MAN-001"]


def test_only_restricts_the_areas(breached: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", breached, "--only", "refs", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["checks"] and all(name.startswith("refs.") for name in document["checks"])


def test_progress_is_silent_off_a_terminal(clean: str) -> None:
    done = subprocess.run([sys.executable, "-m", "lancespec", "certify", clean, "--all-versions"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0
    assert done.stderr == ""


def test_plugin_items_and_fixture(pytester: pytest.Pytester, clean: str, breached: str) -> None:
    pytester.makepyfile(
        f"""
        import pytest

        def test_clean(lance_certify):
            report = lance_certify({clean!r})
            assert report.conformant

        def test_breached(lance_certify):
            with pytest.raises(AssertionError, match="MAN-001"):
                lance_certify({breached!r})
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--lance-certify", clean, "--lance-certify", breached)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*lance-certify*breached*", "*MAN-001*"])


def _set_latest(uri: str, edit: object) -> None:
    snapshot = Dataset.open(uri).snapshot()
    manifest_file = decode_manifest_file(Path(snapshot.manifest_uri).read_bytes())
    edit(manifest_file.manifest)  # type: ignore[operator]
    Path(snapshot.manifest_uri).write_bytes(encode_manifest_file(manifest_file.manifest,
                                                                 manifest_file.transaction_bytes))


@pytest.mark.parametrize(("edit", "named"), [
    (lambda m: setattr(m, "reader_feature_flags", m.reader_feature_flags | 1 << 40), "bit(s) 1099511627776"),
    (lambda m: setattr(m.data_format, "version", "9.9"), "'9.9'"),
], ids=["unknown-reader-flag", "unknown-data-format"])
def test_what_certify_does_not_know_it_cannot_judge(clean: str, edit: object, named: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """MAN-011: a reader flag (or data format version) lancespec does not know is no breach: certify
    declines to judge, exit 2, "cannot judge: ..." naming what it does not know, and no MUST finding."""
    _set_latest(clean, edit)
    assert main(["certify", clean]) == 2
    out = capsys.readouterr().out
    assert out.startswith("CANNOT JUDGE") and "cannot judge:" in out and named in out
    assert main(["certify", clean, "--format", "json"]) == 2
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    assert document["conformant"] is False and document["readable"] is True
    assert len(document["cannot_judge"]) == 1 and named in document["cannot_judge"][0]
    assert document["summary"]["must"] == 0


def test_an_unknown_writer_flag_does_not_stop_judgement(clean: str) -> None:
    """Writer flags bind writers (MAN-020), not readers: certify still judges the dataset."""
    _set_latest(clean, lambda m: setattr(m, "writer_feature_flags", m.writer_feature_flags | 1 << 40))
    assert main(["certify", clean]) == 0


def test_every_finding_path_is_a_path(clean_dataset: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A finding's ``path`` names a file or directory, never a phrase: what lies inside it (a fragment, a
    base, an index) is its ``detail``. Damage several elements of one dataset and look at every finding."""
    from conformance_kit import latest_version, rewrite_manifest, snapshot

    uri = clean_dataset(bases=True, deletions=("arrow",))
    latest = snapshot(uri)
    deletion = next(f.deletion for f in latest.fragments if f.deletion is not None)
    assert deletion.file.uri is not None
    Path(deletion.file.uri).unlink()

    def edit(m: Any) -> None:
        m.fragments[1].id = m.fragments[0].id  # MAN-001
        m.fragments[0].files[0].fields.append(-1)  # MAN-006
        m.base_paths[0].path = "relative/base"  # BASE-002

    rewrite_manifest(uri, latest_version(uri), edit)
    assert main(["certify", uri, "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    found = {f["requirement"]: f for f in document["findings"]}
    assert {"MAN-001", "MAN-006", "BASE-002", "DEL-001"} <= set(found)
    for f in document["findings"]:
        assert not re.search(r" (fragment|base|index|file|deletion) ", f["path"]), f
        assert f["path"].startswith(uri) or f["path"].startswith("relative"), f
    assert found["DEL-001"]["path"] == deletion.file.uri and found["DEL-001"]["detail"].startswith("fragment ")
    assert found["MAN-006"]["detail"].startswith("fragment 0 file ")
    assert found["BASE-002"]["detail"] == f"base {latest.bases[0].id}"


BRANCHES = Path(__file__).resolve().parents[2] / "fixtures" / "cases" / "py-branches" / "data" / "ds"


def test_the_command_as_a_process_ends_with_its_exit_code_and_its_whole_report(tmp_path: Path) -> None:
    """The command ends its process without freeing what the run held one by one (``exit_now``): the exit
    code is still the verdict's, and the report file and the verdict line are whole."""
    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "lancespec", "certify", str(BRANCHES), "--format", "json",
                           "--output", str(out), "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert done.stdout == f"NOT CONFORMANT: {BRANCHES}\n"
    assert json.loads(out.read_text())["exit_code"] == 1


def test_a_caller_s_main_frees_what_the_command_left_to_the_end(tmp_path: Path) -> None:
    """``main(argv)`` in a caller's process returns, and nothing of the run is kept for a process end that the
    command does not own."""
    from lancespec.cli.options import LEFT_TO_EXIT

    assert main(["certify", str(BRANCHES), "--quiet"]) == 1
    assert LEFT_TO_EXIT == []
