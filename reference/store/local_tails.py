"""The tails of many files of one local directory (``LocalStore.get_tails``: a million-fragment version's data files),
read in chunks of ``CHUNK`` files (``tail_reader.read_chunk``: per file ``openat2`` relative to the directory, with
``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS``, then ``fstat``, one ``pread``, ``close``), the
answers made a chunk at a time, and, for a large batch, a share of the chunks read by a helper process on the
second core (issue 33). Threads were tried and lost: the interpreter lock changes hands at every system call (two
threads took 30.7 s where one took 22.9 s); a process has its own interpreter.

Sharing: the helper (``tail_reader`` run as a program) is asked for chunks from the end of the batch, at most
``AHEAD`` at a time, while the run reads chunks from the front and takes each answer the helper has ready between
two of its own, so that each process reads as much as its core allows (a loaded machine, a slow start). The
helper's answers are the ``Columns`` the run's own reads give, so every file's answer is the same whoever read it:
the same tail and size, the same refusal, the same ``fstat`` time kept for the run's listing.

Containment (issue 32): the helper opens nothing the run did not hand it: names of one path component in a
directory descriptor the run opened as ``local._directory_fd`` opens one, each with the same ``openat2`` resolve
flags (no link at any component, nothing above the directory) and open flags (no blocking: a FIFO is seen by
``fstat`` and never read). Before a chunk is asked of the helper, the run announces each of its paths with
``sys.audit("open", ...)``, as it announces its own opens: an audit hook in the run (the fuzzer's) sees every path
either process opens.

No file is ever lost: a helper that cannot start, dies, answers something malformed, or answers nothing for
``PATIENCE`` seconds while the run waits for it is ended, and every chunk asked of it and not answered is read by
the run itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import select
import subprocess
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from itertools import repeat
from typing import Any, TypeVar, cast

from ..errors import StorageError
from . import tail_reader
from .base import ObjectInfo, Tail
from .local import (
    _FS_ENCODING,
    _FS_ERRORS,
    _HOW_SIZE,
    _READ_BENEATH,
    _SYS_OPENAT2,
    _libc,
    _refuse_unless_regular,
    _storage_error,
)

#: A chunk's files; chunks asked of the helper at once; the room asked for in the pipe of its answers (a chunk of
#: small files answers about 240 bytes a file: ``AHEAD`` answers fit, so the helper never waits for the run to read).
CHUNK = 1024
AHEAD = 4
PIPE_BYTES = 1 << 20
#: Seconds the run waits for the helper, with nothing else to do, before reading what it asked of it itself.
PATIENCE = 30.0
#: The helper's program, run by path with the run's interpreter (``python -I -S``: no site, no environment).
PROGRAM = tail_reader.__file__

#: A batch's file: its position in the batch, its name in the directory, its path.
File = tuple[int, str, str]
T = TypeVar("T")


def read_tails(directory_fd: int, files: Sequence[File], uris: Sequence[str], length: int,
               stats: dict[str, ObjectInfo] | None, found: list[Tail | StorageError | None], share: bool) -> bool:
    """Read the tail of each of ``files`` (all in the directory ``directory_fd``, opened by ``_directory_fd``) into
    ``found`` at its position, as ``LocalStore.get_tail`` would answer it, and keep in ``stats`` what the ``fstat``
    of each regular file read found; ``share``: a helper process reads a share (the module's docstring). False,
    nothing read, when a name cannot be encoded as the system's file names are (the caller reads each alone)."""
    try:
        blob = "\0".join(name for _, name, _ in files).encode(_FS_ENCODING, _FS_ERRORS)
    except UnicodeEncodeError:
        return False
    names = blob.split(b"\0")
    chunks = [files[at:at + CHUNK] for at in range(0, len(files), CHUNK)]
    helper = _Helper.start(directory_fd, blob, length) if share else None
    mine = deque(range(len(chunks)))  # not asked of the helper: the run reads from the front, the helper the back
    asked: deque[int] = deque()  # asked of the helper, in the order it answers
    try:
        while mine or asked:
            # asked from the back, as long as the run keeps more to read than the helper (both end together)
            while helper is not None and helper.asking and len(asked) < AHEAD and len(mine) > len(asked) + 1:
                number = mine.pop()
                _announce(chunks[number])
                if helper.ask(number):
                    asked.append(number)
                    continue
                mine.append(number)  # it stopped listening: it answers what it was asked, if it can, and no more
                helper.asking = False
                break
            if helper is not None and asked and (not mine or helper.ready()):
                number = asked[0]
                columns = helper.answer(number, len(chunks[number]), 0 if mine else PATIENCE)
                if columns is not None and _take(chunks[number], columns, uris, stats, found):
                    asked.popleft()
                    continue
                helper.stop(failed=True)  # every chunk it was asked and did not answer is read here
                helper = None
                mine.extendleft(reversed(asked))
                asked.clear()
                continue
            number = mine.popleft()
            _announce(chunks[number])
            columns = tail_reader.read_chunk(names[number * CHUNK:(number + 1) * CHUNK], directory_fd, length,
                                             _syscall(), ctypes.byref(_READ_BENEATH), _HOW_SIZE, _OPENAT2)
            if not _take(chunks[number], columns, uris, stats, found):
                raise AssertionError("the run's own reads answered a file twice or not at all")
    finally:
        if helper is not None:
            helper.stop(failed=not helper.asking)
    return True


_OPENAT2 = _SYS_OPENAT2 or 0


def _syscall() -> Any:
    assert _libc is not None  # a directory descriptor is only opened where openat2 works
    return _libc.syscall


def _announce(chunk: Sequence[File]) -> None:
    """What ``os.open`` announces of each file of ``chunk``, before any process opens it (audit hooks)."""
    for _, _, path in chunk:
        sys.audit("open", path, None, _READ_BENEATH.flags)


def _made(kind: type[T], rows: Iterable[tuple[Any, ...]]) -> Iterator[T]:
    """Named tuples of ``kind`` from ``rows`` of their fields, made without a Python frame each."""
    return cast("Iterator[T]", map(tuple.__new__, repeat(kind), rows))


def _take(chunk: Sequence[File], columns: tail_reader.Columns, uris: Sequence[str],
          stats: dict[str, ObjectInfo] | None, found: list[Tail | StorageError | None]) -> bool:
    """Put in ``found`` (and ``stats``) the answers ``columns`` gives for ``chunk``: a ``Tail``, or the error
    ``get_tail`` raises for the file; False, nothing put, when ``columns`` does not answer each file once."""
    kinds, codes, sizes, mtimes, tails = columns
    count = len(chunk)
    if len(kinds) != count or len(sizes) != count or len(mtimes) != count or len(codes) != count:
        return False
    if kinds.count(tail_reader.READ) == count:  # all read: the answers made in a few passes
        if len(tails) != count:
            return False
        first, last = chunk[0][0], chunk[-1][0]
        made = list(_made(Tail, zip(tails, sizes, strict=True)))
        if last - first + 1 == count:  # positions in a row (a batch of one directory): put by one slice
            found[first:last + 1] = made
            chunk_uris = uris[first:last + 1]
        else:
            for (at, _, _), tail in zip(chunk, made, strict=True):
                found[at] = tail
            chunk_uris = [uris[at] for at, _, _ in chunk]
        if stats is not None:
            times = map(datetime.fromtimestamp, mtimes, repeat(UTC))
            stats.update(zip(chunk_uris, _made(ObjectInfo, zip(chunk_uris, sizes, times, repeat(None))), strict=True))
        return True
    answers: list[Tail | StorageError] = []
    read = iter(tails)
    kept: list[ObjectInfo] = []
    for (at, _, path), kind, code, size, mtime in zip(chunk, kinds, codes, sizes, mtimes, strict=True):
        uri = uris[at]
        if kind == tail_reader.READ:
            data = next(read, None)
            if data is None:
                return False
            answers.append(Tail(data, size))
            kept.append(ObjectInfo(uri, size, datetime.fromtimestamp(mtime, tz=UTC)))
        elif kind == tail_reader.OPEN_FAILED:
            answers.append(_storage_error(OSError(code, os.strerror(code), path), uri))
        elif kind == tail_reader.READ_FAILED:
            answers.append(_storage_error(OSError(code, os.strerror(code)), uri))
        elif kind == tail_reader.NOT_REGULAR:
            try:
                _refuse_unless_regular(code, uri)
            except StorageError as exc:
                answers.append(exc)
            else:
                return False  # a regular file said not to be one
        else:
            return False
    if next(read, None) is not None:
        return False
    for (at, _, _), answer in zip(chunk, answers, strict=True):
        found[at] = answer
    if stats is not None:
        stats.update((info.uri, info) for info in kept)
    return True


class _Helper:
    """A running ``tail_reader``: asked for chunks, answering them in the order asked."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.asking = True  # False once a request could not be written
        self._requests, self._answers = process.stdin.fileno(), process.stdout.fileno()
        self._poll = select.poll()
        self._poll.register(self._answers, select.POLLIN)
        with contextlib.suppress(OSError, AttributeError):  # room for AHEAD answers: the helper writes on meanwhile
            fcntl.fcntl(self._answers, fcntl.F_SETPIPE_SZ, PIPE_BYTES)

    @classmethod
    def start(cls, directory_fd: int, names: bytes, length: int) -> _Helper | None:
        """A helper reading in ``directory_fd`` the files ``names`` names (NUL-separated); None where none can be
        started (no interpreter to run, no ``memfd_create``, a spawn refused)."""
        if not sys.executable or not hasattr(os, "memfd_create"):
            return None
        try:
            names_fd = os.memfd_create("lancespec-tail-names", os.MFD_CLOEXEC)
        except OSError:
            return None
        try:
            view = memoryview(names)
            while view:
                view = view[os.write(names_fd, view):]
            os.lseek(names_fd, 0, os.SEEK_SET)
            arguments = (directory_fd, names_fd, length, CHUNK, _OPENAT2, _READ_BENEATH.flags, _READ_BENEATH.resolve)
            process = subprocess.Popen([sys.executable, "-I", "-S", PROGRAM, *map(str, arguments)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       pass_fds=(directory_fd, names_fd), bufsize=0)
        except (OSError, ValueError):
            return None
        finally:
            os.close(names_fd)
        return cls(process)

    def ask(self, number: int) -> bool:
        """Ask for chunk ``number``; False when the helper is gone."""
        try:
            os.write(self._requests, tail_reader.TASK.pack(number))
        except OSError:
            return False
        return True

    def ready(self) -> bool:
        """Whether an answer (or the helper's end) is there to read now."""
        return bool(self._poll.poll(0))

    def answer(self, number: int, count: int, patience: float) -> tail_reader.Columns | None:
        """The answer to chunk ``number`` (of ``count`` files), waited for at most ``patience`` seconds to begin
        and ``PATIENCE`` between two of its pieces; None when it does not come whole and well-formed."""
        if not self._poll.poll(int(patience * 1000)):
            return None
        head = self._read(tail_reader.FRAME.size)
        if head is None:
            return None
        answered, size = tail_reader.FRAME.unpack(head)
        payload = self._read(size) if answered == number else None
        return tail_reader.unpack(payload, count) if payload is not None else None

    def _read(self, n: int) -> bytes | None:
        """``n`` bytes of the helper's answers; None at their end, or when none come for ``PATIENCE`` seconds."""
        parts, got = [], 0
        while got < n:
            if not self._poll.poll(int(PATIENCE * 1000)):
                return None
            try:
                part = os.read(self._answers, n - got)
            except OSError:
                return None
            if not part:
                return None
            parts.append(part)
            got += len(part)
        return b"".join(parts)

    def stop(self, *, failed: bool = False) -> None:
        """End the helper: its input closed (it exits), killed if it has not within a second or if it ``failed``;
        reaped."""
        assert self.process.stdin is not None and self.process.stdout is not None
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            self.process.wait(timeout=0 if failed else 1.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        finally:
            self.process.stdout.close()
