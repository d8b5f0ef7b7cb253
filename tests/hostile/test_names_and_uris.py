"""Probes of an outside review (2026-11-28): a URI scheme written in capitals, a ``file://`` root, names a
baseline must carry, and storage-option values on a local run (docs/security.md, threat model). Each one
failed on the code before it: a relative open under the working directory, a false MUST, an exit 3, an
unreadable baseline, an option taken without a word."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conformance_kit import build_reference_dataset, latest_version, rewrite_manifest
from device_kit import watching_opens

from reference.proto import table_pb2


def certify(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "lancespec", "certify", *argv], capture_output=True, text=True,
                          timeout=60, cwd=cwd, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def messages(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [f"{f['requirement']} {f['message']}" for f in json.loads(done.stdout)["findings"]]


def test_a_base_whose_scheme_is_in_capitals_is_read_where_it_points_never_under_the_working_directory(
        tmp_path: Path) -> None:
    """``FILE:///x`` is ``file:///x`` (RFC 3986 matches schemes in any case, and so does Lance). Before, it
    passed as absolute and was opened as the relative path ``FILE:/x``: a file the working directory holds under
    that name was read as the dataset's data file (found with strace; here with inotify)."""
    uri = build_reference_dataset(tmp_path / "w")
    data_file = sorted((Path(uri) / "data").iterdir())[0]
    elsewhere = tmp_path / "elsewhere"
    base = f"FILE://{elsewhere}"

    def edit(m: table_pb2.Manifest) -> None:
        m.base_paths.add(id=9, path=base, is_dataset_root=False)
        for fragment in m.fragments:
            for file in fragment.files:
                if file.path == data_file.name:
                    file.base_id = 9

    rewrite_manifest(uri, latest_version(uri), edit)
    decoy = tmp_path / "cwd" / f"FILE:{elsewhere}"  # what the relative path FILE://<elsewhere> names
    decoy.mkdir(parents=True)
    shutil.copy(data_file, decoy / data_file.name)
    with watching_opens(decoy) as watch:
        done = certify(uri, "--format", "json", cwd=tmp_path / "cwd")
        opened = watch.opened()
    assert opened == set(), f"a file under the working directory was opened: {opened}"
    assert any(m.startswith("BASE-004") and f"{base}/{data_file.name} does not exist" in m
               for m in messages(done)), messages(done)
    # where the base points, the file is found and read
    elsewhere.mkdir()
    shutil.copy(data_file, elsewhere / data_file.name)
    with watching_opens(elsewhere) as watch:
        done = certify(uri, "--format", "json", cwd=tmp_path / "cwd")
        assert watch.opened() == {elsewhere / data_file.name}
    assert not any("does not exist" in m for m in messages(done)), messages(done)


def test_the_local_store_opens_no_path_that_is_not_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever names it, a relative path is refused by the local store, never opened under the working
    directory that holds it."""
    from reference.errors import StorageError
    from reference.store.local import LocalStore

    (tmp_path / "FILE:").mkdir()
    (tmp_path / "FILE:" / "x").write_bytes(b"secret")
    (tmp_path / "x").write_bytes(b"secret")
    monkeypatch.chdir(tmp_path)
    for name in ("x", "./x", "FILE:x", "fiLe:x"):
        with pytest.raises(StorageError, match="not an absolute path"):
            LocalStore().get(name)
        (answer,) = LocalStore().get_tails([name], 4)
        assert isinstance(answer, StorageError) and "not an absolute path" in str(answer), answer


def _tag(root: Path, name: str, version: int) -> None:
    tags = root / "_refs" / "tags"
    tags.mkdir(parents=True, exist_ok=True)
    (tags / f"{name}.json").write_text(json.dumps({"branch": None, "version": version}))


@pytest.mark.parametrize("given", ["file-uri", "link"])
def test_a_file_uri_root_is_judged_as_its_path(tmp_path: Path, given: str) -> None:
    """A ``file://`` root is the canonical path it names: reached through the user's own link it is what the
    path is (before: a MUST HIST-001, "the directory ... on the way is a symbolic link"), and a name listed
    under it is read as it is (before: the tag file ``%41.json`` was looked for as ``A.json``, a MUST REF-001
    "no such object")."""
    uri = build_reference_dataset(tmp_path / "w")
    _tag(Path(uri), "%41", 1)
    link = tmp_path / "link"
    link.symlink_to(uri)
    plain = certify(uri, "--format", "json")
    assert plain.returncode in (0, 1), plain.stderr
    shown = f"file://{link if given == 'link' else uri}"
    through = certify(shown, "--format", "json")
    assert (through.returncode, sorted(messages(through))) == (plain.returncode, sorted(messages(plain)))
    assert not any("no such object" in m or "symbolic link" in m for m in messages(through)), messages(through)


def test_a_baseline_carries_names_that_are_not_utf8_or_hold_controls(tmp_path: Path) -> None:
    """``--write-baseline`` with findings naming a file whose name is not UTF-8 (before: exit 3) and one holding
    DEL, a C1 control and U+2028 (before: a baseline ``--baseline`` refused): the file parses as TOML, holds no
    raw control or separator, and sets the same findings aside."""
    uri = build_reference_dataset(tmp_path / "w")
    tags = Path(uri) / "_refs" / "tags"
    tags.mkdir(parents=True)
    (tags / os.fsdecode(b"bad\xff.json")).write_text(json.dumps({"branch": None, "version": 99}))
    _tag(Path(uri), "d\x7fe\x85l\u2028", 98)
    baseline = tmp_path / "baseline.toml"
    done = certify(uri, "--format", "json", "--write-baseline", str(baseline))
    assert done.returncode == 1, done.stderr
    assert sum(m.startswith("REF-002") for m in messages(done)) == 2, messages(done)
    raw = baseline.read_bytes().decode("utf-8")
    assert not any((ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F or c == "\u2028" for c in raw)
    assert len(tomllib.loads(raw)["finding"]) >= 2
    again = certify(uri, "--format", "json", "--baseline", str(baseline))
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr


@pytest.mark.parametrize("option", ["timeout=inf", "lancespec_max_attempts=0", "lancespec_run_timeout=nan",
                                    "aws_endpoint=http://127.0.0.1:99999"])
def test_an_unusable_storage_option_is_refused_on_a_local_run_too(tmp_path: Path, option: str) -> None:
    """An option value no store could use is a command-line mistake whichever store the run reads (before, a
    local run took ``timeout=inf`` and went on): exit 2, one line naming the option."""
    uri = build_reference_dataset(tmp_path / "w")
    done = certify(uri, "--storage-option", option)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert option.split("=")[0].split("_endpoint")[0] in line or "port" in line, line
