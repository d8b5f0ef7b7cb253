"""The library (reference/, conformance/, simulator/) never reaches into the command line (lancespec/cli/):
commands depend on the library, never the other way round. Checked on the source: every import, absolute
or relative, resolved to the module it names, and every string naming the package (a ``python -m`` target)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = {"reference": "reference", "conformance": "conformance",
           "simulator": "simulator"}
CLI = "lancespec.cli"


def _modules() -> list[tuple[Path, str]]:
    out = []
    for folder, package in LIBRARY.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out.append((path, ".".join([package, *parts])))
    return out


def _imported(tree: ast.AST, module: str, is_package: bool) -> list[str]:
    """Every module an ``import`` or ``from ... import`` of ``tree`` names, relative ones resolved."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names += [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]
    return names


def test_the_resolver_sees_a_relative_import_of_the_cli() -> None:
    tree = ast.parse("from ..cli import main\nfrom lancespec import cli\n")
    names = _imported(tree, "lancespec.render.commands", is_package=False)
    assert names.count("lancespec.cli") == 2


def test_no_library_module_uses_the_cli() -> None:
    offenders = []
    for path, module in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        names = _imported(tree, module, path.name == "__init__.py")
        names += [node.value for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        offenders += [f"{path.relative_to(ROOT)}: {name}" for name in names
                      if name == CLI or name.startswith(CLI + ".")]
    assert len(_modules()) > 100  # the walk found the library
    assert offenders == []
