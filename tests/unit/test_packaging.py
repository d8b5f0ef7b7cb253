"""The distribution installs one distinctive import name: lancespec and its sub-packages, never a bare
``reference``, ``conformance`` or ``simulator`` module in site-packages."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAPPED = {"lancespec": "lancespec", "lancespec.reference": "reference",
          "lancespec.conformance": "conformance", "lancespec.simulator": "simulator", "lancespec.spec": "spec"}


def _declared_packages() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages: list[str] = config["tool"]["setuptools"]["packages"]
    assert config["tool"]["setuptools"]["package-dir"] == MAPPED
    return packages


def test_every_source_package_is_declared() -> None:
    found = set()
    for name, folder in MAPPED.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    assert found == set(_declared_packages())


def test_wheel_holds_only_lancespec(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("lancespec-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"lancespec"}
    assert "lancespec/reference/proto/table_pb2.py" in names
    assert "lancespec/reference/layout.py" in names
    assert "lancespec/spec/requirements.toml" in names
    assert any(n.endswith("entry_points.txt") for n in names)
