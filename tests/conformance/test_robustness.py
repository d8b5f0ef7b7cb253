"""Certify never crashes or hangs on damaged input: 1,000 seeded random byte-level mutations of valid
manifests and ref files each end in exit 1 or 2 with findings, or exit 0 only when the damaged file
still decodes (a mutation that happens to leave a valid file, e.g. one digit of a timestamp). A crash
(an internal error) or a run over the time limit fails the test with the seed that reproduces it.

Reproduce one case: ``LANCESPEC_MUTATION_SEED=<seed> pytest tests/conformance/test_robustness.py``."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.certify import certify
from lancespec.fuzz import mutate
from reference import clone, ops, refs
from reference.codec import decode_branch, decode_manifest_file, decode_tag
from reference.errors import LanceSpecError
from reference.table import Dataset

MUTATIONS = int(os.environ.get("LANCESPEC_MUTATIONS", "1000"))
SECONDS_PER_CASE = 10


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small dataset with every kind of metadata file: manifests of 3 versions (one with a deletion
    file, one with a base), a tag, a branch with its own version."""
    top = tmp_path_factory.mktemp("pristine")
    root = str(top / "ds")
    ops.create(root, pa.table({"a": list(range(8))}), max_rows_per_file=4,
               initial_bases=[ops.DatasetBasePath(str(top / "base"), name="b")], target_bases=["b"])
    ds = Dataset.open(root)
    ops.delete(ds, "a = 2")
    ops.append(ds, pa.table({"a": [9]}))
    refs.create_tag(ds, "t", 2)
    branch = refs.create_branch(ds, "feat", 2)
    ops.append(branch, pa.table({"a": [10]}))
    clone.shallow_clone(ds, 3, str(top / "clone"))
    return top


def _targets(top: Path) -> list[Path]:
    files = sorted((top / "ds").rglob("*.manifest")) + sorted((top / "ds" / "_refs").rglob("*.json"))
    assert len(files) >= 6
    return files


def still_decodes(path: Path) -> bool:
    """Whether the damaged file is still a valid file of its kind."""
    data = path.read_bytes()
    try:
        if path.suffix == ".manifest":
            decode_manifest_file(data, str(path))
        elif path.parent.name == "tags":
            decode_tag(data, str(path))
        else:
            decode_branch(data, str(path))
    except LanceSpecError:
        return False
    return True


@contextmanager
def time_limit(seconds: int, seed: int) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"certify ran over {seconds}s on mutation seed {seed}")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _seeds() -> list[int]:
    fixed = os.environ.get("LANCESPEC_MUTATION_SEED")
    return [int(fixed)] if fixed else list(range(MUTATIONS))


def test_random_mutations_never_crash(pristine: Path, tmp_path: Path) -> None:
    targets = _targets(pristine)
    outcomes = {0: 0, 1: 0, 2: 0}
    for seed in _seeds():
        rng = random.Random(seed)
        work = tmp_path / "work"
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(pristine, work, symlinks=True)
        target = work / targets[seed % len(targets)].relative_to(pristine)
        target.write_bytes(mutate(target.read_bytes(), rng))
        with time_limit(SECONDS_PER_CASE, seed):
            report = certify(str(work / "ds"), all_versions=True)
        # certify keeps the pristine copy's absolute base paths; findings about the original location are
        # impossible here because the bases were copied with the same relative layout under work/.
        outcomes[report.exit_code] += 1
        if report.exit_code == 0:
            assert still_decodes(target), f"seed {seed}: {target.name} is damaged yet certify found nothing"
        else:
            # exit 2 without a finding only when certify said what it cannot judge (a flag bit it does not know)
            assert report.findings or report.cannot_judge, f"seed {seed}: exit {report.exit_code} without findings"
    caught = outcomes[1] + outcomes[2]
    assert caught >= 0.8 * sum(outcomes.values()), f"too few mutations caught: {outcomes}"


def test_cli_prints_no_traceback_on_damage(pristine: Path, tmp_path: Path) -> None:
    """Through the command line: a damaged latest manifest and a damaged tag give one-line findings."""
    work = tmp_path / "work"
    shutil.copytree(pristine, work, symlinks=True)
    latest = Dataset.open(str(work / "ds")).snapshot(strict=False).manifest_uri
    Path(latest).write_bytes(Path(latest).read_bytes()[:-3])
    tag = work / "ds" / "_refs" / "tags" / "t.json"
    tag.write_bytes(b"{not json")
    done = subprocess.run([sys.executable, "-m", "lancespec", "certify", str(work / "ds"), "--all-versions"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1  # a damaged manifest is a breach of the format, named (docs/exit-codes.md)
    assert "Traceback" not in done.stdout + done.stderr
    assert latest in done.stdout and "HIST-001" in done.stdout
