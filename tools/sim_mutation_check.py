"""The simulator's mutation score: ``python tools/sim_mutation_check.py [--jobs N] [--only NAME] [--list]``.

Each mutant is a commit-protocol, ref or cleanup bug a real writer could ship, injected as a textual patch
into a *copy* of the reference (the same copies as tools/mutation_check.py: the working tree is never
touched). The simulator (``lancespec simulate``, reference writers, embedded S3 server) then runs a fixed
battery of bounded runs against the copy, and the mutant is *killed* by the first run that reports an
anomaly (exit 1). Before the mutants, the unmutated copy must come through the whole battery clean.

Budget: at most ``len(BATTERY)`` (5) runs per mutant, each ``BATTERY_WRITERS`` writers (the staged run: 3) and
``BATTERY_OPS`` operations on one dataset, writers starting nothing after ``BATTERY_TIME_LIMIT`` seconds (a
deterministic run, which starts every operation, is stopped at ``DETERMINISTIC_TIME_LIMIT`` plus the simulator's
grace); a run that gives no verdict within ``--timeout`` seconds counts as an error, not a kill. The runs: the
default mix under the default faults; the default mix under lost-acknowledgement bursts (``faults.burst_of``: the
resends or the read-backs of a manifest whose acknowledgement was lost fail for a while, which is what reaches the
commit loop's unknown-outcome path); the contended mix (``CONTENDED``) without faults; the broad mix
(``BROAD``) under the default faults, scheduled by the proxy from its seed; the staged mix (``STAGED``) with
three writers and no faults, where cleanups are a third of the plan and few enough commits race them that
they run to their end while two-phase writes wait to commit. Prints one line per mutant (killed
by which run, or survived with the reason it is believed to survive), the score and the wall time; with
``--seeds N``, a line per round and the table of kill rates.
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
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation_check import Mutant, apply, environment, prepare, run_each

BATTERY_WRITERS = 6
BATTERY_OPS = 90
BATTERY_TIME_LIMIT = 60
DETERMINISTIC_TIME_LIMIT = 420
#: The operation mix of the contended run: deletes of the setup's rows (two fragments, every writer), tag names
#: every writer shares, and two-phase writes that pin their read version with a tag, with cleanups enough to
#: meet the files of commits still to come and to free the versions after a pinned one.
CONTENDED = "append=20,shared-delete=25,shared-tag=15,pinned-stage=15,cleanup=15,tag=3,clone=2"


class BatteryRun(NamedTuple):
    """One run of the battery: its fault profile, seed, operation mix ("" for the default) and whether the proxy
    schedules it (``simulate --deterministic``: the interleaving is the seed's too)."""

    faults: str
    seed: int
    mix: str
    deterministic: bool = False
    writers: int = BATTERY_WRITERS

    def label(self, seed: int) -> str:
        named = MIX_NAMES.get(self.mix, self.mix)
        return (f"faults={self.faults} seed={seed}" + (f" mix={named}" if self.mix else "")
                + (" deterministic" if self.deterministic else "")
                + (f" writers={self.writers}" if self.writers != BATTERY_WRITERS else ""))


#: The mix of the deterministic run: every kind a writer ships, overwrites, clones and two-phase writes more often
#: than by default (an append that lands on an overwrite it never saw, a clone of a version that moved on, a stage
#: whose files a cleanup meets before its commit).
BROAD = "append=30,delete=8,overwrite=6,tag=4,clone=5,cleanup=10,stage=12,pinned-stage=6"
#: The mix of the staged run (three writers): two-phase writes and cleanups make most of the plan, so that a
#: cleanup meets the files of a stage still to be committed after another writer's commit moved the table on.
#: With six writers almost every cleanup is refused (a version committed between its plan and its deletes:
#: 18 of 20 in one run), and a cleanup that deletes nothing cannot show a bug of what it deletes.
STAGED = "append=15,stage=40,cleanup=35,delete=5,tag=5"
#: The names the battery's lines give its mixes.
MIX_NAMES = {CONTENDED: "contended", BROAD: "broad", STAGED: "staged"}
#: The runs, in order; the first anomaly kills the mutant. The last is scheduled by the proxy from its seed
#: (``--deterministic``): every request is a point where another writer may go first, and a kill there is a
#: property of the seed, not of the machine's timing.
BATTERY = (BatteryRun("default", 1, ""), BatteryRun("lost-ack-bursts", 2, ""), BatteryRun("none", 3, CONTENDED),
           BatteryRun("default", 4, BROAD, deterministic=True), BatteryRun("none", 5, STAGED, writers=3))
#: How the simulator prints an anomaly: ``{class} ({dataset} v{version}): {message}``.
ANOMALY_LINE = re.compile(r"^[a-z][a-z-]+ \(.*\): ")


@dataclass(frozen=True)
class SimMutant(Mutant):
    survives_because: str = ""  # for a mutant known to survive the battery: why (an equivalent or liveness-only bug)
    also: tuple[tuple[str, str], ...] = ()  # further (old, new) sites of the same file, for a bug of two parts

    def patches(self) -> list[Mutant]:
        """One single-site patch per site, the main one first."""
        return [self, *(replace(self, old=old, new=new, also=()) for old, new in self.also)]


MUTANTS = (
    SimMutant("unconditional-put", "store/cloud.py",
              'obstore.put(store, key, data, mode="create")\n',
              'obstore.put(store, key, data)\n',
              "manifests (and tags) are written by plain PUT, without If-None-Match: concurrent commits of one "
              "version overwrite each other"),
    SimMutant("no-conflict-check", "commit.py",
              "for other_version in range(checked + 1, latest.version + 1):",
              "for other_version in range(0):",
              "the commit never judges the versions committed since read_version"),
    SimMutant("retry-keeps-stale-base", "commit.py",
              "            previous = latest_file.manifest\n",
              "            previous = latest_file.manifest if attempts == 1 else previous\n",
              "after a lost race the retry takes the next version number but builds on the manifest it had"),
    SimMutant("retry-keeps-version", "commit.py",
              "            version = latest.version + 1\n",
              "            version = latest.version + 1 if attempts == 1 else version\n",
              "after a lost race the retry keeps the version number it lost"),
    SimMutant("unknown-outcome-retried", "commit.py",
              "    if _is_ours(dataset.storage, manifest_uri, manifest, failure, theirs=theirs.append):\n"
              "        return True\n",
              "    pass\n",
              "a failed manifest PUT (maybe committed: a lost acknowledgement) is retried as if it had failed"),
    SimMutant("lost-race-taken-as-won", "commit.py",
              "            if _is_ours(storage, manifest_uri, payload, "
              "f\"the name of version {version} was taken\", taken=True,\n"
              "                        theirs=partial(_remember, dataset, manifest_uri)):\n",
              "            if True:\n",
              "a taken manifest name is taken for the writer's own commit"),
    SimMutant("read-back-failure-not-ours", "commit.py",
              "the answer is still to come\n            problem = f\"{type(exc).__name__}: {exc}\"\n",
              "the answer is still to come\n            return False\n",
              "a manifest that cannot be read back after a failed write is taken as not ours, so the commit is "
              "tried again (and may land twice)"),
    SimMutant("first-try-unlisted", "commit.py",
              "        attempts += 1\n        entries = dataset.version_entries(newer_than=checked)\n",
              "        attempts += 1\n        from .table import VersionEntry\n"
              "        entries = dataset.version_entries(newer_than=checked) if attempts > 1 or new_dataset else [\n"
              "            VersionEntry(\n"
              "            txn.read_version, ManifestNaming.V2,\n"
              "            join(dataset.uri, VERSIONS_DIR, manifest_name(txn.read_version, ManifestNaming.V2)), 0)]\n",
              "the first attempt builds on the version in hand without listing, trusting a free next name to "
              "mean nothing newer exists (cleanup frees old names; a bug this project shipped for an hour)"),
    SimMutant("delete-stale-read-version", "ops.py",
              "    txn = new_transaction(snapshot.version)\n    op = txn.delete\n",
              "    txn = new_transaction(dataset.latest_version())\n    op = txn.delete\n",
              "a delete claims to have read the latest version, so the deletes committed since its snapshot "
              "are never judged"),
    SimMutant("delete-vs-delete-compatible", "conflicts.py",
              '(row, column): _rebase_deletions for row',
              '(row, column): lambda mine, theirs, cell: cell.compatible() for row',
              "two deletes on one fragment are compatible: the later deletion file replaces the earlier"),
    SimMutant("cleanup-young-unverified", "gc.py",
              "in_progress = not self.policy.delete_unverified and info.last_modified >= self.unverified_before",
              "in_progress = False",
              "cleanup deletes unreferenced files younger than the unverified window (a commit in progress)"),
    SimMutant("cleanup-ignores-tags", "gc.py",
              "tagged = {t.version for t in tags.values() if t.branch == branch}",
              "tagged: set[int] = set()",
              "cleanup removes tagged versions, which clones lean on"),
    SimMutant("tag-by-plain-put", "refs.py",
              "        main.storage.put_if_absent(uri, record.encode())\n    except ObjectAlreadyExists:\n"
              "        raise RefAlreadyExists(f\"tag {name!r} already exists\", uri) from None\n",
              "        main.storage.put(uri, record.encode())\n    except ObjectAlreadyExists:\n"
              "        raise RefAlreadyExists(f\"tag {name!r} already exists\", uri) from None\n",
              "a tag is created by plain PUT over any existing tag of that name"),
    SimMutant("append-skips-judging", "commit.py",
              "    checked = txn.read_version  # versions up to this one",
              "    checked = dataset.latest_version() if txn.WhichOneof(\"operation\") == \"append\" "
              "else txn.read_version  # versions up to this one",
              "an append is taken to conflict with nothing, so the versions committed since its read_version are "
              "never judged: an append lands on top of an overwrite it never saw (the rows replay as a serial "
              "history; only the history's transactions show it: COMMIT-002)"),
    SimMutant("overwrite-renumbers-fragments", "apply.py",
              "        _assign_ids(manifest, op.fragments, next_fragment_id(previous))\n"
              "    elif operation == \"append\":",
              "        _assign_ids(manifest, op.fragments, 0)\n"
              "    elif operation == \"append\":",
              "an overwrite numbers its fragments from 0 again: fragment ids are reused and max_fragment_id goes "
              "down (the rows are right; only the format is broken)"),
    SimMutant("deletion-file-not-cumulative", "ops.py",
              "        rows = set(deleted_offsets(dataset.storage, fragment)) | set(new_rows[fragment_id])\n",
              "        rows = set(new_rows[fragment_id])\n",
              "a delete writes a deletion file of the rows it deletes alone, not of every row the fragment has lost: "
              "the rows an earlier delete removed from that fragment come back"),
    SimMutant("stage-loses-physical-rows", "../conformance/adapters/reference.py",
              "        self.staged[op.key] = (snapshot.version, [w.fragment for w in written])\n",
              "        self.staged[op.key] = (snapshot.version, [w.fragment for w in written])\n"
              "        for fragment in self.staged[op.key][1]:\n"
              "            fragment.ClearField(\"physical_rows\")\n",
              "a two-phase write hands its staged fragments to the commit without their physical_rows (as a "
              "coordinator that carries only the files' paths): the committed fragment claims no rows"),
    SimMutant("clone-of-previous-version", "clone.py",
              "    snapshot = source.snapshot(version)\n    manifest, indices = _shallow_manifest(",
              "    snapshot = source.snapshot(version - 1 if version > 1 else version)\n"
              "    manifest, indices = _shallow_manifest(",
              "a shallow clone copies no file but references the manifest of the version before the one it names "
              "(an off-by-one): the clone's version holds another version's rows"),
    SimMutant("cleanup-races-commit", "gc.py",
              "    rules = _Rules(referenced, verified, policy, now - policy.unverified_threshold)\n",
              "    rules = _Rules(referenced, verified, policy, versions[-1].timestamp)\n",
              "cleanup takes a file older than the newest version for one no commit in progress can use, and deletes "
              "it when unreferenced: a commit whose files were written before another writer's last commit (a lost "
              "race, a two-phase write) loses them before its manifest lands"),
    SimMutant("latest-from-hint", "commit.py",
              "            latest = entries[-1]\n",
              "            from .codec import decode_version_hint\n"
              "            hint_uri = join(dataset.uri, VERSIONS_DIR, VERSION_HINT_NAME)\n"
              "            hinted = decode_version_hint(storage.get(hint_uri))\n"
              "            latest = next((e for e in entries if e.version == hinted), entries[-1])\n",
              "the writer writes the version hint on S3 too (Lance writes none there) and the commit builds on "
              "the version the hint names rather than the newest one listed",
              also=(("    if not storage.backend(dataset.uri).lexically_ordered:\n", "    if True:\n"),)),
)


@dataclass
class Verdict:
    name: str
    status: str  # killed, survived, error
    detail: str
    seconds: float
    kills: int = 0
    rounds: int = 1
    by_run: Counter[str] = field(default_factory=Counter)
    """How many rounds each battery run (``faults/mix``) made the kill in."""


#: The seed of a battery run in round ``k`` (``--seeds``): round 0 is the battery as listed.
SEED_STRIDE = 100


def _battery(src: Path, env: dict[str, str], where: Path, timeout: float,
             shrink: list[str] | None = None, keep: Path | None = None, round_: int = 0,
             steps: tuple[BatteryRun, ...] = BATTERY) -> tuple[str, str, str]:
    """Run the battery in the prepared copy; (status, which run decided it). ``shrink``: arguments that make
    the killing run shrink itself (``simulate --shrink``), its output then ends the detail. ``keep``: a
    folder the report of the deciding run (a kill or an error) is copied to, as ``{copy}-{faults}-{seed}.json``.
    ``round_``: every run's seed moved by ``round_ * SEED_STRIDE`` (the kill rate over several rounds). The third
    value names the battery run that decided (``faults[/mix][/det]``), "" when none did. ``steps``: the runs
    (``--runs``: a part of the battery, to measure what one run kills)."""
    for step in steps:
        faults, mix = step.faults, step.mix
        seed = step.seed + round_ * SEED_STRIDE
        report = where / f"report-{faults}-{seed}.json"
        label = step.label(seed)
        short = faults + (f"/{MIX_NAMES.get(mix, mix)}" if mix else "") + (
            "/det" if step.deterministic else "")
        command = [sys.executable, "-m", "lancespec", "simulate", "--writer", "reference",
                   "--writers", str(step.writers), "--ops", str(BATTERY_OPS), "--datasets", "1",
                   "--seed", str(seed), "--faults", faults, "--preflight-rounds", "0",
                   "--time-limit", str(DETERMINISTIC_TIME_LIMIT if step.deterministic else BATTERY_TIME_LIMIT),
                   "--format", "json", "--output", str(report),
                   *(["--weights", mix] if mix else []), *(["--deterministic"] if step.deterministic else []),
                   *(shrink or [])]
        try:
            done = subprocess.run(command, env=env, cwd=src, capture_output=True, text=True, timeout=timeout,
                                  check=False)
        except subprocess.TimeoutExpired:
            return "error", f"{label}: no verdict within {timeout:.0f}s", short
        if done.returncode != 0 and keep is not None and report.exists():
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(report, keep / f"{where.name}-{faults}-{seed}.json")
        if done.returncode == 1:
            lines = done.stderr.splitlines()  # the text, beside the json report
            first = next((line for line in lines if ANOMALY_LINE.match(line)), None) or next(
                (line for line in lines if line.startswith("writer error:")), "anomalies found")
            shrunk = done.stderr[done.stderr.find("shrinking"):] if shrink and "shrinking" in done.stderr else ""
            return "killed", f"{label}: {first[:140]}" + (f"\n{shrunk}" if shrunk else ""), short
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()
            return "error", f"{label}: exit {done.returncode}: {tail[-1][:140] if tail else ''}", short
    return "survived", "no run of the battery found an anomaly", ""


def run(where: Path, mutant: SimMutant | None, timeout: float, shrink: list[str] | None = None,
        keep: Path | None = None, rounds: int = 1, steps: tuple[BatteryRun, ...] = BATTERY) -> Verdict:
    """The battery against ``mutant`` (None: the unmutated copy), ``rounds`` times with moved seeds. The status
    is the first round's; with several rounds the detail starts with the kill rate ``killed k/n``."""
    src, pkg = prepare(where)
    for patch in mutant.patches() if mutant is not None else []:
        apply(src, patch)
    start = time.monotonic()
    outcomes = []
    for k in range(rounds):
        began = time.monotonic()
        outcomes.append(_battery(src, environment(pkg), where, timeout, shrink, keep, k, steps))
        if rounds > 1:  # a line per round, so that a measurement cut short still shows what finished
            status, _, by = outcomes[-1]
            print(f"    {mutant.name if mutant else '(none)'} round {k}: {status}{f' by {by}' if by else ''} "
                  f"({time.monotonic() - began:.0f}s)", flush=True)
    status, detail, _ = outcomes[0]
    kills = sum(s == "killed" for s, _, _ in outcomes)
    if rounds > 1:
        errors = sum(s == "error" for s, _, _ in outcomes)
        status = "killed" if kills else ("error" if errors else "survived")
        detail = f"killed {kills}/{rounds}" + (f" ({errors} errors)" if errors else "") + f"; first: {detail}"
    return Verdict(mutant.name if mutant else "(none)", status, detail, time.monotonic() - start, kills, rounds,
                   Counter(by for s, _, by in outcomes if s == "killed"))


def rate_table(verdicts: list[Verdict]) -> str:
    """The kill rate of every mutant over the rounds, its time, and which battery runs made the kills."""
    width = max(len(v.name) for v in verdicts)
    lines = [f"{'mutant':{width}}  killed  seconds  killed by", f"{'-' * width}  ------  -------  ---------"]
    for v in verdicts:
        runs = ", ".join(f"{run} {n}" for run, n in v.by_run.most_common())
        lines.append(f"{v.name:{width}}  {v.kills:>2}/{v.rounds:<3}  {v.seconds:7.0f}  {runs or '-'}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per simulator run (default %(default)s)")
    parser.add_argument("--only", action="append", help="run only this mutant (repeat)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--keep-reports", metavar="DIR", type=Path,
                        help="copy the report of every run that kills a mutant (or fails) here, to read later")
    parser.add_argument("--seeds", type=int, default=1, metavar="N",
                        help=f"run the battery N times per mutant, seeds moved by {SEED_STRIDE} each time, and print "
                        "the kill rate (default %(default)s)")
    parser.add_argument("--runs", metavar="N,N", default="",
                        help=f"only these runs of the battery, by position 1-{len(BATTERY)} (what one run kills; "
                        "default: every run)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="with --seeds: do not run the unmutated copy's rounds (a measurement split over several "
                        "processes, one of which runs them); the rates are then kill rates only beside that one")
    parser.add_argument("--shrink", metavar="FILE",
                        help="with one --only mutant: shrink the run that kills it and write the regression here")
    args = parser.parse_args(argv)
    try:
        picked = sorted({int(n) for n in args.runs.split(",") if n.strip()})
    except ValueError:
        parser.error(f"--runs takes positions 1-{len(BATTERY)} separated by commas, not {args.runs!r}")
    if any(not 1 <= n <= len(BATTERY) for n in picked):
        parser.error(f"--runs takes positions 1-{len(BATTERY)}, not {args.runs!r}")
    steps = tuple(BATTERY[n - 1] for n in picked) if picked else BATTERY
    if args.shrink:
        if not args.only or len(args.only) != 1:
            parser.error("--shrink takes exactly one --only mutant")
        mutant = next((m for m in MUTANTS if m.name == args.only[0]), None)
        if mutant is None:
            parser.error(f"no mutant named {args.only[0]!r}")
        with tempfile.TemporaryDirectory(prefix="lancespec-sim-mutation-") as tmp:
            verdict = run(Path(tmp) / mutant.name, mutant, args.timeout * 10,
                          ["--shrink", "--shrink-runs", "12", "--write-regression", str(Path(args.shrink).resolve())],
                          args.keep_reports)
        print(f"{mutant.name}: {verdict.status} ({verdict.seconds:.0f}s)\n{verdict.detail}")
        return 0 if verdict.status == "killed" else 1
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:30} {os.path.normpath('reference/' + m.file):38} {m.what}")
        return 0
    by_name = {m.name: m for m in MUTANTS}
    unknown = sorted(set(args.only or ()) - set(by_name))
    if unknown:
        parser.error(f"no mutant named {', '.join(unknown)}")
    chosen = [by_name[name] for name in dict.fromkeys(args.only)] if args.only else list(MUTANTS)  # --only's order
    started = time.monotonic()
    battery = "; ".join(step.label(step.seed) for step in steps)
    print(f"battery per mutant: {battery}; {BATTERY_WRITERS} reference writers, {BATTERY_OPS} operations, "
          f"time limit {BATTERY_TIME_LIMIT}s each", flush=True)
    with tempfile.TemporaryDirectory(prefix="lancespec-sim-mutation-") as tmp:
        base = Path(tmp)
        if args.seeds == 1:
            baseline: Verdict | None = run(base / "baseline", None, args.timeout, keep=args.keep_reports, steps=steps)
            print(f"baseline (no mutant): {baseline.status}, {baseline.seconds:.0f}s: {baseline.detail}", flush=True)
            if baseline.status != "survived":
                print("the unmutated copy must come through the battery clean first")
                return 2
            verdicts = run_each(base, chosen, lambda where, mutant: run(where, mutant, args.timeout,
                                                                        keep=args.keep_reports, steps=steps), args.jobs)
        else:  # the rounds of the unmutated copy run beside the mutants' (the first job); judged at the end
            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                rounds: list[Future[Verdict]] = [pool.submit(
                    run, base / (f"m{i:02d}-{mutant.name}" if mutant else "baseline"), mutant, args.timeout,
                    keep=args.keep_reports, rounds=args.seeds, steps=steps)
                    for i, mutant in enumerate([*([] if args.no_baseline else [None]), *chosen])]
            results = [job.result() for job in rounds]
            baseline, verdicts = (None, results) if args.no_baseline else (results[0], results[1:])
            if baseline is None:
                print("baseline (no mutant): not run here (--no-baseline)", flush=True)
            else:
                print(f"baseline (no mutant): {baseline.status}, {baseline.seconds:.0f}s: {baseline.detail}",
                      flush=True)
                if baseline.kills or baseline.status == "error":
                    print("the unmutated copy must come through every round clean: the rates below are not kill rates")
    width = max(len(v.name) for v in verdicts)
    print()
    for v in verdicts:
        print(f"{v.name:{width}}  {v.status:8}  {v.seconds:5.0f}s  {v.detail}")
        mutant = by_name[v.name]
        note = f"expected to survive: {mutant.survives_because}" if mutant.survives_because else mutant.what
        print(f"{'':{width}}  {'':8}  {'':6}  ({note})")
    killed = sum(v.status == "killed" for v in verdicts)
    if args.seeds > 1:
        print(f"\nkill rate over {args.seeds} seed rounds (seeds moved by {SEED_STRIDE} per round):\n"
              f"{rate_table(verdicts)}")
    print(f"\nsimulator mutation score: {killed}/{len(verdicts)} killed in {time.monotonic() - started:.0f}s "
          f"(jobs {args.jobs})")
    unexplained = [v.name for v in verdicts if v.status != "killed" and not by_name[v.name].survives_because]
    if args.seeds > 1 and baseline is not None and (baseline.kills or baseline.status == "error"):
        return 2
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
