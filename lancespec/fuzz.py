"""``python -m lancespec.fuzz``: a seeded mutational fuzzer of certify on hostile datasets.

Each case copies a small pristine dataset (data files, ``.arrow`` and ``.bin`` deletion files, manifests,
a tag, a branch, blob v2 sidecars), damages one file of it by a seeded mutation (byte flips, overwrites,
truncation, insertion, zeroed runs; or the file replaced by a FIFO, a link to ``/dev/zero``, a link out
of the tree) and certifies the copy with ``--all-versions --format json`` in a worker process that is
limited in address space (RLIMIT_AS) and in time per case, and that audits every path it opens or lists
(``sys.addaudithook``). A case fails when the worker dies by a signal or runs out of time, prints a
traceback or exits 3 (a lancespec bug), opens or lists anything outside the case's dataset and its
bases, or answers differently when the case is run a second time. A worker serves many cases and is
replaced after any failure (docs/security.md).

    python -m lancespec.fuzz --cases 100000 --seed 0 --workdir /tmp/fuzz

Exit 0 when every case passed, 1 otherwise (the failing seeds are printed; rerun one with --seed S
--cases 1).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .fuzz_structure import structured

#: Address space of a worker, and the time one case may take inside it.
WORKER_MEMORY_BYTES = 3 << 30
CASE_SECONDS = 30

_TRACEBACK = "Traceback (most recent call last)"


# --- mutations ---------------------------------------------------------------------------------------


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One random byte-level damage: flips, overwrites, truncation, insertion, deletion or a zeroed run."""
    if not data:
        return bytes([rng.randrange(256)])
    kind = rng.choice(["flip", "overwrite", "truncate", "insert", "delete", "zero_run"])
    pos = rng.randrange(len(data))
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
        return bytes(out)
    if kind == "overwrite":
        n = rng.randint(1, 16)
        return data[:pos] + bytes(rng.randrange(256) for _ in range(n)) + data[pos + n:]
    if kind == "truncate":
        return data[:pos]
    if kind == "insert":
        return data[:pos] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[pos:]
    if kind == "delete":
        return data[:pos] + data[pos + rng.randint(1, 8):]
    n = rng.randint(2, 32)
    return data[:pos] + bytes(n) + data[pos + n:]


def _replace(target: Path, how: str, outside: Path) -> None:
    """Replace ``target`` by something that is not a regular file of the tree."""
    target.unlink()
    if how == "fifo":
        os.mkfifo(target)
    elif how == "zero":
        target.symlink_to("/dev/zero")
    else:
        target.symlink_to(outside)


#: The share of cases whose damage is structure-aware where the target has a structure (manifests,
#: transactions, deletion files, refs: ``lancespec.fuzz_structure``); the rest are byte-level.
STRUCTURED_SHARE = 0.5


def damage(root: Path, targets: Sequence[Path], seed: int, outside: Path,
           structured_share: float = STRUCTURED_SHARE) -> str:
    """Damage one target of the copy at ``root`` (paths relative to it) by ``seed``; say what was done. The
    target is unlinked before it is written: a copy may share its files with the pristine world. With
    ``structured_share`` 0 a seed damages exactly as it did before structure-aware damage existed (the seeds
    of old failures replay so)."""
    rng = random.Random(seed)
    target = root / targets[rng.randrange(len(targets))]
    if rng.random() < 0.05:
        how = rng.choice(["fifo", "zero", "outside"])
        _replace(target, how, outside)
        return f"{how} {target.relative_to(root)}"
    data = target.read_bytes()
    target.unlink()
    structure = structured(target)
    if structure is not None and structured_share and rng.random() < structured_share:
        target.write_bytes(data)
        return f"{structure(target, rng)} in {target.relative_to(root)}"
    target.write_bytes(mutate(data, rng))
    return f"bytes {target.relative_to(root)}"


def copy_world(pristine: Path, case_dir: Path) -> None:
    """The case's world: the pristine one with every regular file hard-linked (``damage`` unlinks what it
    writes), so a case costs directory entries, not copies of the data files."""
    shutil.copytree(pristine, case_dir, symlinks=True, copy_function=os.link)


# --- the pristine dataset ------------------------------------------------------------------------------


