"""Run every benchmark, lancespec against pylance.

    python bench/run.py [--quick] [--only NAME] [--json FILE] [--workdir DIR] [--repeat N] [--list]

Every ``bench/bench_*.py`` module is imported, so a new benchmark registers itself by being a file there.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


def load_all() -> list[str]:
    """Import every ``bench_*.py`` next to this file; return the module names."""
    if str(BENCH_DIR) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR))
    names = [p.stem for p in sorted(BENCH_DIR.glob("bench_*.py"))]
    for name in names:
        importlib.import_module(name)
    return names


def main() -> int:
    # pylance logs a WARN for every write into a new location during setup; LANCE_LOG=warn brings it back.
    os.environ.setdefault("LANCE_LOG", "error")
    load_all()
    import harness

    return harness.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
