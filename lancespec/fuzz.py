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
    python -m lancespec.fuzz --answers --cases 1000 --seed 0 --workdir /tmp/fuzz-answers

With ``--answers`` the files stay whole and what an S3-compatible store answers is damaged instead
(``lancespec.fuzz_answers``).
Exit 0 when every case passed, 1 otherwise (the failing seeds are printed; rerun one with --seed S
--cases 1).
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from .fuzz_answers import KINDS, fuzz_answers
from .fuzz_structure import structured
from .fuzz_worker import FuzzResult, Worker, problem, serve, wait_while_paused
from .fuzz_world import build_pristine

__all__ = ["copy_world", "damage", "fuzz", "main", "mutate", "mutation_targets", "registered_bases"]


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
    from reference.store.uri import is_file_uri, local_path, scheme_of

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
                     if p and scheme_of(p) == "file" and (p.startswith("/") or is_file_uri(p)))
    return sorted(found)


# --- the run -------------------------------------------------------------------------------------------


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
            wait_while_paused(workdir)
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
            problem_found = problem(first, second)
            if problem_found is not None:
                result.failures[s] = f"{what}: {problem_found}"
                if progress:  # said at once: a long run stopped early still tells what it found
                    print(f"seed {s}: {result.failures[s]}", file=sys.stderr, flush=True)
            if progress and result.cases % 100 == 0:
                print(f"{result.cases} cases, {len(result.failures)} failed", file=sys.stderr)
    except KeyboardInterrupt:  # Ctrl-C: the cases done so far are the result (the case in flight is not)
        result.interrupted = True
    finally:
        worker.stop()
        result.seconds = time.perf_counter() - started
        result.workers_started = worker.started
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lancespec.fuzz``: exit 0 when every case passed, 1 otherwise, the failing seeds printed."""
    import argparse

    from .cli.options import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK

    parser = argparse.ArgumentParser(prog="python -m lancespec.fuzz", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200, help="how many cases (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="the first case's seed (default 0)")
    parser.add_argument("--workdir", help="where the pristine world and the case copy live, the world kept for later "
                        "runs, so that a seed replays against the world it failed in (default: a temp dir)")
    parser.add_argument("--structured-share", type=float, default=STRUCTURED_SHARE, metavar="P",
                        help="the share of damage to manifests, transactions, deletion files and refs that is "
                        f"structure-aware (default {STRUCTURED_SHARE}; 0 replays the seeds of runs before it)")
    parser.add_argument("--answers", action="store_true",
                        help="damage what an S3-compatible store answers instead of the files: the world on the "
                        "embedded S3 server, certify reading it through a damaging proxy (lancespec/fuzz_answers.py)")
    parser.add_argument("--answer-kinds", metavar="K,K", help="with --answers: only these kinds of damage "
                        f"(default all: {', '.join(KINDS)})")
    parser.add_argument("--serve", type=int, metavar="MEMORY", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.answer_kinds and not args.answers:
        parser.error("--answer-kinds needs --answers")
    kinds = [k.strip() for k in args.answer_kinds.split(",") if k.strip()] if args.answer_kinds else None
    unknown = sorted(set(kinds or ()) - set(KINDS))
    if unknown:
        parser.error(f"unknown kinds of answer damage: {', '.join(unknown)}")
    if args.serve is not None:  # a worker process (Worker starts it)
        serve(args.serve)
        return EXIT_OK
    try:
        with tempfile.TemporaryDirectory(prefix="lancespec-fuzz-") as tmp:
            workdir = Path(args.workdir) if args.workdir else Path(tmp)
            workdir.mkdir(parents=True, exist_ok=True)
            if args.answers:
                answers = fuzz_answers(args.cases, args.seed, workdir, progress=True, kinds=kinds)
                print(answers.damage_summary())
                result: FuzzResult = answers
            else:
                result = fuzz(args.cases, args.seed, workdir, progress=True, structured_share=args.structured_share)
    except KeyboardInterrupt:  # before the first case (the world being built) or while cleaning up
        print("python -m lancespec.fuzz: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    for seed, why in sorted(result.failures.items()):
        print(f"seed {seed}: {why}")
    print(result.summary())
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if result.failures else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
