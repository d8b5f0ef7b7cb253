"""Fault profiles and the seeded, per-process fault schedule.

A fault decision is a pure function of ``(seed, client, request class, n)``: ``client`` is the writer
process (each writer talks to its own proxy port, so the proxy knows which process sent a request), the
request class is what the request does (``manifest-put``, ``put``, ``get``, ``head``, ``list``, ``delete``,
``other``) and ``n`` counts that client's requests of that class from 0. The schedule holds no state:
``decide`` hashes the four values (BLAKE2b) into a uniform number and picks the fault whose probability
band it falls in. The same seed therefore gives every process the same fault on its n-th manifest PUT,
its n-th data PUT, and so on, in any run; which request is the n-th is up to the process (a reference
writer is sequential; pylance may issue several reads at once) and to the other processes (retries after
a lost race add requests).

A profile with ``burst`` adds the aftermath of a lost acknowledgement: the object a manifest PUT wrote
without an answer stays out of that client's reach for a while. Per such lost acknowledgement, ``burst_of``
draws (from the same four values) which of the client's next requests on that object fail and how many
(1 to ``burst``): its resends (the burst ends at the first read of the object), or its reads (GET, HEAD;
its resends then go through untouched). Which requests those are is the client's order of requests on that
object: fixed for a reference writer, which makes them one at a time.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "BURST_KINDS",
    "FAULTS",
    "PROFILES",
    "REQUEST_CLASSES",
    "Fault",
    "FaultProfile",
    "burst_of",
    "decide",
    "profile",
]

FAULTS = ("latency", "slowdown", "error500", "reset", "lost-ack", "pause")
"""Every fault type, in the order their probability bands are laid out.

* ``latency``: the request waits ``latency_s`` (jittered) before it is forwarded.
* ``slowdown``: answered ``503 SlowDown`` without being forwarded.
* ``error500``: answered ``500 InternalError`` without being forwarded.
* ``reset``: the connection is reset (TCP RST) before the request is forwarded: it never takes effect.
* ``lost-ack``: the request is forwarded and takes effect, then the connection is reset instead of
  answering: the client cannot know that it succeeded.
* ``pause``: the request is held ``pause_s`` before it is forwarded (a stalled writer or endpoint).
"""

REQUEST_CLASSES = ("manifest-put", "put", "get", "head", "list", "delete", "other")


@dataclass(frozen=True)
class Fault:
    """One decision: the fault (None: forward untouched) and, for delays, how long."""

    kind: str | None
    delay_s: float = 0.0


@dataclass(frozen=True)
class FaultProfile:
    """Per request class, the probability of each fault; ``"*"`` applies to classes not listed. ``script``
    writes a schedule out instead: per request class, the fault of the ``n``-th request (of each client),
    which takes precedence over the rates."""

    name: str
    rates: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    latency_s: float = 0.03
    pause_s: float = 1.0
    description: str = ""
    script: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    burst: int = 0
    """After a lost acknowledgement of a manifest PUT, up to this many of the client's next requests on that
    object fail (``burst_of``); 0: none do."""

    def __post_init__(self) -> None:
        unknown = {kind for faults in self.script.values() for kind in faults.values()} - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault(s) {sorted(unknown)} in the script of {self.name!r}; faults: {FAULTS}")


_DEFAULT_RATES = {"latency": 0.08, "slowdown": 0.02, "error500": 0.01, "reset": 0.01, "lost-ack": 0.01,
                  "pause": 0.002}
_MANIFEST_RATES = {"latency": 0.10, "slowdown": 0.03, "error500": 0.02, "reset": 0.03, "lost-ack": 0.06,
                   "pause": 0.01}

PROFILES: dict[str, FaultProfile] = {
    "none": FaultProfile("none", {}, description="no faults: the proxy only forwards (and records)"),
    "default": FaultProfile(
        "default", {"*": _DEFAULT_RATES, "manifest-put": _MANIFEST_RATES},
        description="every fault type at a few percent; manifest PUTs (the commit point) hit harder",
    ),
    "heavy": FaultProfile(
        "heavy",
        {"*": {k: 3 * v for k, v in _DEFAULT_RATES.items()},
         "manifest-put": {k: 2 * v for k, v in _MANIFEST_RATES.items()}},
        description="three times the default rates (twice on manifest PUTs)",
    ),
    "lost-acks": FaultProfile(
        "lost-acks", {"manifest-put": {"lost-ack": 0.25}, "put": {"lost-ack": 0.05}},
        description="only lost acknowledgements: a quarter of manifest PUTs land without an answer",
    ),
    "lost-ack-bursts": FaultProfile(
        "lost-ack-bursts", {"manifest-put": {"lost-ack": 0.25}, "put": {"lost-ack": 0.05}}, burst=16,
        description="as lost-acks, and after a manifest PUT's lost answer the client's resends of that manifest, "
                    "or its reads of it, fail for a burst of 1-16 requests",
    ),
    "outage": FaultProfile(
        "outage", {"*": {"slowdown": 1.0}},
        description="every writer request answered 503 SlowDown: nothing can commit, so the run checks nothing "
                    "(its verdict says so: NOTHING COMMITTED)",
    ),
}
for _fault in FAULTS:  # one profile per fault type, every request class: for tests and demonstrations
    PROFILES[f"only-{_fault}"] = FaultProfile(
        f"only-{_fault}", {"*": {_fault: 0.2}}, latency_s=0.02, pause_s=0.3,
        description=f"only {_fault}, on a fifth of all requests",
    )


def profile(name: str) -> FaultProfile:
    """The named profile; ValueError lists the known names."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown fault profile {name!r}; choose from {', '.join(PROFILES)}") from None


def _uniform(seed: int, client: int, request_class: str, n: int, salt: str) -> float:
    digest = hashlib.blake2b(f"{seed}/{client}/{request_class}/{n}/{salt}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def decide(prof: FaultProfile, seed: int, client: int, request_class: str, n: int) -> Fault:
    """The fault for ``client``'s ``n``-th request of ``request_class`` (pure: same inputs, same answer)."""
    kind = prof.script.get(request_class, {}).get(n)
    if kind is None:  # the fault whose band (FAULTS laid end to end, each as wide as its rate) holds u
        u = _uniform(seed, client, request_class, n, "fault")
        rates = prof.rates.get(request_class, prof.rates.get("*", {}))
        edges = itertools.accumulate(rates.get(f, 0.0) for f in FAULTS)
        kind = next((f for f, edge in zip(FAULTS, edges, strict=True) if u < edge), None)
    if kind not in ("latency", "pause"):
        return Fault(kind)
    jitter = 0.5 + _uniform(seed, client, request_class, n, "delay")
    return Fault(kind, (prof.latency_s if kind == "latency" else prof.pause_s) * jitter)


BURST_KINDS = ("resends", "reads")
"""What fails after a lost acknowledgement: the client's resends of the object, or its reads of it."""


def burst_of(prof: FaultProfile, seed: int, client: int, n: int) -> tuple[str, int] | None:
    """The aftermath of ``client``'s ``n``-th manifest PUT, when it was a lost acknowledgement: which of the
    client's next requests on that object fail (``BURST_KINDS``) and how many; None without ``burst``."""
    if prof.burst <= 0:
        return None
    u = _uniform(seed, client, "manifest-put", n, "burst")
    kind = BURST_KINDS[int(u * 2)]
    count = 1 + int(_uniform(seed, client, "manifest-put", n, "burst-size") * prof.burst)
    return kind, count
