"""What the user names besides the dataset, from a second outside review (2026-11-28): a destination that
cannot be written, and a ``--since`` report or a ``--baseline`` file that is malformed, are the command
line's mistake (exit 2, one line), never an exit 3; a file written is written whole or not at all
(docs/exit-codes.md, docs/security.md). Each of these ended in exit 3 on the code before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_kit import build_reference_dataset

from lancespec.destination import write_text
from reference.errors import StorageError


def lancespec(*argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "lancespec", *argv], capture_output=True, text=True, timeout=60,
                          check=False)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done


def one_line(done: subprocess.CompletedProcess[str], *named: str) -> str:
    assert done.returncode == 2, done.stdout[-500:] + done.stderr
    (line,) = done.stderr.strip().splitlines()
    for word in named:
        assert word in line, line
    return line


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_reference_dataset(tmp_path_factory.mktemp("w"))


@pytest.mark.parametrize("where", ["directory", "missing-folder"])
def test_a_baseline_or_graph_that_cannot_be_written_is_one_line(dataset: str, tmp_path: Path, where: str) -> None:
    """A destination that is a directory, or in a folder that does not exist."""
    if where == "directory":
        baseline, graph = tmp_path / "b.toml", tmp_path / "g.dot"
        baseline.mkdir()
        graph.mkdir()
    else:
        baseline, graph = tmp_path / "nowhere" / "b.toml", tmp_path / "nowhere" / "g.dot"
    one_line(lancespec("certify", dataset, "-q", "--write-baseline", str(baseline)), "cannot write the baseline")
    one_line(lancespec("inspect", dataset, "--graph", str(graph)), "cannot write the graph")


def test_a_malformed_since_report_is_refused_in_one_line(dataset: str, tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    assert lancespec("certify", dataset, "--all-versions", "--format", "json", "--output", str(base),
                     "-q").returncode in (0, 1)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    one_line(lancespec("certify", dataset, "--all-versions", "-q", "--since", str(deep)), "earlier report")
    report = json.loads(base.read_text())
    files = report["evidence"]["roots"]["main"]["files"]
    first = next(iter(files))
    for span in (["a", "b"], [1], [3, 1], None):
        files[first] = span
        edited = tmp_path / "edited.json"
        edited.write_text(json.dumps(report))
        one_line(lancespec("certify", dataset, "--all-versions", "-q", "--since", str(edited), "--format", "json",
                           "--output", str(tmp_path / "out.json")), "malformed")


def test_a_baseline_nested_past_the_parser_is_refused_in_one_line(dataset: str, tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    one_line(lancespec("certify", dataset, "-q", "--baseline", str(deep)), "cannot be read")


def test_a_file_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """A report that fails while it is written leaves the file that was there, and nothing beside it."""
    target = tmp_path / "report.json"
    target.write_text("the earlier report\n")
    os.chmod(target, 0o640)

    def failing() -> Iterator[str]:
        yield "{"
        raise RuntimeError("the renderer failed half way")

    with pytest.raises(RuntimeError):
        write_text(str(target), failing())
    assert target.read_text() == "the earlier report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    write_text(str(target), iter(["{", "}\n"]))
    assert target.read_text() == "{}\n" and (target.stat().st_mode & 0o777) == 0o640  # its mode kept


def test_a_link_is_written_through_and_a_fifo_directly(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_text(str(link), "new")
    assert link.is_symlink() and real.read_text() == "new"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    write_text(str(fifo), "through the pipe")
    assert reader.communicate(timeout=10)[0] == "through the pipe"
    with pytest.raises(StorageError, match="cannot write the report"):
        write_text(str(tmp_path / "no" / "such" / "folder"), "x")
