"""Mutation check of the property suite: ``python tools/mutation_check.py [--jobs N] [--only NAME] [--timeout S]``.

Each mutant is a plausible bug, injected as a textual patch into a *copy* of the reference (a module below
``reference/``); the property suite (tests/properties, Hypothesis profile ``dev``) then runs against the
copy and must fail. The working tree is never touched: every mutant gets its own copy of the package
folders and tests in a temporary directory, and a symlink tree that gives the copy the installed package
shape (``reference`` -> the copy's ``reference/``, built by tools/typecheck.py's ``build_tree``), put first on
PYTHONPATH. Before the mutants, the unmutated copy must pass, and each run checks (and prints) where
``reference`` is imported from.

Prints a table (mutant, what it breaks, killed or survived, the first failing test, seconds) and the score
killed/total; exit 0 when every mutant is killed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
from typecheck import ROOT, build_tree

COPIED = ("pyproject.toml", "lancespec", "reference", "conformance", "simulator", "spec", "tests")
SUITE = "tests/properties"


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str  # below reference/
    old: str
    new: str
    what: str


MUTANTS = (
    Mutant("round-robin-off-by-one", "writer.py",
           "base_id = rotation[index % len(rotation)]", "base_id = rotation[(index + 1) % len(rotation)]",
           "placement starts the rotation one base late (BASE-009)"),
    Mutant("root-base-without-data-dir", "layout.py",
           "    if base.is_dataset_root:\n        return join(base.path, kind.value)",
           "    if base.is_dataset_root:\n        return base.path.rstrip(\"/\")",
           "a dataset-root base resolves without its data/ (_deletions/...) subdirectory (BASE-004)"),
    Mutant("cleanup-ignores-tags", "gc.py",
           "tagged = {t.version for t in tags.values() if t.branch == branch}",
           "tagged: set[int] = set()",
           "cleanup removes tagged versions (GC-001)"),
    Mutant("clone-drops-bases", "clone.py",
           "    new_id = smallest_unused_id(manifest.base_paths)\n",
           "    new_id = smallest_unused_id(manifest.base_paths)\n    del manifest.base_paths[:]\n",
           "a shallow clone does not carry the source's bases over (CLONE-001)"),
    Mutant("blob-inline-threshold-off-by-one", "blob/routing.py",
           "    if size > thresholds.inline:", "    if size >= thresholds.inline:",
           "a blob exactly at the inline threshold is packed (BLOB-005)"),
    Mutant("clone-files-keep-no-base", "clone.py",
           "            if not data_file.HasField(\"base_id\"):\n                data_file.base_id = new_id",
           "            if not data_file.HasField(\"base_id\"):\n                pass",
           "inherited data files are not pointed at the clone's source (CLONE-001)"),
    Mutant("relocate-drops-other-bases", "relocate.py",
           "        for base in manifest.base_paths:\n            if base.id in new_paths:\n"
           "                base.path = new_paths[base.id]",
           "        kept = [b for b in manifest.base_paths if b.id in new_paths]\n"
           "        del manifest.base_paths[:]\n        manifest.base_paths.extend(kept)\n"
           "        for base in manifest.base_paths:\n            base.path = new_paths[base.id]",
           "relocation keeps only the moved bases (PORT-003)"),
    Mutant("cleanup-removes-latest", "gc.py",
           "is_latest = version.number >= read_version", "is_latest = version.number > read_version",
           "cleanup may remove the latest version (GC-001)"),
    Mutant("cleanup-forgets-fork-points", "gc.py",
           "if keeps and fork_version in old_numbers:", "if False and keeps and fork_version in old_numbers:",
           "cleanup removes the version a branch was forked from (GC-001, REF-004)"),
    Mutant("cleanup-ignores-branch-files", "gc.py",
           "                    refs.data.add(_data_key(data_file.path))\n                    referenced = True",
           "                    referenced = True",
           "cleanup deletes files of the root that a branch still reads (GC-001)"),
    Mutant("deep-clone-shares-files", "clone.py",
           "            data_file.ClearField(\"base_id\")", "            pass",
           "a deep clone keeps pointing at the source's bases (CLONE-004)"),
    Mutant("deletions-not-cumulative", "ops.py",
           "rows = set(deleted_offsets(dataset.storage, fragment)) | set(new_rows[fragment_id])",
           "rows = set(new_rows[fragment_id])",
           "a second delete on a fragment forgets the first (DEL-003)"),
    Mutant("clone-source-id-collides", "clone.py",
           "    candidate = 0\n    while candidate in used:\n        candidate += 1",
           "    candidate = 0",
           "a clone of a clone registers its source under an id already in use (BASE-001)"),
    Mutant("packed-blob-read-late", "blob/read.py",
           "return sidecar_uri(data_file_uri, descriptor.blob_id), descriptor.position, descriptor.size",
           "return sidecar_uri(data_file_uri, descriptor.blob_id), descriptor.position + 1, descriptor.size",
           "sidecar blobs are read one byte late (BLOB-003)"),
    Mutant("fragment-ids-reused", "apply.py",
           "    return manifest.max_fragment_id + 1", "    return manifest.max_fragment_id",
           "an append reuses the last fragment id (MAN-001)"),
    Mutant("rotation-writes-into-clone-source", "writer.py",
           "[None if b.id == 0 else b.id for b in sorted(bases, key=lambda b: b.id)]",
           "[b.id for b in sorted(bases, key=lambda b: b.id)]",
           "target_all_bases writes into a clone's source (CLONE-003, F-027)"),
)


def _ignore(_dir: str, names: list[str]) -> set[str]:
    return {n for n in names if n in ("__pycache__", ".hypothesis", "regressions-output") or n.endswith(".pyc")}


def prepare(where: Path) -> tuple[Path, Path]:
    """A copy of what the suite needs (``src``) and the installed-shape symlink tree over it (``pkg``).

    The copy's own ``lancespec/`` folder lives beside ``src`` (``where/top``), not in it: pytest runs with
    ``src`` as the working directory, which ``python -m`` puts first on sys.path, and a bare ``lancespec/``
    there would shadow the symlink tree (and let the editable install's finder supply the sub-packages)."""
    src = where / "src"
    src.mkdir(parents=True)
    for name in COPIED:
        path = ROOT / name
        target = where / "top" if name == "lancespec" else src / name
        if path.is_dir():
            shutil.copytree(path, target, ignore=_ignore, symlinks=True)
        else:
            shutil.copy2(path, target)
    build_tree(where / "pkg", root=src, top=where / "top")
    return src, where / "pkg"


def apply(src: Path, mutant: Mutant) -> None:
    path = src / "reference" / mutant.file
    text = path.read_text()
    count = text.count(mutant.old)
    if count != 1:
        raise SystemExit(f"mutant {mutant.name}: the patch site occurs {count} times in reference/{mutant.file}; "
                         "update tools/mutation_check.py")
    path.write_text(text.replace(mutant.old, mutant.new))


@dataclass
class Outcome:
    name: str
    what: str
    status: str  # killed, survived, timeout, error
    detail: str
    seconds: float
    imported_from: str


def environment(pkg: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(pkg), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["HYPOTHESIS_PROFILE"] = "dev"
    env.pop("PYTEST_ADDOPTS", None)
    return env


def run(where: Path, mutant: Mutant | None, timeout: float) -> Outcome:
    src, pkg = prepare(where)
    if mutant is not None:
        apply(src, mutant)
    env = environment(pkg)
    probe = subprocess.run([sys.executable, "-c", "import reference as r; print(r.__file__)"],
                           env=env, cwd=src, capture_output=True, text=True, check=False)
    imported = probe.stdout.strip()
    if not imported.startswith(str(where)):
        return Outcome(mutant.name if mutant else "(none)", "", "error",
                       f"reference imported from {imported or probe.stderr.strip()}", 0.0, imported)
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning",
               SUITE]
    start = time.monotonic()
    try:
        done = subprocess.run(command, env=env, cwd=src, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return Outcome(mutant.name if mutant else "(none)", mutant.what if mutant else "", "timeout",
                       f"no result within {timeout:.0f}s", time.monotonic() - start, imported)
    seconds = time.monotonic() - start
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", done.stdout, re.MULTILINE)
    if done.returncode == 0:
        status, detail = "survived", "the suite passed"
    elif done.returncode == 1 and failed:
        status, detail = "killed", failed[0].replace(SUITE + "/", "")
    else:
        status, detail = "error", (done.stdout + done.stderr).strip().splitlines()[-1][:160]
    name, what = (mutant.name, mutant.what) if mutant else ("(none)", "")
    return Outcome(name, what, status, detail, seconds, imported)


class Result(Protocol):
    status: str
    seconds: float


M = TypeVar("M", bound=Mutant)
R = TypeVar("R", bound=Result)


def run_each(base: Path, mutants: Sequence[M], run_one: Callable[[Path, M], R], jobs: int) -> list[R]:
    """``run_one`` on each mutant in its own folder under ``base``, ``jobs`` at a time, a line as each ends."""

    def job(pair: tuple[int, M]) -> R:
        index, mutant = pair
        result = run_one(base / f"m{index:02d}-{mutant.name}", mutant)
        print(f"  {mutant.name}: {result.status} ({result.seconds:.0f}s)", flush=True)
        return result

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(job, enumerate(mutants, 1)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per suite run (default %(default)s)")
    parser.add_argument("--only", action="append", help="run only this mutant (repeat)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = parser.parse_args(argv)
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:36} reference/{m.file:16} {m.what}")
        return 0
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only]
    with tempfile.TemporaryDirectory(prefix="lancespec-mutation-") as tmp:
        base = Path(tmp)
        print(f"property suite: {SUITE} (Hypothesis profile dev), copies under {base}", flush=True)
        baseline = run(base / "baseline", None, args.timeout)
        passed = "passed" if baseline.status == "survived" else baseline.status
        print(f"baseline (no mutant): {passed}, {baseline.seconds:.0f}s; reference imported from "
              f"{baseline.imported_from}", flush=True)
        if baseline.status != "survived":
            print(f"the unmutated copy must pass first: {baseline.detail}")
            return 2

        outcomes = run_each(base, chosen, lambda where, mutant: run(where, mutant, args.timeout), args.jobs)
    width = max(len(o.name) for o in outcomes)
    print()
    print(f"{'mutant':{width}}  {'result':8}  {'seconds':>7}  first failing test / what it breaks")
    print(f"{'-' * width}  {'-' * 8}  {'-' * 7}  {'-' * 60}")
    for o in outcomes:
        print(f"{o.name:{width}}  {o.status:8}  {o.seconds:7.0f}  {o.detail}")
        print(f"{'':{width}}  {'':8}  {'':7}  ({o.what})")
    killed = sum(o.status == "killed" for o in outcomes)
    print(f"\nmutation score: {killed}/{len(outcomes)} killed")
    return 0 if killed == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
