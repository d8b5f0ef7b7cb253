"""Device nodes in a dataset, and a watch that tells whether anything opened them (Linux ``inotify``'s
``IN_OPEN``, which the kernel raises for every open of a name in a watched directory, by any process, and not for
``stat`` or an ``O_PATH`` open): the second source of truth for "a device is never opened" (docs/security.md)."""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

_IN_OPEN = 0x20
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows


def make_device(path: Path) -> None:
    """A character device at ``path`` (major 1, minor 3: the kernel's null device), or the test skipped with the
    reason when this process may not make device nodes (no ``CAP_MKNOD``)."""
    try:
        os.mknod(path, 0o644 | 0o020000, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc}): the device probes need CAP_MKNOD")


class OpenWatch:
    """The names opened in some directories since the watch began (``opened``)."""

    def __init__(self, directories: list[Path]) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd < 0:
            pytest.skip(f"inotify is not available here (errno {ctypes.get_errno()})")
        self._directories: dict[int, Path] = {}
        for directory in directories:
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(directory), _IN_OPEN)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"cannot watch {directory}")
            self._directories[wd] = directory
        self._seen: set[Path] = set()

    def opened(self) -> set[Path]:
        """Every path opened in a watched directory so far."""
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return set(self._seen)
            at = 0
            while at < len(data):
                wd, _, _, length = _EVENT.unpack_from(data, at)
                name = data[at + _EVENT.size:at + _EVENT.size + length].rstrip(b"\0")
                if wd in self._directories and name:
                    self._seen.add(self._directories[wd] / os.fsdecode(name))
                at += _EVENT.size + length

    def close(self) -> None:
        os.close(self._fd)


@contextmanager
def watching_opens(*directories: Path) -> Iterator[OpenWatch]:
    """An ``OpenWatch`` of ``directories`` for the block."""
    watch = OpenWatch(list(directories))
    try:
        yield watch
    finally:
        watch.close()
