"""The distribution installs the design's top-level folders as the packages named after them
(lancespec, reference, conformance, simulator, spec), found by name in pyproject.toml, and nothing else:
the tree's import paths are the installed ones."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"lancespec", "reference", "conformance", "simulator", "spec"}


def test_no_folder_is_mapped_to_another_import_name() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "package-dir" not in config
    include = set(config["packages"]["find"]["include"])
    assert include == PACKAGES | {f"{name}.*" for name in PACKAGES}


def test_wheel_holds_the_folders_as_packages(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("lancespec-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == PACKAGES
    source = {p.relative_to(ROOT).as_posix() for name in PACKAGES for p in (ROOT / name).rglob("*.py")
              if (p.parent / "__init__.py").exists() and "__pycache__" not in p.parts}
    assert source <= names  # every module of every package (a package without __init__.py is no package)
    assert {"reference/proto/table_pb2.py", "spec/requirements.toml", "conformance/corpus/breaches.py"} <= names
    assert any(n.startswith("conformance/scenarios/data/") and n.endswith(".json") for n in names)
    assert any(n.endswith("entry_points.txt") for n in names)
