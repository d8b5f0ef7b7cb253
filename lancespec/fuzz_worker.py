"""The audited worker both fuzz modes run certify in (``lancespec.fuzz``, ``lancespec.fuzz_answers``), the
pass rule of a case and the tally of a run (docs/security.md).

A worker is a process limited in address space (RLIMIT_AS) that serves many cases: it runs the command line
with an alarm of the case's seconds and records every path it opens or lists (``sys.addaudithook``). A case
fails when the worker dies by a signal or runs out of time, prints a traceback or exits 3 (a lancespec bug),
opens or lists anything outside what the case allows, or answers differently the second time.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Address space of a worker, and the time one case may take inside it.
WORKER_MEMORY_BYTES = 3 << 30
CASE_SECONDS = 30

_TRACEBACK = "Traceback (most recent call last)"

# --- the worker: certify with an audit of opened paths --------------------------------------------------


class _CaseTimeout(BaseException):
    """Raised by the alarm inside a worker: not an Exception, so no handler of certify swallows it."""


def _outside(path: str, allowed: Sequence[str], runtime: Sequence[str]) -> bool:
    absolute = os.path.abspath(path)
    return not any(absolute == a or absolute.startswith(a if a.endswith("-") else a.rstrip("/") + "/")
                   for a in (*allowed, *runtime))


def _runtime_prefixes() -> list[str]:
    """What Python itself opens while it runs (modules, lancespec's own folders wherever the install maps
    them, locale data, the codec's temporary copies)."""
    import sysconfig

    import conformance
    import lancespec
    import reference
    import simulator
    import spec

    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, "/proc", "/dev/null", "/dev/urandom", "/sys",
                "/etc/localtime", "/usr/share/zoneinfo", "/usr/lib", "/usr/local/lib", "/lib",
                os.path.join(tempfile.gettempdir(), "lancespec-blob-")}
    prefixes.update(p for p in sys.path if p)
    for package in (lancespec, conformance, reference, simulator, spec):
        prefixes.update(package.__path__)
    prefixes.update(v for k, v in sysconfig.get_paths().items())
    # a "prefix" of a temp name matches the folder too
    return sorted(os.path.abspath(p) if not p.endswith("-") else p for p in prefixes)


def serve(memory_bytes: int) -> None:
    """The worker's loop: one JSON case per line in, one JSON answer per line out."""
    import contextlib
    import io

    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    from .cli.main import build_parser
    from .cli.main import main as run_command

    parser = build_parser()  # once: the worker runs the same command line for every case

    runtime = _runtime_prefixes()
    seen: list[str] = []

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event in ("open", "os.scandir", "os.listdir") and args and isinstance(args[0], (str, bytes)):
            seen.append(os.fsdecode(args[0]))

    sys.addaudithook(audit)

    def expire(signum: int, frame: object) -> None:
        raise _CaseTimeout

    signal.signal(signal.SIGALRM, expire)
    answers = sys.stdout
    for line in sys.stdin:
        case = json.loads(line)
        seen.clear()
        out, err = io.StringIO(), io.StringIO()
        started = time.perf_counter()
        signal.alarm(case["seconds"])
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = run_command(case["argv"], parser=parser)
        except _CaseTimeout:
            code = -1
        except BaseException as exc:
            code = -2
            err.write(f"{_TRACEBACK}\n{type(exc).__name__}: {exc}\n")
        finally:
            signal.alarm(0)
        outside = sorted({p for p in seen if _outside(p, case["allowed"], runtime)})
        answer = {"code": code, "seconds": time.perf_counter() - started, "outside": outside[:5],
                  "traceback": _TRACEBACK in err.getvalue(), "stderr": err.getvalue()[-2000:],
                  **_verdict(out.getvalue(), case["allowed"][0])}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


#: Findings an answer carries besides its verdict's digest, to say how two runs differ (``problem``).
FINDINGS_KEPT = 200


def _verdict(report_json: str, root: str) -> dict[str, Any]:
    """What a run concluded: ``verdict``, a digest of its exit code and findings with the case's location taken
    out, and ``findings``, the first ``FINDINGS_KEPT`` of those findings (to explain an unstable verdict)."""
    try:
        report = json.loads(report_json)
    except ValueError:
        return {"verdict": "no report", "findings": []}
    findings = sorted((f["requirement"], f["version"] or 0, f["path"].replace(root, "ROOT"),
                       f["message"].replace(root, "ROOT")) for f in report.get("findings", []))
    digest = hashlib.sha256(json.dumps([report.get("exit_code"), findings]).encode()).hexdigest()[:16]
    return {"verdict": digest, "findings": [list(f) for f in findings[:FINDINGS_KEPT]]}