def build_pristine(top: Path) -> Path:
    """A small dataset under ``top/ds`` with every kind of file a mutation should reach; returns ``top``.
    Its base lies at ``top/base``, inside ``top``, so a copy of ``top`` is a whole world."""
    import lance
    import pyarrow as pa

    from reference import ops, refs
    from reference.table import Dataset

    root = str(top / "ds")
    blobs = [bytes((i * 7 + j) % 256 for j in range(n)) for i, n in enumerate((40, 600, 5000, 0))]
    table = pa.Table.from_arrays(
        [pa.array(range(4), pa.int64()), lance.blob_array(blobs)],
        schema=pa.schema([pa.field("id", pa.int64()), lance.blob_field(
            "blob", inline_size_threshold=100, dedicated_size_threshold=1000, pack_file_size_threshold=2500)]))
    ops.create(root, table, max_rows_per_file=2,
               initial_bases=[ops.DatasetBasePath(str(top / "base"), name="b")], target_bases=["b"])
    ds = Dataset.open(root)
    ops.delete(ds, rows={0: [1]})
    more = pa.Table.from_arrays([pa.array(range(10, 5012), pa.int64()), lance.blob_array([b"x"] * 5002)],
                                schema=table.schema)
    result = ops.append(ds, more, max_rows_per_file=10_000)
    fragment = ds.snapshot(result.version).fragments[-1]
    ops.delete(ds, rows={fragment.id: range(5000)})
    refs.create_tag(ds, "t", 2)
    refs.create_branch(ds, "feat", 2)
    return top


def mutation_targets(top: Path) -> list[Path]:
    """Every file of the pristine world a mutation may damage, relative to ``top``."""
    return sorted(p.relative_to(top) for p in top.rglob("*") if p.is_file() and not p.name.startswith(".tmp"))


def registered_bases(top: Path) -> list[str]:
    """Every local location the manifests under ``top`` name as part of the dataset (those that still
    decode): their registered bases, and the source a clone's inline transaction names where it is a readable
    location (``conformance.checks.clones.readable_source``): certify reads a clone's source to judge it."""
    from conformance.checks.clones import readable_source
    from reference.codec import decode_manifest_file
    from reference.errors import LanceSpecError
    from reference.store.uri import local_path, scheme_of

    found: set[str] = set()
    for path in top.rglob("*.manifest"):
        if path.is_symlink() or not path.is_file():  # a FIFO or a link put there by a mutation
            continue
        try:
            decoded = decode_manifest_file(path.read_bytes(), str(path))
        except (LanceSpecError, OSError):
            continue
        named = [b.path for b in decoded.manifest.base_paths]
        if decoded.transaction is not None and decoded.transaction.WhichOneof("operation") == "clone":
            named.append(readable_source(decoded.transaction.clone))
        found.update(os.path.normpath(local_path(p)) for p in named
                     if p and scheme_of(p) == "file" and p.startswith(("/", "file:")))
    return sorted(found)


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
    from .cli import main as run_command

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
                code = run_command(case["argv"])
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
                  "verdict": _verdict(out.getvalue(), case["allowed"][0])}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def _verdict(report_json: str, root: str) -> str:
    """A digest of what a run concluded (exit code and findings), with the case's location taken out."""
    try:
        report = json.loads(report_json)
    except ValueError:
        return "no report"
    findings = sorted((f["requirement"], f["version"] or 0, f["path"].replace(root, "ROOT"),
                       f["message"].replace(root, "ROOT")) for f in report.get("findings", []))
    return hashlib.sha256(json.dumps([report.get("exit_code"), findings]).encode()).hexdigest()[:16]


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


@dataclass
class FuzzResult:
    """What a fuzzing run found: cases, failures by seed, and seconds per case."""

    cases: int = 0
    seconds: float = 0.0
    failures: dict[int, str] = field(default_factory=dict)
    exit_codes: dict[int, int] = field(default_factory=dict)
    workers_started: int = 0

    def summary(self) -> str:
        per_case = self.seconds / self.cases if self.cases else 0.0
        codes = ", ".join(f"exit {k}: {v}" for k, v in sorted(self.exit_codes.items()))
        return (f"{self.cases} cases in {self.seconds:.1f} s ({per_case * 1000:.0f} ms a case, each run twice; "
                f"{codes}); {len(self.failures)} failed; {self.workers_started} worker(s) started")


