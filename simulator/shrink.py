"""Shrinking a failing simulator run to a small schedule that still fails.

A run is fixed by its configuration: each writer's operations are drawn from its own seeded generator
(``workload.plan``), so fewer operations per writer is a prefix of the same plan, and dropping the last
writers leaves the others' plans unchanged; the fault for a process's n-th request of a class is a pure
function of (seed, process, class, n) (``faults.decide``), so the requests that remain keep their fault
decisions. Shrinking is therefore a search over configurations: greedy, one smaller candidate at a time
(no faults, fewer writers, fewer operations per writer, one dataset, one operation kind fewer), keeping a
candidate when its run still shows an anomaly of an invariant the original broke, within a budget of runs.

A deterministic run (``RunConfig.deterministic``) is shrunk on its schedule too: the interleaving is the seed's, so
every candidate's verdict is final (one run decides it, no retries), and fewer preemptions
(``RunConfig.preemptions``: how often the scheduler may switch away from a writer that could go on) is a
simpler interleaving of the same operations: none, then half as many as the last bound kept.

The result is printed as a replay command and as a pytest regression (``regression_source``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .simulate import RunConfig, RunReport, replay_command, simulate
from .workload import DEFAULT_WEIGHTS

__all__ = ["PREEMPTION_START", "ShrinkResult", "candidates", "regression_source", "shrink"]

PREEMPTION_START = 64
"""The first preemption bound tried on a deterministic run that had none (then halved while the run still fails)."""


@dataclass
class ShrinkResult:
    original: RunConfig
    shrunk: RunConfig
    invariants: tuple[str, ...]
    """The invariants the original run broke; every kept candidate broke at least one of them."""
    runs: int
    seconds: float
    steps: list[str] = field(default_factory=list)
    """What each kept reduction was, in order."""
    last_report: RunReport | None = None


def candidates(config: RunConfig) -> Iterator[tuple[str, RunConfig]]:
    """Smaller configurations than ``config``, most reducing first, each with what it drops."""
    replace = dataclasses.replace
    if config.faults != "none":
        yield "no faults", replace(config, faults="none")
    if config.deterministic:
        bounds = [0, PREEMPTION_START] if config.preemptions is None else [0, config.preemptions // 2]
        for bound in dict.fromkeys(bounds):
            if config.preemptions is None or bound < config.preemptions:
                yield f"at most {bound} preemptions", replace(config, preemptions=bound)
    per_writer = max(1, -(-config.ops // config.writers))
    for writers in sorted({config.writers // 2, config.writers - 1}):
        if 1 <= writers < config.writers:
            yield f"{writers} writers", replace(config, writers=writers, ops=per_writer * writers)
    for count in sorted({per_writer // 2, per_writer - 1}):
        if 1 <= count < per_writer:
            yield f"{count} operations per writer", replace(config, ops=count * config.writers)
    if config.datasets > 1:
        yield "one dataset", replace(config, datasets=1)
    weights = dict(DEFAULT_WEIGHTS if config.weights is None else config.weights)
    for kind in sorted(k for k, w in weights.items() if w > 0 and k != "append"):
        yield f"no {kind}", replace(config, weights={**weights, kind: 0.0})


def shrink(config: RunConfig, report: RunReport, *, max_runs: int = 20,
           run: Callable[[RunConfig], RunReport] = simulate,
           note: Callable[[str], None] = lambda text: None) -> ShrinkResult:
    """Reduce ``config``, whose run gave ``report`` with anomalies, within ``max_runs`` further runs."""
    broken = tuple(sorted({a.invariant for a in report.result.anomalies}))
    if not broken:
        raise ValueError("the run to shrink found no anomaly")
    result = ShrinkResult(config, config, broken, 0, 0.0, last_report=report)
    started = time.monotonic()
    progress = True
    while progress and result.runs < max_runs:
        progress = False
        for what, candidate in candidates(result.shrunk):
            if result.runs >= max_runs:
                break
            result.runs += 1
            attempt = run(candidate)
            kept = any(a.invariant in broken for a in attempt.result.anomalies)
            note(f"  try {what}: {'still fails, kept' if kept else 'passes, dropped'}")
            if kept:
                result.shrunk, result.last_report = candidate, attempt
                result.steps.append(what)
                progress = True
                break
    result.seconds = time.monotonic() - started
    return result


def regression_source(result: ShrinkResult, test_name: str) -> str:
    """A pytest module that replays the shrunk run and requires it clean (it fails until the bug is fixed)."""
    shrunk = result.shrunk
    fields = {f.name: getattr(shrunk, f.name) for f in dataclasses.fields(RunConfig)
              if getattr(shrunk, f.name) != f.default and f.name not in ("endpoint", "storage_options", "bucket")}
    arguments = "".join(f"\n        {name}={value!r}," for name, value in fields.items())
    return f'''"""Shrunk simulator counterexample: {", ".join(result.invariants)}.

Original: {replay_command(result.original)}
Shrunk ({", ".join(result.steps) or "no reduction"}; {result.runs} runs):
    {replay_command(shrunk)}
"""

import pytest

from simulator.simulate import RunConfig, simulate


@pytest.mark.s3
def {test_name}() -> None:
    report = simulate(RunConfig({arguments}
    ))
    assert report.ok, [a.message for a in report.result.anomalies]
'''
