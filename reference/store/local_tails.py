"""A helper process that reads a share of a large batch of one local directory's data-file tails on the second core
(``LocalStore.get_tails``, issue 33), and how the run shares the batch's chunks with it (``read_shared``). Threads
were tried and lost: the interpreter lock changes hands at every system call (two threads took 30.7 s where one
took 22.9 s); a process has its own interpreter.

Sharing: the helper (``tail_reader`` run as a program) is asked for chunks from the end of the batch, at most
``AHEAD`` at a time, while the run reads chunks from the front and takes each answer the helper has ready between
two of its own, so that each process reads as much as its core allows (a loaded machine, a slow start). The
helper's answers are the ``Columns`` the run's own reads give (``tail_reader.read_chunk``, the same function), so
every file's answer is the same whoever read it: the same tail and size, the same refusal, the same ``fstat`` time
kept for the run's listing.

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
import fcntl
import os
import select
import subprocess
import sys
from collections import deque
from collections.abc import Callable

from . import tail_reader

#: A chunk's files; chunks asked of the helper at once; the room asked for in the pipe of its answers (a chunk of
#: small files answers about 240 bytes a file: ``AHEAD`` answers fit, so the helper never waits for the run to read).
CHUNK = 1024
AHEAD = 4
PIPE_BYTES = 1 << 20
#: Seconds the run waits for the helper, with nothing else to do, before reading what it asked of it itself.
PATIENCE = 30.0
#: The helper's program, run by path with the run's interpreter (``python -I -S``: no site, no environment).
PROGRAM = tail_reader.__file__
#: False once a helper failed in this process (it could not start, died, answered garbage or too late): from then
#: on the run reads alone, as it does where no helper can start (an interpreter embedded in another program).
helpers_work = True


def read_shared(chunks: int, helper: Helper | None, announce: Callable[[int], None], read_here: Callable[[int], None],
                take: Callable[[int, tail_reader.Columns], bool]) -> None:
    """Have each of ``chunks`` chunks read once: by the run (``read_here``) or by ``helper``, whose answers ``take``
    keeps (False: the answer is not one, and the run reads what the helper was asked); ``announce`` is called for
    each chunk before either process reads it. The helper is ended when this returns."""
    global helpers_work
    mine = deque(range(chunks))  # not asked of the helper: the run reads from the front, the helper the back
    asked: deque[int] = deque()  # asked of the helper, in the order it answers
    taken_back: set[int] = set()  # asked, then read by the run while it waited (the helper's answer is dropped)
    try:
        while mine or asked:
            # asked from the back, as long as the run keeps more to read than the helper (both end together)
            while helper is not None and helper.asking and len(asked) < AHEAD and len(mine) > len(asked) + 1:
                number = mine.pop()
                announce(number)
                if helper.ask(number):
                    asked.append(number)
                    continue
                mine.append(number)  # it stopped listening: it answers what it was asked, if it can, and no more
                helper.asking = False
                break
            if helper is not None and asked and not mine and not helper.ready():
                waiting = [n for n in asked if n not in taken_back]
                if len(waiting) > 1:  # nothing else to read: the last chunk asked is read here, not waited for
                    taken_back.add(waiting[-1])
                    read_here(waiting[-1])
                    continue
                if not waiting:  # all it was asked is read: its answers are not waited for
                    helper.stop(failed=True)
                    helper = None
                    asked.clear()
                    continue
            if helper is not None and asked and (not mine or helper.ready()):
                number = asked[0]
                columns = helper.answer(number, 0 if mine else PATIENCE)
                if columns is not None and (number in taken_back or take(number, columns)):
                    asked.popleft()
                    continue
                helper.stop(failed=True)  # every chunk it was asked and did not answer is read here
                helper = None
                helpers_work = False
                mine.extendleft(reversed([n for n in asked if n not in taken_back]))
                asked.clear()
                continue
            number = mine.popleft()
            announce(number)
            read_here(number)
    finally:
        if helper is not None:
            helper.stop(failed=not helper.asking)


class Helper:
    """A running ``tail_reader``: asked for chunks, answering them in the order asked."""

    def __init__(self, process: subprocess.Popen[bytes], files: int) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._files = files
        self.asking = True  # False once a request could not be written
        self._requests, self._answers = process.stdin.fileno(), process.stdout.fileno()
        self._poll = select.poll()
        self._poll.register(self._answers, select.POLLIN)
        with contextlib.suppress(OSError, AttributeError):  # room for AHEAD answers: the helper writes on meanwhile
            fcntl.fcntl(self._answers, fcntl.F_SETPIPE_SZ, PIPE_BYTES)

    @classmethod
    def start(cls, directory_fd: int, names: bytes, files: int, length: int, opening: tuple[int, int, int]
              ) -> Helper | None:
        """A helper reading the last ``length`` bytes of files in ``directory_fd``: the ``files`` files ``names``
        names (NUL-separated), each opened as ``opening`` says (``openat2``'s system call number, open flags and
        resolve flags); None where none can be started (no interpreter to run, no ``memfd_create``, a spawn
        refused)."""
        global helpers_work
        if (not helpers_work or not os.path.basename(sys.executable or "").startswith("python")
                or not hasattr(os, "memfd_create")):
            return None  # no interpreter of the run's to start (an embedding program's own binary is not one)
        try:
            names_fd = os.memfd_create("lancespec-tail-names", os.MFD_CLOEXEC)
        except OSError:
            return None
        if min(directory_fd, names_fd) <= 2:  # a process with a standard stream closed: the helper's own would
            os.close(names_fd)  # take the number, and it would read in a pipe, not in the directory
            return None
        try:
            view = memoryview(names)
            while view:
                view = view[os.write(names_fd, view):]
            os.lseek(names_fd, 0, os.SEEK_SET)
            arguments = (directory_fd, names_fd, length, CHUNK, *opening)
            process = subprocess.Popen([sys.executable, "-I", "-S", PROGRAM, *map(str, arguments)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       pass_fds=(directory_fd, names_fd), bufsize=0)
        except (OSError, ValueError):
            helpers_work = False
            return None
        finally:
            os.close(names_fd)
        return cls(process, files)

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

    def answer(self, number: int, patience: float) -> tail_reader.Columns | None:
        """The answer to chunk ``number``, waited for at most ``patience`` seconds to begin and ``PATIENCE``
        between two of its pieces; None when it does not come whole and well-formed."""
        if not self._poll.poll(int(patience * 1000)):
            return None
        head = self._read(tail_reader.FRAME.size)
        if head is None:
            return None
        answered, size = tail_reader.FRAME.unpack(head)
        payload = self._read(size) if answered == number else None
        count = min(CHUNK, self._files - number * CHUNK)
        return tail_reader.unpack(payload, count) if payload is not None and count > 0 else None

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
