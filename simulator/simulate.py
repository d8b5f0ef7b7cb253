"""One simulation run: endpoint, pre-flight, proxy, setup, writers, history, final storage, checker.

``simulate(config)`` does it all and returns a ``RunReport``; ``lancespec simulate`` (``lancespec.cli.simulate``)
is its command line. Everything is bounded: writers stop starting operations at ``time_limit_s`` and are
killed ``WRITER_GRACE_S`` later; the proxy and the embedded server are stopped on the way out, whatever happens.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import queue as queue_mod
import re
import shlex
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.adapters import registry
from conformance.adapters.base import Folder
from conformance.operations import Create
from reference.errors import InvalidOption
from reference.store.cloud_options import CREDENTIAL_OPTIONS

from .checker import CheckResult, FinalState, check
from .emulators import AZURITE_ACCOUNT
from .faults import PROFILES, profile
from .history import History
from .observe import judge_format, observe, read_versions_of
from .preflight import PreflightResult, preflight, s3_client
from .proxy import PERSONALITIES, FaultProxy, WireWrite
from .schedule import Scheduler
from .workload import PLAN_KINDS, Planned, initial_ids, plan, writer_kind

__all__ = ["ENDPOINT_ENV", "REPORT_FORMAT", "RunConfig", "RunReport", "replay_command", "simulate"]

ENDPOINT_ENV = "LANCESPEC_S3_ENDPOINT"
REPORT_FORMAT = "lancespec.simulate/2"
"""The JSON report's format: /2 writes each history event's operation as the operations of the language it
applied (``Planned.to_json``); /1 (an ``Op`` with a string kind) is refused by the readers of saved reports."""
"""An S3 endpoint URL to use instead of the embedded server (credentials: ``AWS_ACCESS_KEY_ID`` and
``AWS_SECRET_ACCESS_KEY``, or ``--storage-option``)."""

WRITER_MAX_ATTEMPTS = "4"
"""boto3 attempts per request in reference writers (``lancespec_max_attempts``)."""

UNLOCKED_SWITCH_INTERVAL = 1e-6
"""``sys.setswitchinterval`` of an embedded server without its write lock: races show far more often."""

STORES = ("s3", "az")
"""Where a run writes: S3 (the embedded server or ``--endpoint``) or Azure (Azurite on 127.0.0.1)."""

AZURE_PERSONALITY_LIMITS = {
    "no-conditional": "Azure's SharedKey signature covers If-None-Match, so a request with it stripped is refused "
                      "(403), not obeyed unconditionally",
    "lagging-list": "the proxy hides keys from S3's ListObjectsV2 answer, not from Azure's List Blobs",
    "unlocked": "it is a property of the embedded S3 server",
}
"""Why each personality but ``honest`` cannot be played in front of Azurite (the fault profiles can: latency,
5xx answers, resets and lost answers are HTTP's, not S3's)."""

WRITER_GRACE_S = 60.0
"""How long writers still running at the time limit get to finish before they are killed."""

LOGICAL_TICK_S = 0.001
"""In a deterministic run, the k-th distinct instant of the run (an event, an arrival, a forward) is reported as
``k * LOGICAL_TICK_S`` seconds after the start: the order of instants is the schedule's, their spacing the
machine's, so only the order is kept."""

DETERMINISTIC_TIMEOUT = "600s"
"""A writer's request timeout in a deterministic run: a request waits its turn in the schedule."""

_PORT = re.compile(r"127\.0\.0\.1:\d+")