def _differs(first: dict[str, Any], second: dict[str, Any]) -> str:
    """The first finding each run of a case has that the other has not (the kept ones)."""
    one = {json.dumps(f) for f in first.get("findings", [])}
    two = {json.dumps(f) for f in second.get("findings", [])}
    parts = [f"only in the {name}: {min(mine - other)[:300]}" for name, mine, other
             in (("first", one, two), ("second", two, one)) if mine - other]
    return "; ".join(parts) or "the kept findings agree (the difference lies past them)"


@dataclass
class Worker:
    """A worker process serving cases; ``run`` replaces it after it dies or runs out of time."""

    memory_bytes: int = WORKER_MEMORY_BYTES
    proc: subprocess.Popen[str] | None = None
    started: int = 0

    def _ensure(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, "-m", "lancespec.fuzz", "--serve", str(self.memory_bytes)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         text=True)
            self.started += 1
        return self.proc

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def run(self, argv: list[str], allowed: list[str], seconds: int = CASE_SECONDS) -> dict[str, Any]:
        """Run ``lancespec argv`` in the worker; the answer, or ``{"code": -9, "died": ...}`` when the
        worker died by a signal or did not answer within twice the case's time."""
        proc = self._ensure()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps({"argv": argv, "allowed": allowed, "seconds": seconds}) + "\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 2 * seconds + 10)
            line = proc.stdout.readline() if ready else ""
        except OSError:
            line = ""
        if line:
            answer: dict[str, Any] = json.loads(line)
            if answer["code"] == -1:  # timed out inside: a fresh worker for the next case
                self.stop()
            return answer
        self.stop()
        died = "no answer in time" if not ready else "the worker died"
        return {"code": -9, "died": died, "outside": [], "traceback": False, "stderr": "", "verdict": ""}


# --- the run -------------------------------------------------------------------------------------------


#: A file of this name in a run's ``--workdir`` holds the run between cases until it is removed: a long run
#: yields the machine to a measurement without a case timing out (a stopped process's cases would).
PAUSE_FILE = "pause"


def wait_while_paused(workdir: Path) -> None:
    """Return once ``workdir`` holds no ``PAUSE_FILE`` (at once when it holds none)."""
    while (workdir / PAUSE_FILE).exists():
        time.sleep(0.5)


@dataclass
class FuzzResult:
    """What a fuzzing run found: cases, failures by seed, and seconds per case."""

    cases: int = 0
    seconds: float = 0.0
    failures: dict[int, str] = field(default_factory=dict)
    exit_codes: dict[int, int] = field(default_factory=dict)
    workers_started: int = 0
    interrupted: bool = False  # stopped by Ctrl-C: the counts are of the cases finished before

    def summary(self) -> str:
        per_case = self.seconds / self.cases if self.cases else 0.0
        codes = ", ".join(f"exit {k}: {v}" for k, v in sorted(self.exit_codes.items()))
        stopped = "; interrupted (Ctrl-C)" if self.interrupted else ""
        return (f"{self.cases} cases in {self.seconds:.1f} s ({per_case * 1000:.0f} ms a case, each run twice; "
                f"{codes}); {len(self.failures)} failed; {self.workers_started} worker(s) started{stopped}")



def problem(first: dict[str, Any], second: dict[str, Any], seconds: int = CASE_SECONDS) -> str | None:
    """Why a case's two answers fail it (the fuzzer's rule, docs/security.md), or None when they pass."""
    for answer in (first, second):
        if answer["code"] == -9:
            return str(answer["died"])
        if answer["code"] == -1:
            return f"ran over {seconds} s"
        if answer["code"] in (-2, 3) or answer["traceback"]:
            return f"internal error or traceback: {answer['stderr'][-400:]}"
        if answer["outside"]:
            return f"read outside the dataset: {answer['outside']}"
    if (first["code"], first["verdict"]) != (second["code"], second["verdict"]):
        return f"unstable verdict: exit {first['code']} then {second['code']}; {_differs(first, second)}"
    return None


