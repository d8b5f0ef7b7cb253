"""Child processes a test interrupts as a user would.

A shell starts a background job (``cmd &`` and ``nohup cmd &`` in a script, where job control is off) with
SIGINT ignored, and an ignored signal stays ignored across ``exec``: Python then installs no
KeyboardInterrupt handler, so a test that sends SIGINT to a lancespec it started would see it ignored and
the run go on to exit 0 or 1 instead of 130. A child that must receive Ctrl-C is started through
:func:`interruptible`, which gives it the default SIGINT disposition whatever the test process ignores.

Not ``preexec_fn``: that makes subprocess fork the test process itself, which has pylance's threads
loaded (pylance warns that it is not fork-safe); a small launcher resets the signal and ``exec``s the
command instead, keeping the process id, so ``send_signal`` reaches the command itself.
"""

from __future__ import annotations

import sys

_LAUNCHER = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
             "os.execvp(sys.argv[1], sys.argv[1:])")


def interruptible(argv: list[str]) -> list[str]:
    """``argv`` as a command line whose process starts with SIGINT at its default disposition (Python
    turns it into KeyboardInterrupt), whatever the parent inherited."""
    return [sys.executable, "-c", _LAUNCHER, *argv]