@dataclass
class RunConfig:
    """Everything that decides a run; ``replay_command`` prints it as the command line that repeats it."""

    writers: int = 8
    ops: int = 400
    seed: int = 0
    writer: str = "reference"
    faults: str = "default"
    personality: str = "honest"
    store: str = "s3"
    """``s3`` (the embedded server, or ``endpoint``) or ``az`` (Azurite, started for the run)."""
    endpoint: str | None = None
    storage_options: dict[str, str] = field(default_factory=dict)
    bucket: str | None = None
    datasets: int = 2
    list_lag_s: float = 2.0
    preflight_rounds: int = 100
    time_limit_s: float = 150.0
    weights: dict[str, float] | None = None
    """Operation mix (``workload.DEFAULT_WEIGHTS`` when None)."""
    deterministic: bool = False
    """The proxy schedules every request (``schedule.Scheduler``): the same seed gives the same run."""
    preemptions: int | None = None
    """With ``deterministic``: at most this many switches away from a writer that could go on (None: any)."""

    def validate(self) -> None:
        """Raise InvalidOption, naming the option, for a value the run cannot take."""
        if self.writers < 1 or self.writers > 64:
            raise InvalidOption("--writers must be between 1 and 64")
        if self.ops < 0 or self.ops > 100_000:
            raise InvalidOption("--ops must be between 0 and 100000")
        if self.datasets < 1 or self.datasets > 16:
            raise InvalidOption("--datasets must be between 1 and 16")
        if self.personality not in PERSONALITIES:
            raise InvalidOption(f"unknown personality {self.personality!r}; choose from {', '.join(PERSONALITIES)}")
        if self.personality == "unlocked" and self.endpoint is not None:
            raise InvalidOption("the unlocked personality is a property of the embedded server; drop --endpoint")
        if self.store not in STORES:
            raise InvalidOption(f"unknown store {self.store!r}; choose from {', '.join(STORES)}")
        if self.store == "az" and self.endpoint is not None:
            raise InvalidOption("--store az starts Azurite for the run; drop --endpoint")
        if self.store == "az" and self.personality != "honest":
            raise InvalidOption(f"the {self.personality} personality cannot be played on Azure: "
                                f"{AZURE_PERSONALITY_LIMITS[self.personality]}; use --personality honest with "
                                "--store az")
        registry.get(writer_kind(self.writer, 0))
        if self.faults not in PROFILES:
            raise InvalidOption(f"unknown fault profile {self.faults!r}; choose from {', '.join(PROFILES)}")
        if self.preemptions is not None and (not self.deterministic or self.preemptions < 0):
            raise InvalidOption("--preemptions takes a number of at least 0, with --deterministic")
        if self.deterministic and self.personality in ("lagging-list", "unlocked"):
            raise InvalidOption(f"the {self.personality} personality depends on the clock or the server's threads; "
                                "it cannot run --deterministic")
        if self.weights is not None:
            values = self.weights.values()
            if set(self.weights) - set(PLAN_KINDS) or not all(math.isfinite(w) and w >= 0 for w in values) \
                    or not any(w > 0 for w in values):
                raise InvalidOption(f"--weights gives operations of {', '.join(PLAN_KINDS)} finite weights of at "
                                    f"least 0, one of them above 0; got {self.weights}")

    def to_json(self) -> dict[str, Any]:
        return {"writers": self.writers, "ops": self.ops, "seed": self.seed, "writer": self.writer,
                "faults": self.faults, "personality": self.personality, "store": self.store, "endpoint": self.endpoint,
                "datasets": self.datasets, "list_lag_s": self.list_lag_s, "time_limit_s": self.time_limit_s,
                "preflight_rounds": self.preflight_rounds, "weights": self.weights,
                "deterministic": self.deterministic, "preemptions": self.preemptions}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunConfig:
        """The configuration a report recorded (``to_json``); fields a report lacks keep their defaults."""
        known = {name: data[name] for name in ("writers", "ops", "seed", "writer", "faults", "personality",
                                               "store", "endpoint", "datasets", "list_lag_s", "time_limit_s",
                                               "preflight_rounds", "weights", "deterministic", "preemptions")
                 if name in data}
        return cls(**known)


