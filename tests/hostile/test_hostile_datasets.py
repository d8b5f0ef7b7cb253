"""The hostile corpus: each probe of issue 18 built small at test time, certified (or inspected) through
the command line in a child process, with its expected verdict: a finding or a one-line refusal, within
its time limit, no signal, no traceback, nothing left behind (docs/security.md).

A probe that would read outside the dataset is run under the fuzzer's audited worker
(``lancespec.fuzz_worker.Worker``), which records every path the process opens or lists."""

from __future__ import annotations

import json
import os
import resource
import signal
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from conformance_kit import build_reference_dataset, latest_version, rewrite_manifest, snapshot
from process_kit import interruptible
from pyroaring import BitMap

from lancespec.fuzz_worker import Worker
from lancespec.fuzz_world import build_pristine
from reference import ops
from reference.codec import encode_manifest_file
from reference.proto import table_pb2

LIMIT_SECONDS = 60


def run_cli(*argv: str, tmpdir: Path | None = None, timeout: float = LIMIT_SECONDS) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "lancespec", *argv], capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)
    assert done.returncode >= 0, f"killed by signal {-done.returncode}"
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert time.monotonic() - started < timeout
    return done


def findings(done: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    report: list[dict[str, object]] = json.loads(done.stdout)["findings"]
    return report


def deletion_file(uri: str) -> Path:
    for fragment in snapshot(uri).fragments:
        if fragment.deletion is not None and fragment.deletion.file.uri:
            return Path(fragment.deletion.file.uri)
    raise AssertionError("no deletion file")


# --- nothing kills the judge ------------------------------------------------------------------------


def test_a_codec_crash_is_a_finding_naming_the_file(tmp_path: Path) -> None:
    """A NUL in the blob field's name in a data file's schema makes the file codec abort (SIGABRT); the
    crash happens in the codec's child process and is a finding; no temporary copy is left behind."""
    root = tmp_path / "ds"
    table = pa.Table.from_arrays([pa.array(range(3), pa.int64()), lance.blob_array([b"ab", b"c" * 10, None])],
                                 schema=pa.schema([pa.field("id", pa.int64()), lance.blob_field("blob")]))
    ops.create(str(root), table)
    data_file = next((root / "data").glob("*.lance"))
    content = bytearray(data_file.read_bytes())
    at = content.rfind(b"blob")  # the name in the file schema, the last global buffer before the metadata
    content[at:at + 4] = bytes(4)
    data_file.write_bytes(bytes(content))
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = run_cli("certify", str(root), "--format", "json", tmpdir=temp)
    assert done.returncode == 1
    crash = [f for f in findings(done) if "died by signal SIGABRT" in str(f["message"])]
    assert crash and all(f["path"] == str(data_file) for f in crash)
    assert list(temp.iterdir()) == []


def test_an_internal_error_exits_3_with_the_report_so_far(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A check that fails with something other than a LanceSpecError is a lancespec bug: exit 3, the JSON
    report of what was checked before, and the file and line of the bug."""
    from conformance.checks import REGISTRY, Check, all_checks
    from lancespec.cli import main

    uri = build_reference_dataset(tmp_path, deletions=("arrow",))
    next(Path(uri).glob("_deletions/*")).unlink()  # a finding (DEL-001) of a check that runs before the bug
    all_checks()
    name = "portability.self_reference"

    def broken(ctx: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setitem(REGISTRY, name, Check(name, "version", REGISTRY[name].requirements, broken))
    code = main(["certify", uri, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 3
    report = json.loads(out)
    assert report["exit_code"] == 3 and "test_hostile_datasets.py" in report["internal_error"]
    assert any(f["requirement"] == "DEL-001" for f in report["findings"])  # checked before the bug
    assert len(err.strip().splitlines()) == 1 and "internal error" in err


# --- bounded ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("offsets", [2**26, 2**32], ids=["2^26", "2^32"])
def test_a_huge_bitmap_is_judged_without_expanding_it(tmp_path: Path, offsets: int) -> None:
    uri = build_reference_dataset(tmp_path, deletions=("bin",))
    target = deletion_file(uri)
    bitmap = BitMap(range(0, offsets)) if offsets < 2**32 else BitMap(range(0, 2**32))
    bitmap.run_optimize()
    target.write_bytes(bitmap.serialize())
    assert target.stat().st_size < 1_000_000
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = run_cli("certify", uri, "--format", "json", timeout=30)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert done.returncode == 1
    found = {f["requirement"]: f["message"] for f in findings(done)}
    assert f"holds {offsets} distinct offsets" in str(found["DEL-003"])
    assert "DEL-004" in found
    assert max(before, peak_kb) < 1_000_000  # KB: far from the gigabytes an expanded list takes


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "device"])
@pytest.mark.parametrize("what", ["deletion", "transaction", "data"])
def test_no_regular_file_is_refused_never_waited_on(tmp_path: Path, kind: str, what: str) -> None:
    """A FIFO, a link to /dev/zero or a device node (made here: the kernel's null device) in place of a deletion
    file, a transaction file or a data file: a finding naming what it is; the device is never opened (docs/security.md:
    a device's driver acts on open), which ``inotify`` on its directory tells."""
    from device_kit import make_device, watching_opens

    uri = build_reference_dataset(tmp_path, deletions=("arrow",))
    folder = {"deletion": "_deletions", "transaction": "_transactions", "data": "data"}[what]
    target = deletion_file(uri) if what == "deletion" else sorted((Path(uri) / folder).iterdir())[-1]
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        make_device(target)
    else:
        target.symlink_to("/dev/zero")
    with watching_opens(target.parent, Path(uri) / "_versions") as watch:
        done = run_cli("certify", uri, "--all-versions", "--format", "json", timeout=30)
        opened = watch.opened()
    assert done.returncode == 1
    message = {"fifo": "a FIFO", "device": "a character device", "dev-zero": "symbolic link"}[kind]
    assert any(message in str(f["message"]) and str(target) in str(f["path"]) + str(f["message"])
               for f in findings(done)), findings(done)
    assert target not in opened or kind != "device", "the device node was opened"
    assert opened, "the watch saw no open at all (manifests are read): it would not see the device's either"


def test_fanning_directory_links_are_not_walked(tmp_path: Path) -> None:
    """60 directory links under data/, each to data/ itself (2^60 paths if followed), and one to /."""
    uri = build_reference_dataset(tmp_path)
    data = Path(uri) / "data"
    for i in range(60):
        (data / f"d{i}").symlink_to(data)
    (data / "root").symlink_to("/")
    done = run_cli("certify", uri, "--all-versions", "--format", "json", timeout=30)
    assert done.returncode in (0, 1)
    assert not any("/usr" in str(f["path"]) for f in findings(done))


def test_ten_million_fragments_are_refused_in_one_line(tmp_path: Path) -> None:
    """A 20 MB manifest of 10 million empty fragments: refused before decoding, naming the limit."""
    versions = tmp_path / "ds" / "_versions"
    versions.mkdir(parents=True)
    manifest = table_pb2.Manifest(version=1)
    body = manifest.SerializeToString() + b"\x12\x00" * 10_000_000
    (versions / "18446744073709551614.manifest").write_bytes(
        struct.pack("<I", len(body)) + body + struct.pack("<QHH4s", 0, 0, 2, b"LANC"))
    for command in (["certify"], ["inspect"]):
        done = run_cli(*command, str(tmp_path / "ds"))
        assert done.returncode == 2
        assert "above the limit of 1000000 (raise it with --max-fragments)" in done.stdout + done.stderr
    assert len(run_cli("inspect", str(tmp_path / "ds")).stderr.strip().splitlines()) == 1


def test_a_deeply_nested_tag_is_a_finding(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path, tags=True)
    tag = Path(uri) / "_refs" / "tags" / "first.json"
    tag.write_text("[" * 100_000 + "]" * 100_000)
    done = run_cli("certify", uri, "--all-versions", "--format", "json")
    assert any(f["requirement"] == "REF-001" and f["path"] == str(tag) and "nested too deeply" in str(f["message"])
               for f in findings(done))
    inspected = run_cli("inspect", uri)
    assert inspected.returncode == 2 and str(tag) in inspected.stderr
    assert len(inspected.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["9" * 5000, "-1", str(2**64)])
def test_an_impossible_version_number_is_one_line(tmp_path: Path, value: str) -> None:
    done = run_cli("certify", str(tmp_path), "--version", value)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "usage" not in done.stderr
    assert len(done.stderr) < 300


def test_an_arrow_deletion_file_with_a_field_name_that_is_not_utf8_is_a_finding(tmp_path: Path) -> None:
    """Found by the fuzzer (seed 221834): pyarrow reads such a file and fails only when the name is first
    used, with UnicodeDecodeError, which was an internal error (exit 3) instead of DEL-002."""
    uri = build_reference_dataset(tmp_path, deletions=["arrow"])
    path = deletion_file(uri)
    data = path.read_bytes()
    assert b"row_id" in data
    path.write_bytes(data.replace(b"row_id", b"\xf2ow_id"))
    done = run_cli("certify", uri, "--format", "json")
    assert done.returncode == 1, done.stderr
    assert any(f["requirement"] == "DEL-002" and "not UTF-8" in str(f["message"]) for f in findings(done))


# --- contained ----------------------------------------------------------------------------------------


def _audited(argv: list[str], allowed: list[str]) -> dict[str, object]:
    worker = Worker()
    try:
        return worker.run(argv, allowed)
    finally:
        worker.stop()


def test_a_branch_ref_escaping_tree_is_a_finding_and_never_listed(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path / "inside")
    other = build_reference_dataset(tmp_path / "other")  # a whole dataset outside, where the name leads
    escape = os.path.relpath(other, Path(uri) / "tree")
    name = escape.replace("/", "%2F")
    (Path(uri) / "_refs" / "branches").mkdir(parents=True)
    (Path(uri) / "_refs" / "branches" / f"{name}.json").write_text('{"parentVersion": 1}')
    answer = _audited(["certify", uri, "--all-versions", "--format", "json"], [str(tmp_path / "inside")])
    assert answer["code"] == 1 and answer["outside"] == [], answer
    done = run_cli("certify", uri, "--all-versions", "--format", "json")
    assert any(f["requirement"] == "REF-003" and "would not lie under tree/" in str(f["message"])
               for f in findings(done))
    assert not any(str(other) in str(f["path"]) for f in findings(done))
    answer = _audited(["inspect", uri, "--json"], [str(tmp_path / "inside")])
    assert answer["code"] == 0 and answer["outside"] == [], answer


@pytest.mark.parametrize("path", ["../../../outside.lance", "a/..%2F..%2F..%2Foutside.lance"])
def test_a_data_path_leaving_its_directory_is_never_opened(tmp_path: Path, path: str) -> None:
    uri = build_reference_dataset(tmp_path / "w")
    (tmp_path / "outside.lance").write_bytes(b"not yours")
    rewrite_manifest(uri, 2, lambda m: setattr(m.fragments[0].files[0], "path", path))
    answer = _audited(["certify", uri, "--format", "json"], [str(tmp_path / "w")])
    assert answer["outside"] == [], answer
    done = run_cli("certify", uri, "--format", "json")
    assert any(f["requirement"] == "PORT-001" and "not followed" in str(f["message"]) for f in findings(done))


def test_a_transaction_file_leaving_its_directory_is_never_opened(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path / "w")
    (tmp_path / "secret.txn").write_bytes(b"not yours")
    rewrite_manifest(uri, 2, lambda m: setattr(m, "transaction_file", "../../secret.txn"))
    answer = _audited(["certify", uri, "--all-versions", "--format", "json"], [str(tmp_path / "w")])
    assert answer["outside"] == [], answer
    done = run_cli("certify", uri, "--all-versions", "--format", "json")
    assert any(f["requirement"] == "LAYOUT-004" and "not read" in str(f["message"]) for f in findings(done))


@pytest.mark.parametrize("path", ["", "relative/dir"])
def test_a_base_without_an_absolute_path_is_never_followed(tmp_path: Path, path: str) -> None:
    """A base path that is empty or relative (BASE-002) names no location: nothing is opened under the
    filesystem root or the working directory through it, not even by the blob checks (found by the fuzzer
    in a mutated branch manifest: an empty base path resolved data files to ``/{name}.lance``)."""
    top = build_pristine(tmp_path / "w")  # a blob column whose data files live in the non-root base "b"
    uri = str(top / "ds")

    def edit(m: table_pb2.Manifest) -> None:
        for base in m.base_paths:
            base.path = path

    rewrite_manifest(uri, latest_version(uri), edit)
    answer = _audited(["certify", uri, "--format", "json"], [str(top)])
    assert answer["outside"] == [], answer
    done = run_cli("certify", uri, "--format", "json")
    assert any(f["requirement"] == "BASE-002" for f in findings(done)), findings(done)


# --- reports that cannot be forged --------------------------------------------------------------------


def _with_base_path(uri: str, path: str) -> None:
    def edit(m: table_pb2.Manifest) -> None:
        m.base_paths.add(id=7, path=path, is_dataset_root=False)

    rewrite_manifest(uri, 2, edit)


def test_control_characters_cannot_forge_report_lines(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path)
    _with_base_path(uri, "relative\nCONFORMANT: /fake\x1b[2J\u202e")
    (Path(uri) / os.fsdecode(b"stray\xff\x1b[31m")).write_bytes(b"x")
    text = run_cli("certify", uri)
    assert not any(line.startswith("CONFORMANT") for line in text.stdout.splitlines())
    assert "\x1b" not in text.stdout and "\\x1b" in text.stdout and "\\xff" in text.stdout
    junit = run_cli("certify", uri, "--format", "junit")
    ET.fromstring(junit.stdout.encode())  # well-formed
    inspected = run_cli("inspect", uri)
    assert "\x1b" not in inspected.stdout


def test_a_megabyte_base_path_gives_short_lines(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path)
    _with_base_path(uri, "x" * 1_000_000)  # not absolute: BASE-002's finding names it
    done = run_cli("certify", uri)
    assert max(len(line) for line in done.stdout.splitlines()) < 5000
    assert "characters)" in done.stdout and "BASE-002" in done.stdout
    inspected = run_cli("inspect", uri)
    assert len(inspected.stdout) < 100_000


@pytest.mark.parametrize("command", ["certify", "inspect"])
def test_ctrl_c_is_one_line_and_exit_130(tmp_path: Path, command: str) -> None:
    versions = tmp_path / "ds" / "_versions"
    versions.mkdir(parents=True)
    body = table_pb2.Manifest(version=1).SerializeToString() + b"\x12\x00" * 10_000_000
    (versions / "18446744073709551614.manifest").write_bytes(
        struct.pack("<I", len(body)) + body + struct.pack("<QHH4s", 0, 0, 2, b"LANC"))
    proc = subprocess.Popen(interruptible([sys.executable, "-m", "lancespec", command, str(tmp_path / "ds"),
                                           "--max-fragments", "20000000"]),
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    time.sleep(2.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip() == "lancespec: interrupted"


def test_encode_helper_round_trips() -> None:
    """The probes above write manifests by hand; the framing they use is the codec's."""
    manifest = table_pb2.Manifest(version=1)
    body = manifest.SerializeToString()
    assert encode_manifest_file(manifest, None) == struct.pack("<I", len(body)) + body + struct.pack(
        "<QHH4s", 0, 0, 2, b"LANC")
