"""How a chunk of one directory's data-file tails is read (``read_chunk``), by the run itself or by the helper process
that reads a share of a large batch beside it (``reference.store.local_tails``): this module is also that helper's
program, of the standard library alone, run by path as ``python -I -S tail_reader.py DIRECTORY_FD NAMES_FD LENGTH
CHUNK SYSCALL FLAGS RESOLVE``.

What the helper may open is what the run hands it, nothing else: the directory's descriptor (``DIRECTORY_FD``,
opened by the run as ``local._directory_fd`` opens it: no ``..``, no symbolic link on the way) and, in the file
``NAMES_FD``, the names of its files, each one plain path component (no ``/``, neither ``.`` nor ``..``, no NUL
byte), separated by NUL bytes. A name is opened only relative to that descriptor, with ``openat2`` and the resolve
flags the run gives (``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS``: the kernel walks one
component and follows no link) and its open flags (``O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC``: a FIFO is
opened without blocking, seen by ``fstat`` and never read). A device is not opened at all: its kind is looked up
first (``DEVICES``).

Protocol: the run writes chunk numbers (``TASK``, 4 bytes each) to the helper's standard input; for each, the
helper answers on its standard output with one frame: ``FRAME`` (chunk number, payload length), then the chunk's
``Columns`` as ``pack`` lays them out (names ``CHUNK * n`` to ``CHUNK * (n + 1)``). End of input: the helper exits 0.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import stat
import struct
import sys
from array import array

TYPE_CHECKING = False  # typing is not imported: the helper starts once a batch, and its imports are its start
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

#: The kinds of answer: the tail read; ``openat2`` failed (code: its errno); not a regular file (code: its
#: ``st_mode``); ``fstat`` or ``pread`` failed (code: its errno).
READ, OPEN_FAILED, NOT_REGULAR, READ_FAILED = 0, 1, 2, 3
#: The kinds of file that are never opened, only looked at (``fstatat``): opening a device runs its driver's open,
#: which may act (a watchdog starts counting, a tape rewinds, a modem line is raised) before ``fstat`` could refuse
#: it. A device node under a dataset's root is refused by its kind alone, as any other file that is not regular.
DEVICES = frozenset((stat.S_IFCHR, stat.S_IFBLK))
#: A frame's head: the chunk number, the payload's length in bytes.
FRAME = struct.Struct("<II")
#: A request: the chunk number.
TASK = struct.Struct("<I")


#: A chunk's answers: ``(kinds, codes, sizes, mtimes, tails)``, one entry a file in each list but ``tails``, which
#: holds the tails read (``READ``), in order. ``mtimes``: the float ``os.stat_result.st_mtime`` gives; sizes and
#: times 0 where nothing was read.
Columns = tuple[list[int], list[int], list[int], list[float], list[bytes]]


#: The array type codes of ``Columns``' lists as ``pack`` lays them out, each list after the other, then the tails'
#: lengths, then the tails.
_LAYOUT = (("B", 1), ("I", 4), ("q", 8), ("d", 8), ("I", 4))


def read_chunk(names: Sequence[bytes], directory_fd: int, length: int, open_at: Callable[..., int],
               how: Any, how_size: int, syscall_number: int) -> Columns:
    """The last ``length`` bytes of each file ``names`` names in ``directory_fd``: its kind looked up (a device is
    not opened, ``DEVICES``), ``open_at(syscall_number, directory_fd, name, how, how_size)`` (``openat2`` through
    ``ctypes``: no link followed, nothing above the directory), then ``fstat`` (what is not a regular file is not
    read), one ``pread``, ``close``."""
    kinds: list[int] = []
    codes: list[int] = []
    sizes: list[int] = []
    mtimes: list[float] = []
    tails: list[bytes] = []

    def failed(kind: int, code: int) -> None:
        kinds.append(kind)
        codes.append(code)
        sizes.append(0)
        mtimes.append(0.0)

    get_errno, fstat, pread, close, is_regular = ctypes.get_errno, os.fstat, os.pread, os.close, stat.S_ISREG
    lstat_at, file_type = os.stat, stat.S_IFMT
    for name in names:
        try:  # a device is never opened (``DEVICES``): its kind is looked up first, which opens nothing
            mode = lstat_at(name, dir_fd=directory_fd, follow_symlinks=False).st_mode
        except OSError:
            mode = 0  # the open says why
        if file_type(mode) in DEVICES:
            failed(NOT_REGULAR, mode)
            continue
        fd = open_at(syscall_number, directory_fd, name, how, how_size)
        if fd < 0:
            failed(OPEN_FAILED, get_errno())
            continue
        try:
            st = fstat(fd)
            if not is_regular(st.st_mode):
                failed(NOT_REGULAR, st.st_mode)
                continue
            size = st.st_size
            tails.append(pread(fd, min(length, size), max(0, size - length)))
        except OSError as exc:
            failed(READ_FAILED, exc.errno or 0)
            continue
        finally:
            close(fd)
        kinds.append(READ)
        codes.append(0)
        sizes.append(size)
        mtimes.append(st.st_mtime)
    return kinds, codes, sizes, mtimes, tails


def pack(columns: Columns) -> bytes:
    """``columns`` as bytes (``unpack`` reads them back)."""
    kinds, codes, sizes, mtimes, tails = columns
    read = iter(tails)
    lengths = [len(next(read)) if kind == READ else 0 for kind in kinds]  # one a file, as every other column
    columns_in_order: tuple[list[Any], ...] = (kinds, codes, sizes, mtimes, lengths)
    parts = [array(code, values).tobytes() for (code, _), values in zip(_LAYOUT, columns_in_order, strict=True)]
    return b"".join(parts) + b"".join(tails)


def unpack(payload: bytes, count: int) -> Columns | None:
    """The ``Columns`` of ``count`` files that ``pack`` laid out in ``payload``; None when it does not hold them
    exactly."""
    values: list[list[Any]] = []
    at = 0
    for code, size in _LAYOUT:
        column = array(code)
        if column.itemsize != size or at + size * count > len(payload):
            return None
        column.frombytes(payload[at:at + size * count])
        values.append(column.tolist())
        at += size * count
    kinds, codes, sizes, mtimes, lengths = values
    if sum(lengths) != len(payload) - at or any(n and k != READ for k, n in zip(kinds, lengths, strict=True)):
        return None
    ends = list(itertools.accumulate((n for k, n in zip(kinds, lengths, strict=True) if k == READ), initial=at))
    tails = list(map(payload.__getitem__, map(slice, ends, ends[1:])))
    return kinds, codes, sizes, mtimes, tails


class OpenHow(ctypes.Structure):
    """openat2's ``struct open_how`` (flags, mode, resolve), here and in ``local`` alike."""

    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def read_exactly(fd: int, n: int) -> bytes:
    """``n`` bytes from ``fd``, or fewer at its end."""
    parts, got = [], 0
    while got < n:
        part = os.read(fd, n - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def serve(directory_fd: int, names_fd: int, length: int, chunk: int, syscall_number: int, flags: int,
          resolve: int) -> None:
    """Answer chunk requests from standard input until it ends (the module's docstring says how)."""
    size = os.fstat(names_fd).st_size
    names = read_exactly(names_fd, size).split(b"\0")
    os.close(names_fd)
    how = OpenHow(flags, 0, resolve)
    open_at = ctypes.CDLL(None, use_errno=True).syscall
    while True:
        task = read_exactly(0, TASK.size)
        if len(task) < TASK.size:
            return
        (number,) = TASK.unpack(task)
        columns = read_chunk(names[number * chunk:(number + 1) * chunk], directory_fd, length, open_at,
                             ctypes.byref(how), ctypes.sizeof(how), syscall_number)
        payload = pack(columns)
        _write_all(1, FRAME.pack(number, len(payload)) + payload)


def main(argv: list[str]) -> int:
    import gc

    gc.disable()  # nothing it makes outlives a chunk: no cycle to collect
    directory_fd, names_fd, length, chunk, syscall_number, flags, resolve = (int(a) for a in argv)
    try:
        serve(directory_fd, names_fd, length, chunk, syscall_number, flags, resolve)
    except BrokenPipeError:  # the run stopped listening: nothing to say
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