def replay_command(config: RunConfig) -> str:
    """The command line that replays ``config`` (same operations, same fault decisions per process): every
    field that decides the run, those at their default left out. Two are not carried: credentials among the
    storage options (never printed; the replay takes them from the environment, as ``simulate`` does) and
    the bucket (a run fills its bucket, so a replay needs a fresh one, the default)."""
    default = RunConfig()
    args = ["lancespec", "simulate", "--writers", str(config.writers), "--ops", str(config.ops), "--seed",
            str(config.seed), "--writer", config.writer, "--faults", config.faults]
    for flag, name in (("--personality", "personality"), ("--store", "store"), ("--datasets", "datasets"),
                       ("--endpoint", "endpoint"),
                       ("--list-lag", "list_lag_s"), ("--preflight-rounds", "preflight_rounds"),
                       ("--time-limit", "time_limit_s")):
        value = getattr(config, name)
        if value not in (getattr(default, name), ""):  # an empty endpoint is the default one
            args += [flag, repr(value) if isinstance(value, float) else str(value)]
    if config.deterministic:
        args.append("--deterministic")
        if config.preemptions is not None:
            args += ["--preemptions", str(config.preemptions)]
    if config.weights is not None:
        args += ["--weights", ",".join(f"{kind}={weight!r}" for kind, weight in config.weights.items())]
    for key, value in config.storage_options.items():
        if key.lower() not in CREDENTIAL_OPTIONS:
            args += ["--storage-option", f"{key}={value}"]
    return shlex.join(args)


@dataclass
class RunReport:
    config: RunConfig
    preflight: PreflightResult | None
    history: History
    result: CheckResult
    faults: Counter[str]
    requests: Counter[str]
    fault_log: dict[int, list[tuple[str, int, str]]]
    seconds_writing: float
    seconds_total: float
    seconds_checking: float
    cut_ops: int
    writer_errors: list[str]
    final: FinalState
    wire: list[WireWrite] = field(default_factory=list)
    request_counts: dict[tuple[int, str], int] = field(default_factory=dict)
    """Requests per (process, request class): how far each process's fault schedule was consumed."""
    schedule: list[int] | None = None
    """A deterministic run's schedule: the writer of every request the proxy released, in order."""
    schedule_timeouts: int = 0
    """Releases the scheduler made without every live writer waiting (the run may not repeat exactly)."""

    @property
    def ok(self) -> bool:
        return self.result.ok and not self.writer_errors

    def op_table(self) -> dict[str, dict[str, int]]:
        """Per operation kind: counts of ok, failed, unknown (and unknown resolved committed)."""
        table: dict[str, dict[str, int]] = {}
        for record in self.history.records():
            row = table.setdefault(record.op.kind, {"ok": 0, "failed": 0, "unknown": 0, "unknown-committed": 0})
            row[record.outcome] += 1
            if self.result.resolutions.get(record.key):
                row["unknown-committed"] += 1
        return table

    @property
    def commits_per_s(self) -> float:
        return self.result.commits / self.seconds_writing if self.seconds_writing > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        invariants = self.result.by_invariant()
        return {
            "format": REPORT_FORMAT,
            "config": self.config.to_json(),
            "replay": replay_command(self.config),
            "ok": self.ok,
            "preflight": self.preflight.to_json() if self.preflight is not None else None,
            "seconds": {"writing": round(self.seconds_writing, 3), "checking": round(self.seconds_checking, 3),
                        "total": round(self.seconds_total, 3)},
            "commits": self.result.commits,
            "commits_per_s": round(self.commits_per_s, 3),
            "operations": self.op_table(),
            "operations_cut": self.cut_ops,
            "faults": dict(sorted(self.faults.items())),
            "requests": dict(sorted(self.requests.items())),
            "invariants": {name: {"anomalies": n, "holds": n == 0} for name, n in invariants.items()},
            "anomalies": [a.to_json(self.history) for a in self.result.anomalies],
            "unknown_resolutions": {f"w{w}#{i}": committed for (w, i), committed in
                                    sorted(self.result.resolutions.items())},
            "writer_errors": self.writer_errors,
            "fault_schedule": {str(c): [list(x) for x in v] for c, v in sorted(self.fault_log.items())},
            "wire": [{**w.to_json(), "t": round(w.t - self.history.t0, 6)} for w in self.wire],
            "history": self.history.to_json(),
            **({"schedule": {"releases": len(self.schedule), "timeouts": self.schedule_timeouts,
                             "order": "".join(_writer_letter(w) for w in self.schedule)}}
               if self.schedule is not None else {}),
        }

    def reproducible_part(self) -> dict[str, Any]:
        """What two deterministic runs of one configuration must agree on byte for byte: the history, the
        anomalies, the fault log, the schedule and the unknown outcomes' resolutions."""
        data = self.to_json()
        return {name: data[name] for name in ("config", "history", "anomalies", "fault_schedule",
                                              "unknown_resolutions", "operations", "commits", "schedule")
                if name in data}


