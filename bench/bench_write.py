"""Writing to a 10,000-fragment dataset (1,000 under ``--quick``), the input of ``open-10k-fragments``
(built once by pylance with ``bench_open.setup_open``, shared through the harness cache).

* ``write-append-10k``: append one one-row fragment (open the dataset, write the file, commit). Each side
  appends to its **own copy** of the input, made once in setup (outside the timing), and that copy
  **grows by one fragment per call**: warm-up plus ``--repeat`` rounds take it from 10,000 to 10,006
  fragments (versions 1 to 7), the same on both sides, a 0.06 % drift that is ignored.
* ``write-shallow-clone-10k``: open the dataset and shallow-clone its latest version into a **fresh target
  directory on every call** (the source is never modified).
* ``write-plan-cleanup-10k``: plan a cleanup whose policy keeps everything (``older_than`` = 10 years;
  ``include_files`` on the pylance side so both list candidate files) and delete nothing:
  ``reference.gc.plan_cleanup`` against ``LanceDataset.explain_cleanup_old_versions``.

Copies and clone targets live in a scratch directory under the work directory, removed at exit.
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
from bench_open import setup_open
from harness import CheckFailed, Context, benchmark

from reference import clone as ref_clone
from reference import ops
from reference.table import Dataset

try:
    from reference import gc as ref_gc
except ImportError:  # pragma: no cover - the module is newer than this benchmark's first version
    ref_gc = None

KEEP_EVERYTHING = timedelta(days=3650)


def _scratch(ctx: Context, prefix: str) -> Path:
    """A fresh directory under the work directory, removed when the process exits."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=ctx.workdir))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _one_row() -> pa.Table:
    return pa.table({"id": pa.array([-1], pa.int64())})


# --- write-append-10k -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AppendInputs:
    ls_uri: str
    pl_uri: str
    fragments: int


def append_lancespec(inputs: AppendInputs) -> int:
    return int(ops.append(Dataset.open(inputs.ls_uri), _one_row()).version)


def append_pylance(inputs: AppendInputs) -> int:
    return int(lance.write_dataset(_one_row(), inputs.pl_uri, mode="append").version)


def same_appends(inputs: AppendInputs, ls_version: int, pl_version: int) -> str:
    if ls_version != pl_version:
        raise CheckFailed(f"after the same number of appends lancespec is at v{ls_version}, pylance v{pl_version}")
    ls_frags = len(Dataset.open(inputs.ls_uri).snapshot().fragments)
    pl_frags = len(lance.dataset(inputs.pl_uri).get_fragments())
    # pylance must read the reference's copy too, with the same fragments and rows.
    pl_on_ls = lance.dataset(inputs.ls_uri)
    appended = ls_version - 1
    expected = inputs.fragments + appended
    if not ls_frags == pl_frags == len(pl_on_ls.get_fragments()) == expected:
        raise CheckFailed(f"fragments: lancespec copy {ls_frags} (pylance sees {len(pl_on_ls.get_fragments())}), "
                          f"pylance copy {pl_frags}, expected {expected}")
    if pl_on_ls.count_rows() != lance.dataset(inputs.pl_uri).count_rows():
        raise CheckFailed("the two copies hold different row counts")
    return f"both copies at v{ls_version}, {expected:,} fragments (grown by one per call)"


@benchmark(
    "write-append-10k",
    measures="append one one-row fragment to a 10,000-fragment dataset (1,000 with --quick); each side "
    "appends to its own copy, which grows by one fragment per call",
    lancespec=append_lancespec,
    pylance=append_pylance,
    check=same_appends,
)
def setup_append(ctx: Context) -> AppendInputs:
    source = setup_open(ctx)
    scratch = _scratch(ctx, "write-append-")
    ls_uri, pl_uri = str(scratch / "lancespec"), str(scratch / "pylance")
    shutil.copytree(source.uri, ls_uri)
    shutil.copytree(source.uri, pl_uri)
    return AppendInputs(ls_uri, pl_uri, source.fragments)


# --- write-shallow-clone-10k ------------------------------------------------------------------------


@dataclass(frozen=True)
class CloneInputs:
    uri: str
    fragments: int
    targets: Path
    counter: Any  # itertools.count: a fresh target name per call


def _target(inputs: CloneInputs, side: str) -> str:
    return str(inputs.targets / f"{side}-{next(inputs.counter)}")


def clone_lancespec(inputs: CloneInputs) -> str:
    target = _target(inputs, "lancespec")
    source = Dataset.open(inputs.uri)
    ref_clone.shallow_clone(source, source.latest_version(), target)
    return target


