"""CPU seconds per process group, read from ``/proc``: where a benchmark's cores go.

A benchmark run spreads over several processes: the embedded S3 server, the fault proxy, the benchmark's
own process (plain certify, pylance, or Spark's driver Python), and with Spark the driver JVM and the
Python workers it forks. ``CpuMeter`` names the groups by their root process ids; ``sample()`` reads each
group's CPU seconds (user + system) and the difference of two samples is what each group spent between
them. Rules:

* a group is its root and every live descendant of the root; a descendant's own time counts, and so does
  the time of its children it has reaped (``cutime``/``cstime``), so a worker that exits between two samples
  still counts once its parent reaped it (PySpark's daemon reaps its workers at once);
* so does the root's (``reaped``), except for the benchmark's own process, which reaps its memory probes;
* a descendant that is the root of another group belongs to that group only;
* a group without ``tree`` is its root's own threads only: the benchmark process, whose children are the
  other groups.

Linux only (``/proc``); elsewhere every figure is 0.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CpuMeter", "Group", "find_child"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(parent pid, own CPU seconds, reaped children's CPU seconds) of ``pid``; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return int(fields[1]), (utime + stime) / _TICK, (cutime + cstime) / _TICK


def _processes() -> dict[int, tuple[int, float, float]]:
    """Every visible process: pid -> (parent pid, own seconds, reaped children's seconds)."""
    table = {}
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if name.isdigit() and (stat := _stat(int(name))) is not None:
            table[int(name)] = stat
    return table


def find_child(parent: int, word: str) -> int | None:
    """The first descendant of ``parent`` whose command line contains ``word`` (the JVM a PySpark driver
    launched, for example), or None."""
    table = _processes()
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _, _) in table.items():
        children[ppid].append(pid)
    todo = list(children[parent])
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if word.encode() in fh.read():
                    return pid
        except OSError:
            pass
        todo.extend(children[pid])
    return None


@dataclass(frozen=True)
class Group:
    """A process group: its root pid, whether its descendants count (``tree``) and whether the children the
    root reaped count (``reaped``)."""

    root: int
    tree: bool = True
    reaped: bool = True


class CpuMeter:
    """CPU seconds of named process groups (``groups``: name -> Group), sampled on demand."""

    def __init__(self, groups: Mapping[str, Group]) -> None:
        self.groups = dict(groups)

    def sample(self) -> dict[str, float]:
        """Each group's CPU seconds so far (a group whose root is gone reads 0)."""
        table = _processes()
        children: dict[int, list[int]] = defaultdict(list)
        for pid, (ppid, _, _) in table.items():
            children[ppid].append(pid)
        roots = {g.root for g in self.groups.values()}
        out: dict[str, float] = {}
        for name, group in self.groups.items():
            if group.root not in table:
                out[name] = 0.0
                continue
            _, total, reaped = table[group.root]
            total += reaped if group.reaped else 0.0
            todo = list(children[group.root]) if group.tree else []
            while todo:
                pid = todo.pop()
                if pid in roots:
                    continue
                _, own, theirs = table[pid]
                total += own + theirs
                todo.extend(children[pid])
            out[name] = total
        return out

    @staticmethod
    def spent(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
        """What each group spent between two samples."""
        return {name: after[name] - before.get(name, 0.0) for name in after}
