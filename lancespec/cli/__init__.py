"""The ``lancespec`` command line, one module per command family (``inspect``, ``certify``, ``spark``,
``fixtures``, ``scenarios``, ``simulate``; ``catalogue`` and ``fuzz`` are the developer tools run with
``python -m``), the shared options in ``options`` and the dispatch with its exit codes in ``main``.

This package imports nothing when loaded: ``main`` imports the commands inside the handler of Ctrl-C, so an
interrupt in the first second (while pyarrow and the rest load) is one line and exit 130, as later.

Library code (conformance/, reference/, simulator/) never imports this package (tests/unit/test_layering.py).
"""

from __future__ import annotations

import sys  # and typing alone (loaded already): what this package imports loads before any handler of Ctrl-C
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from argparse import ArgumentParser
    from collections.abc import Callable, Sequence

#: The exit status of an interrupted command (``options.EXIT_INTERRUPTED``; repeated here, not imported).
_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """The ``lancespec`` command (``main.main``), its imports inside the handler of Ctrl-C."""
    try:
        from .main import main as run
    except KeyboardInterrupt:
        print("lancespec: interrupted", file=sys.stderr)
        return _INTERRUPTED
    return run(argv)


def __getattr__(name: str) -> Callable[[], ArgumentParser]:
    if name == "build_parser":
        from .main import build_parser

        return build_parser
    raise AttributeError(name)


__all__ = ["build_parser", "main"]
