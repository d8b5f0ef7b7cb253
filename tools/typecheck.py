"""Type-check lancespec as it is installed: ``python tools/typecheck.py [mypy args]``.

The distribution maps the top-level folders reference/, conformance/ and simulator/ to
``lancespec.reference`` and so on (pyproject.toml ``package-dir``); mypy cannot follow that mapping from
a source checkout. This tool builds the installed package shape out of symlinks in a temporary folder,
runs mypy (strict, the project's configuration) on it, and prints the findings with the checkout's
paths. Exit status is mypy's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAPPING = {"reference": "reference", "conformance": "conformance", "simulator": "simulator", "spec": "spec"}


def build_tree(where: Path, root: Path = ROOT, top: Path | None = None) -> Path:
    """The installed package shape under ``where``: ``where/lancespec`` holds symlinks to the entries of
    ``top`` (the checkout's ``lancespec/`` folder by default) and, per ``MAPPING``, to the folders of ``root``
    (the checkout, or a copy of it). Returns ``where/lancespec``."""
    package = where / "lancespec"
    package.mkdir(parents=True)
    for entry in (top or root / "lancespec").iterdir():
        if entry.name != "__pycache__":
            os.symlink(entry, package / entry.name)
    for sub, folder in MAPPING.items():
        os.symlink(root / folder, package / sub)
    return package


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="lancespec-typecheck-") as tmp:
        package = build_tree(Path(tmp))
        command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *argv, str(package)]
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp)
        output = done.stdout + done.stderr
        # mypy runs in the temporary folder, so it prints paths relative to it: map them back.
        for sub, folder in MAPPING.items():
            output = output.replace(f"lancespec/{sub}/", f"{folder}/")
        sys.stdout.write(output)
        return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