def _writer_letter(writer: int) -> str:
    """One character per writer (0-9, a-z, A-Z, then - and _: the 64 writers a run may have) in a schedule's
    ``order``."""
    return "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"[writer]


def _default_options() -> dict[str, str]:
    out = {"aws_region": os.environ.get("AWS_REGION", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))}
    for env, key in (("AWS_ACCESS_KEY_ID", "aws_access_key_id"), ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
                     ("AWS_SESSION_TOKEN", "aws_session_token")):
        if os.environ.get(env):
            out[key] = os.environ[env]
    return out


def _ensure_bucket(endpoint: str, options: dict[str, str], bucket: str) -> None:
    client = s3_client(endpoint, options)
    try:
        client.head_bucket(Bucket=bucket)
    except Exception:
        client.create_bucket(Bucket=bucket)


def simulate(config: RunConfig, progress: Callable[[int, int, str], None] | None = None) -> RunReport:
    """Run the simulation ``config`` describes and check it."""
    config.validate()
    started = time.monotonic()
    note = progress or (lambda done, total, text: None)
    server: Any = None
    endpoint = config.endpoint or os.environ.get(ENDPOINT_ENV) or None
    options = {**_default_options(), **config.storage_options}
    if config.store == "az":
        from .emulators import AzuriteServer

        server = AzuriteServer()
        server.start()
        endpoint = server.endpoint
        options = {**config.storage_options, **server.storage_options()}
        direct = dict(options)
    else:
        if endpoint is None:
            from .s3 import TEST_CREDENTIALS, EmbeddedS3Server

            unlocked = config.personality == "unlocked"
            server = EmbeddedS3Server(locked=not unlocked,
                                      switch_interval=UNLOCKED_SWITCH_INTERVAL if unlocked else None)
            server.start()
            endpoint = server.endpoint
            options.update(TEST_CREDENTIALS)
        options["allow_http"] = "true" if endpoint.startswith("http://") else options.get("allow_http", "false")
        direct = {**options, "aws_endpoint": endpoint}
    fresh = server is not None and config.deterministic  # a fresh server: a name from the seed alone is free
    bucket = config.bucket or f"lancespec-sim-{config.seed}-" + ("det" if fresh else uuid.uuid4().hex[:8])
    root = f"{config.store}://{bucket}"
    scheduler = (Scheduler(config.seed, range(config.writers), preemptions=config.preemptions)
                 if config.deterministic else None)
    proxy = FaultProxy(endpoint, config.writers + 1, account=AZURITE_ACCOUNT if config.store == "az" else None,
                       seed=config.seed, faults=profile(config.faults),
                       personality=config.personality, list_lag_s=config.list_lag_s,
                       faulty_clients=range(config.writers), scheduler=scheduler)
    try:
        note(0, 0, "setting up")
        if config.store == "az":
            server.create_container(bucket)
        else:
            _ensure_bucket(endpoint, direct, bucket)
        proxy.start()
        control = config.writers
        checked = None
        if config.preflight_rounds > 0:
            note(0, 0, "pre-flight: conditional writes under contention")
            checked = (_preflight_through_layer(root, proxy.storage_options(control, direct), config.preflight_rounds)
                       if config.store == "az" else
                       preflight(proxy.endpoint(control), bucket, direct, rounds=config.preflight_rounds))
        initial = _create_datasets(root, direct, config.datasets)
        plans = plan(config.seed, config.writers, config.ops, config.datasets, config.weights)
        history, cut, errors, t_start, t_end = _run_writers(config, root, proxy, options, plans, note)
        proxy.stop()
        writing = t_end - t_start
        checking_started = time.monotonic()
        wire: list[WireWrite] = list(proxy.writes)
        if scheduler is not None:
            history, wire = logical_times(history, wire, scheduler.first_release)
        final = observe(root, direct, initial,
                        lambda done, total: note(done, total, "reading every retained version"))
        final.read_versions = read_versions_of(wire)
        note(0, 0, "certifying every retained version")
        final.breaches = judge_format(root, direct, final.versions)
        note(0, 0, "checking")
        result = check(history, wire, final)
        checking = time.monotonic() - checking_started
        requests: Counter[str] = Counter()
        for (_, request_class), n in proxy.requests.items():
            requests[request_class] += n
        fault_log = {c: proxy.faults_of(c) for c in range(config.writers)}
        return RunReport(config, checked, history, result, proxy.fault_counts(), requests, fault_log, writing,
                         time.monotonic() - started, checking, cut, errors, final, wire, dict(proxy.requests),
                         list(scheduler.order) if scheduler is not None else None,
                         scheduler.timeouts if scheduler is not None else 0)
    finally:
        proxy.stop()
        if server is not None:
            server.stop()


