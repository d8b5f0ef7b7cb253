"""Type-check lancespec from the checkout: ``python tools/typecheck.py [mypy args]``.

Each top-level folder is the package named after it (lancespec/, reference/, conformance/, simulator/,
spec/), so mypy reads them where they stand, strict, with the project's configuration (pyproject.toml).
Exit status is mypy's. ``build_tree`` gives a copy of the checkout the same import shape (tools/mutation_check.py
runs the suite against a mutated copy put first on PYTHONPATH).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lancespec", "reference", "conformance", "simulator", "spec")


def build_tree(where: Path, root: Path = ROOT, top: Path | None = None) -> Path:
    """``where`` holding a symlink per package: ``lancespec`` to ``top`` (the checkout's ``lancespec/`` by
    default), the others to the folders of ``root`` (the checkout, or a copy of it). Returns ``where``,
    the folder to put first on PYTHONPATH."""
    where.mkdir(parents=True)
    for name in PACKAGES:
        os.symlink(top if (name == "lancespec" and top is not None) else root / name, where / name)
    return where


def main(argv: list[str]) -> int:
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *argv, *PACKAGES]
    return subprocess.run(command, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
