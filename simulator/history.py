"""The history of a run: every invocation and completion of every operation, in time order.

An ``Event`` is one line: ``invoke`` when a writer starts an operation, then one completion: ``ok`` (the
writer was told it succeeded), ``failed`` (it was told, for certain, that nothing happened) or ``unknown``
(the outcome could not be known: a lost connection at the commit point, a transport error). Times are
seconds on the machine's monotonic clock (``time.monotonic``, shared by every process on Linux), so they
compare with the proxy's arrival times; ``History.to_json`` writes them relative to the run's start.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .workload import Planned

__all__ = ["OUTCOMES", "Event", "History", "OpKey", "OpRecord"]

OUTCOMES = ("ok", "failed", "unknown")


class OpKey(NamedTuple):
    """Names an operation: the writer (process) that ran it and its number in that writer's plan (``Planned.index``)."""

    writer: int
    number: int

    def __str__(self) -> str:
        return f"w{self.writer}#{self.number}"


@dataclass(frozen=True)
class Event:
    """One history line. ``value`` holds what a completion reported: ``version`` (the version a commit was
    told), ``noop`` (a delete that matched nothing), ``error`` (the exception, one line), ``tag_version``,
    ``source_version``, ``read_version``, ``attempts``."""

    index: int
    time: float
    process: int
    type: str  # "invoke" or an outcome
    op: Planned
    value: dict[str, Any] = field(default_factory=dict)

    def to_json(self, t0: float = 0.0) -> dict[str, Any]:
        return {"index": self.index, "time": round(self.time - t0, 6), "process": self.process, "type": self.type,
                "op": self.op.to_json(), "value": self.value}

    def line(self, t0: float = 0.0) -> str:
        """One readable line: ``#12 +3.456s w3 ok append ds0 ids=[...] -> version 7``."""
        text = f"#{self.index} +{self.time - t0:.3f}s w{self.process} {self.type:<7} {self.op.describe()}"
        bits = []  # what a completion reported (an invocation reports nothing)
        if "version" in self.value:
            bits.append(f"version {self.value['version']}")
        if self.value.get("noop"):
            bits.append("matched nothing")
        if "error" in self.value:
            bits.append(str(self.value["error"])[:160])
        return text + (" -> " + "; ".join(bits) if bits else "")


@dataclass
class OpRecord:
    """An operation's invocation and (unless the run was cut short) its completion."""

    invoke: Event
    completion: Event | None

    @property
    def op(self) -> Planned:
        return self.invoke.op

    @property
    def outcome(self) -> str:
        return self.completion.type if self.completion is not None else "unknown"

    @property
    def start(self) -> float:
        return self.invoke.time

    @property
    def end(self) -> float:
        return self.completion.time if self.completion is not None else float("inf")

    @property
    def value(self) -> dict[str, Any]:
        return self.completion.value if self.completion is not None else {}

    @functools.cached_property
    def key(self) -> OpKey:
        return OpKey(self.op.writer, self.op.index)

    def events(self) -> list[Event]:
        return [self.invoke] + ([self.completion] if self.completion is not None else [])


class History:
    """Events in time order, indexed from 0."""

    def __init__(self, events: Iterable[Event] = (), t0: float = 0.0) -> None:
        ordered = sorted(events, key=lambda e: (e.time, e.index))
        self.events = [Event(i, e.time, e.process, e.type, e.op, e.value) for i, e in enumerate(ordered)]
        self.t0 = t0

    @classmethod
    def build(cls, raw: Iterable[tuple[float, int, str, Planned, dict[str, Any]]], t0: float = 0.0) -> History:
        """From ``(time, process, type, op, value)`` tuples in any order."""
        return cls((Event(i, t, p, ty, op, v) for i, (t, p, ty, op, v) in enumerate(raw)), t0)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def records(self) -> list[OpRecord]:
        """One record per invoked operation, in invocation order."""
        by_key: dict[OpKey, OpRecord] = {}
        for event in self.events:
            key = OpKey(event.op.writer, event.op.index)
            if event.type == "invoke":
                by_key[key] = OpRecord(event, None)
            elif key in by_key and by_key[key].completion is None:
                by_key[key].completion = event
        return list(by_key.values())

    def to_json(self) -> list[dict[str, Any]]:
        return [e.to_json(self.t0) for e in self.events]

    @classmethod
    def from_json(cls, data: list[dict[str, Any]]) -> History:
        return cls((Event(int(d["index"]), float(d["time"]), int(d["process"]), str(d["type"]),
                          Planned.from_json(d["op"]),
                          dict(d.get("value", {}))) for d in data), 0.0)

    def signature(self) -> dict[int, list[tuple[int, str, str]]]:
        """Per process, the operations it invoked as ``(plan index, kind, dataset)`` (``Planned.kind``): what a
        replay with the same seed must reproduce exactly (outcomes and timing may differ with the interleaving)."""
        out: dict[int, list[tuple[int, str, str]]] = {}
        for event in self.events:
            if event.type == "invoke":
                out.setdefault(event.process, []).append((event.op.index, event.op.kind, event.op.dataset))
        return out
