"""The ``lancespec`` command line, one module per command family (``inspect``, ``certify``, ``spark``,
``fixtures``, ``scenarios``, ``simulate``; ``catalogue`` and ``fuzz`` are the developer tools run with
``python -m``), the shared options in ``options`` and the dispatch with its exit codes in ``main``.

Loading this package loads little (``main`` imports the command families inside its handler of Ctrl-C, so
an interrupt while pyarrow and the rest load is one line and exit 130, as later).

Library code (conformance/, reference/, simulator/) never imports this package (tests/unit/test_layering.py).
"""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