def clone_pylance(inputs: CloneInputs) -> str:
    target = _target(inputs, "pylance")
    ds = lance.dataset(inputs.uri)
    ds.shallow_clone(target, ds.version)
    return target


def same_clones(inputs: CloneInputs, ls_target: str, pl_target: str) -> str:
    ls_snap = Dataset.open(ls_target).snapshot()
    pl_snap = Dataset.open(pl_target).snapshot()
    if ls_snap.version != pl_snap.version:
        raise CheckFailed(f"clone versions differ: lancespec {ls_snap.version}, pylance {pl_snap.version}")
    ls_bases = [(b.id, b.name, b.is_dataset_root, b.path.rstrip("/")) for b in ls_snap.bases]
    pl_bases = [(b.id, b.name, b.is_dataset_root, b.path.rstrip("/")) for b in pl_snap.bases]
    if ls_bases != pl_bases:
        raise CheckFailed(f"base paths differ: lancespec {ls_bases}, pylance {pl_bases}")
    ls_files = sorted(f.uri for f in ls_snap.files() if f.uri is not None)
    pl_files = sorted(f.uri for f in pl_snap.files() if f.uri is not None)
    if ls_files != pl_files or len(ls_files) != inputs.fragments:
        raise CheckFailed(f"resolved files differ: lancespec {len(ls_files)}, pylance {len(pl_files)}, "
                          f"expected {inputs.fragments} in the source")
    if lance.dataset(ls_target).count_rows() != inputs.fragments:
        raise CheckFailed("pylance does not read the lancespec clone's rows")
    return f"v{ls_snap.version}, {len(ls_files):,} files resolved into the source, same bases both sides"


@benchmark(
    "write-shallow-clone-10k",
    measures="open a 10,000-fragment dataset (1,000 with --quick) and shallow-clone its latest version "
    "into a fresh target directory",
    lancespec=clone_lancespec,
    pylance=clone_pylance,
    check=same_clones,
)
def setup_clone(ctx: Context) -> CloneInputs:
    source = setup_open(ctx)
    return CloneInputs(source.uri, source.fragments, _scratch(ctx, "write-clone-"), itertools.count())


# --- write-plan-cleanup-10k -------------------------------------------------------------------------


@dataclass(frozen=True)
class CleanupInputs:
    uri: str
    fragments: int


def plan_lancespec(inputs: CleanupInputs) -> dict[str, int]:
    if ref_gc is None:  # pragma: no cover - see setup_cleanup
        raise CheckFailed("reference.gc is missing")
    plan = ref_gc.plan_cleanup(Dataset.open(inputs.uri), ref_gc.CleanupPolicy(older_than=KEEP_EVERYTHING))
    stats = plan.stats
    return {"candidates": len(plan.candidates), "old_versions": stats.old_versions,
            "bytes_removed": stats.bytes_removed, "data_files_removed": stats.data_files_removed,
            "transaction_files_removed": stats.transaction_files_removed}


def plan_pylance(inputs: CleanupInputs) -> dict[str, int]:
    explanation = lance.dataset(inputs.uri).explain_cleanup_old_versions(
        older_than=KEEP_EVERYTHING, include_files=True
    )
    stats = explanation.stats
    return {"candidates": len(explanation.candidate_files), "old_versions": stats.old_versions,
            "bytes_removed": stats.bytes_removed, "data_files_removed": stats.data_files_removed,
            "transaction_files_removed": stats.transaction_files_removed}


def same_plans(inputs: CleanupInputs, ls_plan: dict[str, int], pl_plan: dict[str, int]) -> str:
    if ls_plan != pl_plan:
        raise CheckFailed(f"cleanup plans differ: lancespec {ls_plan}, pylance {pl_plan}")
    if any(ls_plan.values()):
        raise CheckFailed(f"a keep-everything policy would remove something: {ls_plan}")
    return f"nothing to remove on either side ({inputs.fragments:,} data files kept)"


@benchmark(
    "write-plan-cleanup-10k",
    measures="plan a keep-everything cleanup (older_than 10 years) of a 10,000-fragment dataset (1,000 with "
    "--quick): reference.gc.plan_cleanup vs explain_cleanup_old_versions(include_files=True)",
    lancespec=plan_lancespec,
    pylance=plan_pylance,
    check=same_plans,
)
def setup_cleanup(ctx: Context) -> CleanupInputs:
    if ref_gc is None:
        ctx.console.print("  [yellow]reference.gc does not exist yet: nothing to compare[/yellow]")
        raise CheckFailed("skipped: reference.gc does not exist yet")
    source = setup_open(ctx)
    return CleanupInputs(source.uri, source.fragments)
