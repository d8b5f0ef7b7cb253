"""The pytest plugin as pytest users expect it (``conformance.pytest_plugin``), run through pytester: a usage
mistake is one line (exit 4), node ids and JUnit classnames name the dataset, a failure shows the certify
report and no frame of the plugin, settings come from the pytest configuration file, and the fixture takes
``ignore``, ``baseline`` and ``since``."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.checks import all_checks
from lancespec.cli import main
from reference import ops
from reference.table import Dataset

# pytester runs pytest in this process and afterwards forgets the modules that run imported; the checks
# register themselves once per process, so they are imported here, before any run.
all_checks()


@pytest.fixture
def clean(tmp_path: Path) -> str:
    uri = str(tmp_path / "clean")
    ops.create(uri, pa.table({"a": list(range(4))}), max_rows_per_file=2)
    return uri


@pytest.fixture
def missing_file(tmp_path: Path) -> str:
    """A dataset whose one data file of two is gone (BASE-004)."""
    uri = str(tmp_path / "missing-file")
    ops.create(uri, pa.table({"a": list(range(4))}), max_rows_per_file=2)
    [fragment, _] = Dataset.open(uri).snapshot().fragments
    [data_file] = fragment.files
    assert data_file.uri is not None
    Path(data_file.uri).unlink()
    return uri


@pytest.fixture
def baseline(missing_file: str, tmp_path: Path) -> Path:
    path = tmp_path / "baseline.toml"
    assert main(["certify", missing_file, "--write-baseline", str(path)]) == 1
    return path


def _error_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stderr.lines if line.strip()]


@pytest.mark.parametrize("argv", [["--lance-certify", "/nope/ds"], ["--lance-certify=/nope/ds"]])
def test_a_dataset_that_is_not_there_is_a_one_line_usage_error(pytester: pytest.Pytester, argv: list[str]) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", *argv)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert _error_lines(result) == ["ERROR: --lance-certify /nope/ds: no such directory (give a dataset root: a "
                                    "local directory, file:// or s3:// URI)"]
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(("ini", "named"), [
    ("lance_certify_storage_options = no-equals-sign", "KEY=VALUE"),
    ("lance_certify_areas = nowhere", "nowhere"),
    ("lance_certify_ignore = NOPE-001", "NOPE-001"),
    ("lance_certify_baseline = absent.toml", "absent.toml does not exist"),
])
def test_a_bad_setting_is_a_one_line_usage_error(pytester: pytest.Pytester, clean: str, ini: str,
                                                  named: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--lance-certify={clean}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    [line] = _error_lines(result)
    assert line.startswith("ERROR: lancespec: ") and named in line


def test_node_ids_and_junit_name_the_dataset(pytester: pytest.Pytester, clean: str, missing_file: str) -> None:
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest("-p", "no:cacheprovider", "-v", f"--lance-certify={clean}",
                                f"--lance-certify={missing_file}", f"--junitxml={junit}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"lance-certify::{clean} PASSED*", f"lance-certify::{missing_file} FAILED*",
                                 f"FAILED lance-certify::{missing_file}*"])
    cases = ET.parse(junit).getroot().iter("testcase")
    assert {(c.get("classname"), c.get("name")) for c in cases} == {("lance-certify", clean),
                                                                   ("lance-certify", missing_file)}


def test_a_failure_shows_the_report_not_the_plugin(pytester: pytest.Pytester, missing_file: str) -> None:
    pytester.makepyfile(f"""
        def test_writer(lance_certify):
            lance_certify({missing_file!r})
        """)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--lance-certify={missing_file}")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert out.count("NOT CONFORMANT") >= 2 and "BASE-004" in out  # the item's and the fixture's report
    assert "pytest_plugin.py" not in out and "certify_or_fail" not in out and "_pytest" not in out
    item_section = out.split(f"lance-certify {missing_file}")[1].split("=====")[0]
    assert "Traceback" not in item_section and "def " not in item_section


def test_an_unreadable_dataset_fails_its_item_in_one_line(pytester: pytest.Pytester, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = pytester.runpytest("-p", "no:cacheprovider", f"--lance-certify={empty}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"cannot read: {empty}*"])
    assert "Traceback" not in result.stdout.str()


def test_settings_from_pyproject_apply_to_items_and_the_fixture(pytester: pytest.Pytester, missing_file: str,
                                                                baseline: Path) -> None:
    pytester.makepyprojecttoml(f"""
        [tool.pytest.ini_options]
        lance_certify_baseline = ["{baseline.name}"]
        lance_certify_areas = ["files", "manifest"]
        lance_certify_storage_options = ["lancespec_io_parallelism=4"]
        """)
    (pytester.path / baseline.name).write_text(baseline.read_text())  # relative to the configuration file
    pytester.makepyfile(f"""
        def test_writer(lance_certify):
            report = lance_certify({missing_file!r})
            assert report.set_aside and {{c.split(".")[0] for c in report.checks_run}} == {{"files", "manifest"}}
        """)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--lance-certify={missing_file}")
    result.assert_outcomes(passed=2)


def test_the_fixture_takes_ignore_and_baseline(pytester: pytest.Pytester, missing_file: str,
                                               baseline: Path) -> None:
    pytester.makepyfile(f"""
        import pytest

        def test_counted(lance_certify):
            with pytest.raises(AssertionError, match="BASE-004"):
                lance_certify({missing_file!r})

        def test_ignored(lance_certify):
            assert lance_certify({missing_file!r}, ignore=["BASE-004"]).must_findings == []

        def test_baselined(lance_certify):
            report = lance_certify({missing_file!r}, baseline={str(baseline)!r})
            assert [f.set_aside for f in report.findings if f.requirement == "BASE-004"] != [None]
        """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_a_separate_local_uri_warns_about_the_rootdir(pytester: pytest.Pytester, clean: str) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--lance-certify", clean)  # clean is outside the cwd
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines([f"*pytest took --lance-certify {clean} for a test path*write --lance-certify=URI"
                                 " (one word)"])
    inside = pytester.runpytest("-p", "no:cacheprovider", f"--lance-certify={clean}")
    inside.assert_outcomes(passed=1)  # no warning: one word
    assert "PytestConfigWarning" not in inside.stdout.str()


def test_the_fixture_takes_since(pytester: pytest.Pytester, clean: str, tmp_path: Path) -> None:
    """``lance_certify(uri, since=REPORT)``: an incremental run inside a writer's test; a report of another
    selection fails the test with the refusal."""
    earlier = tmp_path / "earlier.json"
    assert main(["certify", clean, "--all-versions", "--format", "json", "--output", str(earlier), "--quiet"]) == 0
    ops.append(Dataset.open(clean), pa.table({"a": [9]}))
    pytester.makepyfile(f"""
        def test_incremental(lance_certify):
            report = lance_certify({clean!r}, since={str(earlier)!r})
            assert report.carried_over.versions == 1 and report.carried_over.new == ["v2"]

        def test_refused(lance_certify):
            lance_certify({clean!r}, all_versions=False, since={str(earlier)!r})
        """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    assert "SinceRefused" in result.stdout.str() and "--all-versions" in result.stdout.str()
