"""Ctrl-C is one line and exit 130 in every command, wherever it lands: while the command's modules load,
while simulate starts its writer processes, while Spark runs (docs/exit-codes.md).

Each test does what a terminal does: the command runs in a process group of its own and the SIGINT goes to
the whole group (the command and every child it started). The command is started with the default SIGINT
disposition whatever this process has (pytest run in the background under nohup ignores SIGINT, and a child
would inherit that), so the tests pass in the foreground and in the background alike. The moment to interrupt
is found by watching the command (the modules it imported, the processes it started), not by sleeping.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "fixtures" / "cases" / "py-branches" / "data" / "ds"
INTERRUPTED = "lancespec: interrupted"

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists() or sys.platform != "linux",
                                reason="finds the command's child processes in /proc (Linux)")


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def command(*argv: str, python_flags: tuple[str, ...] = (), cwd: Path | None = None) -> Iterator[subprocess.Popen[str]]:
    """``python -m lancespec ARGV`` in a new process group, SIGINT at its default; killed if still running."""
    proc = subprocess.Popen([sys.executable, *python_flags, "-m", "lancespec", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_default_sigint,
                            cwd=cwd)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def press_ctrl_c(proc: subprocess.Popen[str]) -> None:
    """SIGINT to the command's whole process group, as a terminal sends it."""
    os.killpg(proc.pid, signal.SIGINT)


def descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of every process below ``pid``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent:
                try:
                    cmdline = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    cmdline = ""
                found.append((child, cmdline))
                frontier.append(child)
    return found


def wait_for(condition: Callable[[], bool], proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the command ended (exit {proc.returncode}) before the moment to interrupt"
        assert time.monotonic() < deadline, "the moment to interrupt never came"
        time.sleep(0.01)


def assert_one_line(proc: subprocess.Popen[str], stderr: str, ignore: Callable[[str], bool] = lambda line: False,
                    ) -> None:
    lines = [line for line in stderr.splitlines() if not ignore(line)]
    assert proc.returncode == 130, stderr
    assert lines == [INTERRUPTED], stderr


@pytest.mark.parametrize("loaded", ["lancespec.cli", "reference", "pyarrow.lib", "conformance"])
def test_ctrl_c_while_the_command_loads_is_one_line(loaded: str) -> None:
    """``-X importtime`` lists each module as it finishes loading: the SIGINT goes when ``loaded`` has loaded
    (from the command package's own import on), while the rest still loads. (Before that, Python itself is
    starting: a Ctrl-C in those tens of milliseconds is Python's to report.)"""
    with command("certify", str(DATASET), python_flags=("-X", "importtime")) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.rsplit("|", 1)[-1].strip() == loaded:
                press_ctrl_c(proc)
                break
        rest = proc.stderr.read()
        proc.wait(timeout=120)
    assert_one_line(proc, rest, ignore=lambda line: line.startswith("import time:"))


@pytest.mark.s3
def test_ctrl_c_while_simulate_starts_its_writers_is_one_line(tmp_path: Path) -> None:
    """The writers are separate processes; one that loads when the SIGINT comes printed its traceback."""
    with command("simulate", "--writers", "4", "--ops", "4000", "--preflight-rounds", "0", cwd=tmp_path) as proc:
        wait_for(lambda: any("multiprocessing" in cmd and "spawn_main" in cmd for _, cmd in descendants(proc.pid)),
                 proc)
        press_ctrl_c(proc)
        _, stderr = proc.communicate(timeout=120)
    assert_one_line(proc, stderr)


@pytest.mark.s3
def test_ctrl_c_in_the_middle_of_simulate_is_one_line(tmp_path: Path) -> None:
    with command("simulate", "--writers", "2", "--ops", "4000", "--preflight-rounds", "0", cwd=tmp_path) as proc:
        writers = lambda: [p for p, cmd in descendants(proc.pid) if "spawn_main" in cmd]  # noqa: E731
        wait_for(lambda: len(writers()) == 2, proc)
        time.sleep(3)  # the writers are writing
        press_ctrl_c(proc)
        _, stderr = proc.communicate(timeout=120)
    assert_one_line(proc, stderr)


def _spark_start_up(line: str) -> bool:
    """What the JVM prints at every start, interrupted or not (not lancespec's to say)."""
    return line.startswith(("WARNING: Using incubator modules", "Using Spark's default log4j profile",
                            "Setting default log level", "To adjust logging level")) or " WARN " in line


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("moment", ["jvm-starting", "job-running"])
def test_ctrl_c_in_spark_certify_is_one_line_and_leaves_no_jvm(moment: str, tmp_path: Path) -> None:
    """The JVM starts beside the driver's reading and checks (spark-certify's ``background_session``): a Ctrl-C
    while it starts or while the workers run is one line, and no JVM outlives the command."""
    from conformance.corpus.portable import materialize
    from conformance.spark.session import spark_unavailable

    why = spark_unavailable()
    if why is not None:
        pytest.skip(f"Spark cannot start here: {why}")
    dataset = materialize(DATASET.parent, tmp_path / "case") / "ds"  # the corpus keeps its roots portable
    with command("spark-certify", str(dataset), "--all-versions") as proc:
        java = lambda: [p for p, cmd in descendants(proc.pid) if "java" in cmd.split(" ", 1)[0]]  # noqa: E731
        if moment == "jvm-starting":
            wait_for(lambda: bool(java()), proc)
        else:  # Spark's Python workers run the fragment checks
            wait_for(lambda: any("pyspark" in cmd and ("daemon" in cmd or "worker" in cmd)
                                 for _, cmd in descendants(proc.pid)), proc, timeout=300)
        jvms = java()
        press_ctrl_c(proc)
        _, stderr = proc.communicate(timeout=120)
    assert_one_line(proc, stderr, ignore=_spark_start_up)
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in jvms) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(Path(f"/proc/{pid}").exists() for pid in jvms), "the JVM outlived spark-certify"


def test_ctrl_c_in_the_middle_of_a_fuzzing_run_ends_it_with_its_tally(tmp_path: Path) -> None:
    """``python -m lancespec.fuzz`` stopped by Ctrl-C once it has said 100 cases are done: exit 130, the summary
    counts the cases finished so far and says it was interrupted, and no traceback (a long run is stopped so)."""
    proc = subprocess.Popen([sys.executable, "-m", "lancespec.fuzz", "--cases", "100000", "--seed", "0",
                             "--workdir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_default_sigint, cwd=tmp_path)
    try:
        said: list[str] = []  # the run's progress: a line every 100 cases
        reader = threading.Thread(target=lambda: said.extend(proc.stderr or ()), daemon=True)
        reader.start()
        wait_for(lambda: any(line.startswith("100 cases") for line in said), proc)
        press_ctrl_c(proc)
        proc.wait(timeout=60)  # the summary is a few lines: the pipe holds it
        stdout = proc.stdout.read() if proc.stdout else ""
        reader.join(timeout=30)
        stderr = "".join(said)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    summary = stdout.strip().splitlines()[-1]
    assert summary.endswith("interrupted (Ctrl-C)") and " cases in " in summary, stdout
    assert int(summary.split(" cases in ")[0]) >= 100, stdout