def _preflight_through_layer(root: str, options: dict[str, str], rounds: int) -> PreflightResult:
    """The pre-flight on a store boto3 cannot speak (Azure): certify-store's two conditional-create properties
    through lancespec's storage layer (``store_judge.judge_store_uri``), through the proxy's control port."""
    from .store_judge import judge_store_uri

    verdict = judge_store_uri(root, options, race_rounds=rounds,
                              only=("conditional-create", "atomic-conditional-create"))
    sequential, race = verdict.properties
    return PreflightResult(root, verdict.commit_safe, race.observed if sequential.passed else sequential.observed,
                           sequential.passed, rounds=rounds, racers=8)


def logical_times(history: History, wire: list[WireWrite], first_release: float) -> tuple[History, list[WireWrite]]:
    """A deterministic run's history and wire log with every time replaced by its rank among the run's instants
    (``LOGICAL_TICK_S`` apart, from the start), and the proxy's ports taken out of error messages: the order of
    instants is the schedule's (one thing runs at a time), their spacing and the ports are the machine's. Before
    ``first_release`` every writer runs at once (its first invocation, its first request): those instants are
    ordered by writer."""
    def order(t: float, process: int) -> tuple[int, int, float]:
        return (0, process, t) if t < first_release else (1, 0, t)

    keys = {(e.time, order(e.time, e.process)) for e in history} | {(w.t, order(w.t, w.client)) for w in wire} | {
        (w.forwarded, order(w.forwarded, w.client)) for w in wire if w.forwarded}
    rank = {t: history.t0 + (k + 1) * LOGICAL_TICK_S for k, (t, _) in enumerate(sorted(keys, key=lambda x: x[1]))}

    def value(v: dict[str, Any]) -> dict[str, Any]:
        return {k: _PORT.sub("127.0.0.1:PORT", x) if isinstance(x, str) else x for k, x in v.items()}

    events = History.build(((rank[e.time], e.process, e.type, e.op, value(e.value)) for e in history), history.t0)
    return events, [replace(w, t=rank[w.t], forwarded=rank[w.forwarded] if w.forwarded else 0.0) for w in wire]


def _create_datasets(root: str, options: dict[str, str], count: int) -> list[str]:
    """Version 1 of every dataset, written by the reference writer in bucket ``root`` (``s3://B``, ``az://C``):
    two fragments of ``INITIAL_ROWS // 2`` rows (few, so ``shared-delete`` operations meet on them)."""
    session = registry.get("reference").open(Folder(root, options))
    for i in range(count):
        ids = initial_ids(i)
        session.apply(Create(f"ds{i}", ids[0], len(ids), max_rows_per_file=len(ids) // 2))
    return [f"ds{i}" for i in range(count)]


@contextlib.contextmanager
def _interrupt_held() -> Iterator[None]:
    """Ctrl-C is the parent's (it stops the writers). While writers start: each is born with SIGINT blocked
    (the mask of the thread that starts it), so one arriving while it loads, before ``writer_main`` ignores
    it, prints no traceback; and the parent takes a Ctrl-C only once every writer started (raised then as
    KeyboardInterrupt), so that none is cut off halfway through its start (a child that then prints its own
    traceback)."""
    pressed: list[int] = []
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum)) if main_thread else None
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if main_thread:
            signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    if pressed:
        raise KeyboardInterrupt


