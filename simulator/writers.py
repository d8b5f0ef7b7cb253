"""Writer processes: each applies its planned operations through one implementation (found by name in the
registry of ``conformance.adapters``) and reports every invocation and completion on a queue.

A ``Planned`` unit is one or two operations of the language (``operations``), applied in order through
``Session.apply``. A writer talks to the endpoint only through its own proxy port (its storage options name it)
and only while an operation is in flight; between operations it makes no request. Outcomes:

* ``ok``: the call returned; for a commit, ``version`` is the version it was told.
* ``failed``: the implementation refused with certainty that nothing was committed (a commit conflict, a
  validation error, a missing tag, nothing staged).
* ``unknown``: a refusal without that certainty (the reference's ``CommitOutcomeUnknown``, a transport
  error), or anything unexpected: the checker resolves it from the storage.
"""

from __future__ import annotations

import importlib
import os
import random
import signal
import time
import traceback
import uuid
from typing import Any, SupportsIndex

from conformance.adapters import registry
from conformance.adapters.base import Folder, Session, WriterRefusal
from conformance.operations import ShallowClone

from .workload import Planned

__all__ = ["make_deterministic", "run_op", "writer_main"]


def run_op(session: Session, op: Planned) -> dict[str, Any]:
    """Apply ``op``'s steps; what the last reports (a clone: the version it tagged and cloned)."""
    results = [session.apply(step) for step in op.steps]
    if isinstance(op.last, ShallowClone):
        return {"version": results[0]["tag_version"], "source_version": results[0]["tag_version"]}
    return results[-1]


def make_deterministic(seed: int, writer: int) -> None:
    """Make this writer process's requests a function of the seed and the answers it gets, for a scheduled run
    (``schedule.Scheduler``): its random draws (a deletion file's id, a backoff's slots) and its UUIDs (file
    and transaction names) come from generators seeded by ``(seed, writer)``; ``time.sleep`` only yields (a
    backoff or a read-back's pause would stall every writer, since the scheduler waits for all of them, and its
    length decides nothing: the schedule does); the reference reads one manifest at a time (``READ_AHEAD`` 1:
    requests in parallel would arrive in an order the threads decide). Pylance's own randomness, sleeps and
    parallel reads are in Rust and stay as they are."""
    random.seed(f"{seed}/writer/{writer}")
    names = random.Random(f"{seed}/uuid/{writer}")
    uuid.uuid4 = lambda: uuid.UUID(int=names.getrandbits(128), version=4)
    yield_only = time.sleep

    def _sleep(seconds: float | SupportsIndex) -> None:
        yield_only(0)

    time.sleep = _sleep
    from reference import commit

    commit.READ_AHEAD = 1


def writer_main(writer: int, kind: str, origin: str, root: str, storage_options: dict[str, str],
                ops: list[dict[str, Any]], start: Any, results: Any, time_limit: float,
                deterministic: int | None = None) -> None:
    """A writer process: open a session of implementation ``kind`` (registered by module ``origin``) on the
    bucket ``root`` (``s3://B``, ``az://C``), report ``ready``, wait for ``start``, then run every planned
    operation, reporting ``("event", writer, type, time, op index, value)``; start no operation later than
    ``time_limit`` seconds after the start (report ``("cut", writer, op index)`` instead); always finish with
    ``("done", writer, error or None)``. Ctrl-C is the parent's to handle (it stops the writers), so a writer
    ignores SIGINT rather than print a traceback. ``deterministic``: the seed of a scheduled run
    (``make_deterministic``); every planned operation is started (the time limit is the controller's hard stop
    then, since a cut decided by the clock would differ from run to run)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("LANCE_LOG", "error")
    error: str | None = None
    try:
        if deterministic is not None:
            make_deterministic(deterministic, writer)
        importlib.import_module(origin)
        session = registry.get(kind).open(Folder(root, storage_options))
        import lance  # noqa: F401  (import cost before the start, not inside the first operation)

        results.put(("ready", writer))
        if not start.wait(timeout=300):
            raise TimeoutError("the run never started")
        deadline = time.monotonic() + time_limit if deterministic is None else float("inf")
        for raw in ops:
            op = Planned.from_json(raw)
            if time.monotonic() >= deadline:
                results.put(("cut", writer, op.index))
                break
            results.put(("event", writer, "invoke", time.monotonic(), op.index, {}))
            try:
                value = run_op(session, op)
                outcome = "ok"
            except Exception as exc:
                outcome = "failed" if isinstance(exc, WriterRefusal) and exc.certain else "unknown"
                value = {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:400]}
            results.put(("event", writer, outcome, time.monotonic(), op.index, value))
    except BaseException as exc:  # report, then end: the parent must never wait for a dead writer
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
    finally:
        results.put(("done", writer, error))
