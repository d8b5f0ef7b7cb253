"""The files a command writes where the user asked (``--output``, ``--write-baseline``, ``--graph``): written
whole or not at all, and a destination that cannot be written is the command line's mistake (exit 2, one
line naming it), never lancespec's bug (before 2026-11-28 a ``--write-baseline`` or ``--graph`` naming a
directory, or a folder that does not exist, ended in exit 3: an outside review, docs/security.md)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import IO

from reference.errors import StorageError
from reference.printable import Rendered


def write_rendered(stream: IO[str], text: Rendered) -> None:
    """Write a rendered report to an open ``stream``."""
    if isinstance(text, str):
        stream.write(text)
    else:
        stream.writelines(text)


def write_text(path: str, text: Rendered, what: str = "the report") -> None:
    """Write ``text`` to ``path`` whole or not at all: into a temporary file beside it, renamed over it once
    complete, so that a run interrupted or failing while it writes leaves what was there (a JSON report of a
    million files takes seconds to write). A link is written through, to the file it names; a destination
    that is no regular file (``/dev/stdout``, a FIFO the user reads) is written directly. A file that cannot
    be written is a StorageError naming it and ``what`` it was to hold."""
    try:
        target = os.path.realpath(path)
        try:
            mode = os.stat(target).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            with open(target, "w", encoding="utf-8") as fh:
                write_rendered(fh, text)
            return
        _replace_whole(target, text, stat.S_IMODE(mode) if mode is not None else _default_mode())
    except OSError as exc:
        raise StorageError(f"cannot write {what}: {exc.strerror or exc}", path) from exc


def _replace_whole(target: str, text: Rendered, mode: int) -> None:
    fd, temporary = tempfile.mkstemp(prefix=".lancespec-", suffix=".part", dir=os.path.dirname(target) or ".")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            write_rendered(fh, text)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _default_mode() -> int:
    """What ``open(path, "w")`` would give a new file: 0o666 less the process's umask."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask
