"""The seeded request scheduler of a deterministic run (``lancespec simulate --deterministic``).

The fault proxy holds every request a writer sends and lets one through at a time, in an order drawn from
the seed, so that a run is a function of its seed alone:

* A request is released only when no other is in service and **every live writer has a request pending**:
  every writer is then blocked on the proxy, nothing runs but the proxy, and which writer goes next is the
  seeded generator's choice (``random.Random(f"{seed}/schedule")``), not the operating system's. A writer is
  live from the start of the run until the controller sees it finish (``retire``).
* Since one request is in service at a time and a writer sends its next request only after the answer to its
  last one, the whole run is sequential: every writer's n-th request of a class is the same request in every
  run (the fault schedule's ``(client, class, n)`` names one request), and the real-time order of every event
  (invocations, completions, arrivals, forwards) is the same in every run.
* A ``latency`` or ``pause`` fault holds its request for a number of *steps* (other releases) instead of
  seconds: the request arrives, others overtake it, it lands late, as in a run with wall-clock delays.
* ``preemptions``: at most that many times does the scheduler switch away from a writer that could go on
  (CHESS's preemption bound); None leaves every choice to the generator. Shrinking lowers it: a schedule with
  fewer preemptions is a simpler interleaving.

Two things can break the sequence, and both are counted (``timeouts``), so a report says whether its run
is reproducible: a live writer that sends nothing for ``wait_s`` seconds (the scheduler then releases what is
pending), and a writer with several requests in flight at once (pylance's concurrent reads): the scheduler
takes a writer's requests in the order they arrived, which its threads decide.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Scheduler", "Ticket"]

WAIT_S = 10.0
"""How long the scheduler waits for a live writer that has no request pending before it releases the others'
(counted in ``timeouts``: the run may not repeat exactly)."""


@dataclass
class Ticket:
    """One held request: ``client``'s ``seq``-th; eligible once ``hold`` more steps have passed."""

    client: int
    seq: int
    hold: int
    released: threading.Event = field(default_factory=threading.Event)
    cancelled: bool = False
    """Released by ``stop``, not chosen: the run is over, the request must not reach the endpoint."""


class Scheduler:
    """Release held requests one at a time, in an order drawn from ``seed`` (module docstring).

    ``clients``: the scheduled clients (the writers); any other client's requests pass unscheduled, and so does
    every request before ``activate`` (the writers' start-up) and after ``stop``.
    """

    def __init__(self, seed: int, clients: Iterable[int], *, preemptions: int | None = None,
                 wait_s: float = WAIT_S) -> None:
        self.clients = frozenset(clients)
        self.preemptions = preemptions
        self.wait_s = wait_s
        self.order: list[int] = []
        """The client of every released request, in release order: the schedule."""
        self.timeouts = 0
        self.preempted = 0
        self.first_release = float("inf")
        """When the first request was released (``time.monotonic``): before it every writer runs at once."""
        self._rng = random.Random(f"{seed}/schedule")
        self._live = set(self.clients)
        self._pending: list[Ticket] = []
        self._seq: dict[int, int] = {}
        self._busy = False
        self._active = False
        self._stopped = False
        self._current: int | None = None
        self._changed = time.monotonic()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------------------

    def activate(self) -> None:
        """Start scheduling (every writer is ready and waits for the start)."""
        with self._cond:
            if self._active or self._stopped:
                return
            self._active = True
            self._changed = time.monotonic()
        self._thread = threading.Thread(target=self._dispatch, name="sim-scheduler", daemon=True)
        self._thread.start()

    def retire(self, client: int) -> None:
        """``client`` finished (or died): no longer waited for."""
        with self._cond:
            self._live.discard(client)
            self._changed = time.monotonic()
            self._cond.notify_all()

    def stop(self) -> None:
        """Schedule nothing more (the run is over or being torn down): every request still held is released as
        ``cancelled`` (the proxy drops it), and later ones pass unscheduled."""
        with self._cond:
            self._stopped = True
            for ticket in self._pending:
                ticket.cancelled = True
                ticket.released.set()
            self._pending.clear()
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    @property
    def held(self) -> int:
        """How many requests are held now."""
        with self._cond:
            return len(self._pending)

    # --- one request ----------------------------------------------------------------------------------

    def enter(self, client: int, hold: int = 0) -> Ticket | None:
        """Hold ``client``'s request until the scheduler releases it; the ticket to ``leave`` with once it is
        answered (None: not scheduled, nothing to leave)."""
        with self._cond:
            if not self._active or self._stopped or client not in self.clients:
                return None
            seq = self._seq.get(client, 0)
            self._seq[client] = seq + 1
            ticket = Ticket(client, seq, max(0, hold))
            self._pending.append(ticket)
            self._changed = time.monotonic()
            self._cond.notify_all()
        ticket.released.wait()
        return ticket

    def leave(self, ticket: Ticket | None) -> None:
        """The released request was answered (or failed): the next may go."""
        if ticket is None:
            return
        with self._cond:
            self._busy = False
            self._changed = time.monotonic()
            self._cond.notify_all()

    # --- the choice -----------------------------------------------------------------------------------

    def _ready(self) -> bool:
        """Whether every live client has a request pending (the point at which nothing else runs)."""
        waiting = {t.client for t in self._pending}
        return bool(self._pending) and self._live <= waiting

    def _dispatch(self) -> None:
        with self._cond:
            while not self._stopped:
                if self._busy or not self._pending:
                    self._cond.wait(timeout=0.5)
                    continue
                if not self._ready():
                    left = self._changed + self.wait_s - time.monotonic()
                    if left > 0:
                        self._cond.wait(timeout=left)
                        continue
                    self.timeouts += 1  # a live writer sent nothing for wait_s: go on without it
                ticket = self._choose()
                self._pending.remove(ticket)
                self._busy = True
                if not self.order:
                    self.first_release = time.monotonic()
                self.order.append(ticket.client)
                ticket.released.set()

    def _choose(self) -> Ticket:
        """The next request: a client drawn from the seed among those with an eligible request (none held),
        then that client's oldest one; every other pending request's hold counts one step down."""
        least = min(t.hold for t in self._pending)
        if least > 0:  # every pending request is held: time passes until the first is due
            for t in self._pending:
                t.hold -= least
        eligible = sorted({t.client for t in self._pending if t.hold == 0})
        current = self._current
        if self.preemptions is not None and current in eligible and self.preempted >= self.preemptions:
            client = current
        else:
            client = self._rng.choice(eligible)
            if current in eligible and client != current:
                self.preempted += 1
        self._current = client
        ticket = min((t for t in self._pending if t.client == client and t.hold == 0), key=lambda t: t.seq)
        for t in self._pending:
            if t is not ticket and t.hold > 0:
                t.hold -= 1
        return ticket
