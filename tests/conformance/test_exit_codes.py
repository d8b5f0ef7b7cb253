"""Every exit status of the command line, provoked through the real CLI (``main`` or a process); the table
of docs/exit-codes.md names these tests:

0 success; 1 a MUST requirement breached (certify); 2 cannot read (the reader's setup: one line, no
requirement id), cannot judge, or the command line is wrong (one line naming the file or the option); 3 a
bug of lancespec, that is any exception that is no ``LanceSpecError``, however deep it was raised (one line
saying where; certify still writes the report of what it checked); 130 interrupted. A bug is injected by
replacing one function with one that raises (the only way to have a bug on purpose); the interrupt of
``certify-writer`` is a real SIGINT, sent by the writer process it drives.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pyarrow as pa
import pytest
from process_kit import interruptible

from conformance.checks import REGISTRY, all_checks
from lancespec.cli import main
from reference import ops
from reference.codec import decode_manifest_file, encode_manifest_file
from reference.table import Dataset

INTERNAL = "lancespec: internal error"
REQUIREMENT = re.compile(r"\b[A-Z]+-[0-9]{3}\b")
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "spec" / "certify-report.schema.json").read_text())


@pytest.fixture
def clean(tmp_path: Path) -> str:
    uri = str(tmp_path / "clean")
    ops.create(uri, pa.table({"a": list(range(6))}), max_rows_per_file=2)
    return uri


@pytest.fixture
def breached(tmp_path: Path) -> str:
    """Two fragments share an id (MAN-001)."""
    uri = str(tmp_path / "breached")
    ops.create(uri, pa.table({"a": list(range(4))}), max_rows_per_file=2)
    path = Path(Dataset.open(uri).snapshot().manifest_uri)
    manifest_file = decode_manifest_file(path.read_bytes())
    manifest_file.manifest.fragments[1].id = manifest_file.manifest.fragments[0].id
    path.write_bytes(encode_manifest_file(manifest_file.manifest, manifest_file.transaction_bytes))
    return uri


def lancespec(*argv: str) -> subprocess.CompletedProcess[str]:
    """The command line in a child process that Ctrl-C reaches even when this test runs in the background."""
    return subprocess.run(interruptible([sys.executable, "-m", "lancespec", *argv]), capture_output=True, text=True,
                          check=False, timeout=600)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def raising(exc: BaseException) -> object:
    def fail(*args: object, **kwargs: object) -> None:
        raise exc

    return fail


def break_last_check(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> str:
    """Make the last check certify runs raise ``exc``; returns its name."""
    name = max(all_checks())
    monkeypatch.setitem(REGISTRY, name, dataclasses.replace(REGISTRY[name], func=raising(exc)))
    return name


# --- certify ------------------------------------------------------------------------------------------


def test_certify_0_conformant_and_1_breach(clean: str, breached: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A manifest that exists but is no manifest is a breach of the format (HIST-001), not "cannot read"."""
    assert main(["certify", clean]) == 0
    assert main(["certify", breached]) == 1
    capsys.readouterr()
    garbled = tmp_path / "garbled" / "_versions"
    garbled.mkdir(parents=True)
    (garbled / "18446744073709551614.manifest").write_bytes(b"not a manifest")
    assert main(["certify", str(tmp_path / "garbled")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("NOT CONFORMANT") and "MUST   HIST-001" in out


def assert_cannot_read(code: int, out: str, err: str, *named: str) -> None:
    """Exit 2, nothing on stdout, one line on stderr that names ``named`` and no requirement."""
    assert code == 2 and out == "", out + err
    line = one_line(err)
    assert line.startswith("lancespec: cannot read: ") and "MUST" not in line and not REQUIREMENT.search(line), line
    assert all(word in line for word in named), line


@pytest.mark.parametrize("command", ["certify", "inspect"])
def test_2_cannot_read_is_one_line_without_a_requirement(command: str, clean: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The setup mistakes that need no store (tests/s3/test_cannot_read.py has those that do): nothing at the
    path, a file, an unsupported scheme, a store nobody configured, a malformed S3 URI (refused before any
    request), a limit reached."""
    (tmp_path / "a-file").write_text("x")
    cases = [([str(tmp_path / "nothing")], ("does not exist",)),
             ([str(tmp_path / "a-file")], ("is a file",)),
             (["hdfs://cluster/ds"], ("no store for scheme 'hdfs'",)),
             (["gs://bucket/ds"], ("no GCS store is configured",)),
             (["az://container/ds"], ("no Azure store is configured",)),
             (["s3:/bucket/ds"], ("names no bucket", "s3://BUCKET/PATH")),
             ([clean, "--max-fragments", "2"], ("raise it with --max-fragments",))]
    for argv, named in cases:
        code = main([command, *argv])
        assert_cannot_read(code, *capsys.readouterr(), *named)


def test_certify_json_says_the_outcome_of_each_exit_status(clean: str, breached: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """``outcome`` and ``exit_code`` agree with the exit status for every outcome certify reports (exit 3's
    report: test_certify_3_for_a_failing_check_with_the_report); a cannot-read report holds no finding."""
    unknown_flag = tmp_path / "flagged"
    shutil.copytree(clean, unknown_flag)
    path = Path(Dataset.open(str(unknown_flag)).snapshot().manifest_uri)
    manifest_file = decode_manifest_file(path.read_bytes())
    manifest_file.manifest.reader_feature_flags |= 1 << 40
    path.write_bytes(encode_manifest_file(manifest_file.manifest, manifest_file.transaction_bytes))
    for uri, code, outcome in [(clean, 0, "conformant"), (breached, 1, "breach"),
                               (str(unknown_flag), 2, "cannot_judge"), (str(tmp_path / "nothing"), 2, "cannot_read")]:
        out = tmp_path / f"{outcome}.json"
        assert main(["certify", uri, "--format", "json", "--output", str(out)]) == code
        report = json.loads(out.read_text())
        jsonschema.validate(report, SCHEMA)
        assert (report["exit_code"], report["outcome"], report["conformant"]) == (code, outcome, code == 0)
        assert (report["cannot_read"] is None) == (outcome != "cannot_read")
    assert report["findings"] == [] and "does not exist" in report["cannot_read"]
    capsys.readouterr()


def test_plugin_cannot_read_is_one_line_and_an_unknown_option_a_usage_error(pytester: pytest.Pytester,
                                                                           tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--lance-certify={empty}")
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"cannot read: {empty}*"])
    assert "MUST" not in result.stdout.str()
    missing = str(tmp_path / "nothing")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--lance-certify={missing}")
    assert result.ret == 4  # pytest's usage error: a local dataset that does not exist
    assert "no such directory" in result.stderr.str() and len(result.stderr.str().strip().splitlines()) == 1
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--lance-certify={empty}",
                                           "--lance-certify-option", "aws_endpont=http://127.0.0.1:1")
    assert result.ret == 4  # pytest's usage error
    assert "did you mean aws_endpoint?" in result.stderr.str()


@pytest.mark.parametrize(("option", "named"), [
    (["--version", "seven"], "--version"),
    (["--storage-option", "no-equals-sign"], "--storage-option"),
    (["--only", "nowhere"], "--only"),
    (["--io-parallelism", "0"], "I/O parallelism"),
    (["--storage-option", "aws_endpont=http://127.0.0.1:1"], "did you mean aws_endpoint?"),
])
def test_certify_2_for_a_wrong_command_line(clean: str, option: list[str], named: str) -> None:
    done = lancespec("certify", clean, *option)
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert line.startswith("lancespec") and ": error: " in line and named in line and "Traceback" not in done.stderr


def test_certify_3_for_a_failing_check_with_the_report(clean: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    name = break_last_check(monkeypatch, ValueError("a bug deep inside"))
    out = tmp_path / "report.json"
    assert main(["certify", clean, "--format", "json", "--output", str(out)]) == 3
    err = capsys.readouterr().err
    assert f"{INTERNAL} (a bug in lancespec)" in err and name in err and "a bug deep inside" in err
    report = json.loads(out.read_text())
    assert name in report["internal_error"] and report["exit_code"] == 3 and name in report["checks"]


def test_certify_3_for_a_value_error_outside_the_checks(clean: str, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A ValueError is no usage error: it says nothing about the command line."""
    monkeypatch.setattr(Dataset, "version_entries", raising(ValueError("listing went wrong")))
    assert main(["certify", clean]) == 3
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"{INTERNAL}: ValueError: listing went wrong (at ") and "--help" not in line


def test_certify_130_when_interrupted(clean: str, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    break_last_check(monkeypatch, KeyboardInterrupt())
    assert main(["certify", clean]) == 130
    assert one_line(capsys.readouterr().err) == "lancespec: interrupted"


# --- inspect ------------------------------------------------------------------------------------------


def test_inspect_0_and_2(clean: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", clean, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == 1
    assert main(["inspect", str(tmp_path / "nothing")]) == 2
    assert one_line(capsys.readouterr().err).startswith(f"lancespec: cannot read: {tmp_path / 'nothing'}")
    with pytest.raises(SystemExit) as wrong:
        main(["inspect", clean, "--storage-option", "x"])
    assert wrong.value.code == 2 and "--storage-option" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("exc", [ValueError("no usage error"), KeyError("report"), OSError("a bug's OSError")])
def test_inspect_3_for_any_other_exception(clean: str, exc: Exception, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("lancespec.inspect.inspect_report", raising(exc))
    assert main(["inspect", clean]) == 3
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"{INTERNAL}: {type(exc).__name__}: ") and "LANCESPEC_DEBUG" in line


def test_inspect_130_when_interrupted(clean: str, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("lancespec.inspect.inspect_report", raising(KeyboardInterrupt()))
    assert main(["inspect", clean]) == 130
    assert one_line(capsys.readouterr().err) == "lancespec: interrupted"


# --- certify-writer -----------------------------------------------------------------------------------


def test_certify_writer_2_for_an_unknown_writer_or_an_unusable_capability_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as wrong:
        main(["certify-writer", "--writer", "nope", "--scenarios", "clone-after-tag", "--store", "local"])
    assert wrong.value.code == 2 and "unknown writer 'nope'" in one_line(capsys.readouterr().err)
    caps = tmp_path / "caps.toml"
    caps.write_text('writer = "x"\nnonsense = 1\n')
    assert main(["certify-writer", "--writer", "reference", "--capabilities", str(caps), "--scenarios",
                 "clone-after-tag", "--store", "local"]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"lancespec: error: {caps}: unusable capability file") and "nonsense" in line


INTERRUPTING_WRITER = """
import json, os, signal, sys
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "hello":
        os.kill(os.getppid(), signal.SIGINT)  # the user presses Ctrl-C while lancespec waits for this writer
    print(json.dumps({"id": message["id"], "ok": True, "result": {}}), flush=True)
"""


def test_certify_writer_130_on_a_real_interrupt(tmp_path: Path) -> None:
    writer = tmp_path / "writer.py"
    writer.write_text(INTERRUPTING_WRITER)
    done = lancespec("certify-writer", "--writer", f"cmd:{sys.executable} {writer}", "--scenarios",
                     "clone-after-tag", "--store", "local", "--no-compare")
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "lancespec: interrupted" and "Traceback" not in done.stderr