def _problem(first: dict[str, Any], second: dict[str, Any]) -> str | None:
    for answer in (first, second):
        if answer["code"] == -9:
            return str(answer["died"])
        if answer["code"] == -1:
            return f"ran over {CASE_SECONDS} s"
        if answer["code"] in (-2, 3) or answer["traceback"]:
            return f"internal error or traceback: {answer['stderr'][-400:]}"
        if answer["outside"]:
            return f"read outside the dataset: {answer['outside']}"
    if (first["code"], first["verdict"]) != (second["code"], second["verdict"]):
        return f"unstable verdict: exit {first['code']} then {second['code']}"
    return None


def fuzz(cases: int, seed: int, workdir: Path, progress: bool = False,
         structured_share: float = STRUCTURED_SHARE) -> FuzzResult:
    """Run ``cases`` cases with seeds ``seed .. seed + cases - 1`` under ``workdir``. The pristine world a
    run builds there is kept and reused by later runs with the same ``workdir``: its file names are random
    (writers name files by UUID), so a seed replays a failure exactly only against the world it met."""
    pristine = workdir / "pristine"
    built = workdir / "pristine.complete"
    case_dir = workdir / "case"
    if not built.exists():
        shutil.rmtree(pristine, ignore_errors=True)
        shutil.rmtree(case_dir, ignore_errors=True)
        # built where each case stands, so the absolute paths it records (its base, the branch's base 0 naming
        # the main root) name the case's own folders: an undamaged case certifies CONFORMANT, and a verdict
        # tells what the damage did (built in place, every case exited 1 on the branch's PORT-002)
        build_pristine(case_dir)
        case_dir.rename(pristine)
        built.touch()
    targets = mutation_targets(pristine)
    outside = workdir / "outside.txt"
    outside.write_text("a file outside every dataset\n")
    worker = Worker()
    result = FuzzResult()
    started = time.perf_counter()
    try:
        for s in range(seed, seed + cases):
            if case_dir.exists():
                shutil.rmtree(case_dir)
            copy_world(pristine, case_dir)
            what = damage(case_dir, targets, s, outside, structured_share)
            argv = ["certify", str(case_dir / "ds"), "--all-versions", "--format", "json"]
            # the copy keeps the pristine base paths (the pristine world is the case's bases), and a damaged
            # manifest may register others: reading under a registered base is the dataset's right
            allowed = [str(case_dir), str(pristine), *registered_bases(case_dir)]
            first = worker.run(argv, allowed)
            second = worker.run(argv, allowed)
            result.cases += 1
            result.exit_codes[first["code"]] = result.exit_codes.get(first["code"], 0) + 1
            problem = _problem(first, second)
            if problem is not None:
                result.failures[s] = f"{what}: {problem}"
                if progress:  # said at once: a long run stopped early still tells what it found
                    print(f"seed {s}: {result.failures[s]}", file=sys.stderr, flush=True)
            if progress and result.cases % 100 == 0:
                print(f"{result.cases} cases, {len(result.failures)} failed", file=sys.stderr)
    finally:
        worker.stop()
        result.seconds = time.perf_counter() - started
        result.workers_started = worker.started
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lancespec.fuzz``: exit 0 when every case passed, 1 otherwise, the failing seeds printed."""
    import argparse

    from .cli.options import EXIT_FAILED, EXIT_OK

    parser = argparse.ArgumentParser(prog="python -m lancespec.fuzz", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200, help="how many cases (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="the first case's seed (default 0)")
    parser.add_argument("--workdir", help="where the pristine world and the case copy live, the world kept for later "
                        "runs, so that a seed replays against the world it failed in (default: a temp dir)")
    parser.add_argument("--structured-share", type=float, default=STRUCTURED_SHARE, metavar="P",
                        help="the share of damage to manifests, transactions, deletion files and refs that is "
                        f"structure-aware (default {STRUCTURED_SHARE}; 0 replays the seeds of runs before it)")
    parser.add_argument("--serve", type=int, metavar="MEMORY", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:  # a worker process (Worker starts it)
        serve(args.serve)
        return EXIT_OK
    with tempfile.TemporaryDirectory(prefix="lancespec-fuzz-") as tmp:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        result = fuzz(args.cases, args.seed, workdir, progress=True, structured_share=args.structured_share)
    for seed, why in sorted(result.failures.items()):
        print(f"seed {seed}: {why}")
    print(result.summary())
    return EXIT_FAILED if result.failures else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