def _run_writers(config: RunConfig, root: str, proxy: FaultProxy, options: dict[str, str],
                 plans: list[list[Planned]], note: Callable[[int, int, str], None],
                 ) -> tuple[History, int, list[str], float, float]:
    from .writers import writer_main

    scheduler = proxy.scheduler
    ctx = multiprocessing.get_context("spawn")
    results: Any = ctx.Queue()
    start = ctx.Event()
    total = sum(len(p) for p in plans)
    by_index = [{op.index: op for op in ops} for ops in plans]
    procs = []
    for w, ops in enumerate(plans):
        kind = writer_kind(config.writer, w)
        writer_options = proxy.storage_options(w, {**options, "lancespec_max_attempts": WRITER_MAX_ATTEMPTS,
                                                   **({"timeout": DETERMINISTIC_TIMEOUT} if scheduler else {})})
        procs.append(ctx.Process(target=writer_main, name=f"sim-writer-{w}",
                                 args=(w, kind, registry.origin(kind), root, writer_options,
                                       [op.to_json() for op in ops], start, results, config.time_limit_s,
                                       config.seed if scheduler else None)))
    raw: list[tuple[float, int, str, Planned, dict[str, Any]]] = []
    ready: set[int] = set()
    done: set[int] = set()
    errors: list[str] = []
    cut = 0
    completed = 0
    t_start = time.monotonic()
    hard_stop = t_start + 180 + config.time_limit_s + WRITER_GRACE_S
    released = False
    started: list[Any] = []
    try:
        with _interrupt_held():
            for proc in procs:
                proc.start()
                started.append(proc)
        note(0, total, "starting writers")
        while len(done) < len(procs):
            now = time.monotonic()
            if now > hard_stop:
                errors.append(f"writers {sorted(set(range(len(procs))) - done)} were still running at the hard "
                              "stop and were killed")
                break
            try:
                message = results.get(timeout=min(1.0, max(0.05, hard_stop - now)))
            except queue_mod.Empty:
                for w, proc in enumerate(procs):
                    if not proc.is_alive() and w not in done:
                        done.add(w)
                        if scheduler is not None:
                            scheduler.retire(w)
                        errors.append(f"writer {w} died with exit code {proc.exitcode}")
                        start.set()  # the others must not wait for it
                continue
            kind = message[0]
            if kind == "ready":
                ready.add(message[1])
                if len(ready) == len(procs) and not released:
                    t_start = time.monotonic()
                    hard_stop = t_start + config.time_limit_s + WRITER_GRACE_S
                    released = True
                    if scheduler is not None:
                        scheduler.activate()
                    start.set()
            elif kind == "event":
                _, w, outcome, t, index, value = message
                raw.append((t, w, outcome, by_index[w][index], value))
                if outcome != "invoke":
                    completed += 1
                    note(completed, total, f"{completed}/{total} operations")
            elif kind == "cut":
                cut += len(plans[message[1]]) - message[2]
            elif kind == "done":
                done.add(message[1])
                if scheduler is not None:
                    scheduler.retire(message[1])
                if message[2]:
                    errors.append(f"writer {message[1]}: {message[2]}")
                start.set()
    except KeyboardInterrupt:
        errors.append("interrupted")  # the writers are killed at once below
        raise
    finally:
        t_end = time.monotonic()
        for proc in started:
            proc.join(timeout=10 if not errors else 1)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
        # drain what the writers reported before the kill
        while True:
            try:
                message = results.get_nowait()
            except (queue_mod.Empty, OSError, ValueError):
                break
            if message[0] == "event":
                _, w, outcome, t, index, value = message
                raw.append((t, w, outcome, by_index[w][index], value))
    return History.build(raw, t_start), cut, errors, t_start, t_end
