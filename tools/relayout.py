"""Make the imports resolvable from the tree: ``python tools/relayout.py [--dry-run]``.

Until this runs, pyproject.toml's ``package-dir`` maps the design's top-level folders into one import name
(``reference/`` is imported as ``lancespec.reference``, ``conformance/`` as ``lancespec.conformance``, ...),
which import-graph tools, mypy and a newcomer's editor cannot follow from the checkout. After it, each of
those folders is a package named after itself (``import reference.table``, ``conformance.checks``,
``simulator.proxy``; the spec data as the package ``spec``), and ``conformance/fixtures/`` (the library that
builds the golden corpus and the breach cases, not pytest fixtures) is ``conformance/corpus/``.

Written as a script because every branch edits files under these folders: run it on the merged tree, then
commit what it changed. It works from patterns, never from a list of today's files, and is idempotent (a
second run changes nothing and says so):

1. ``git mv`` every tracked file of ``conformance/fixtures/`` to ``conformance/corpus/``;
2. rewrites every tracked text file: ``lancespec.reference``/``.conformance``/``.simulator``/``.spec`` lose
   their ``lancespec.`` prefix; ``conformance.fixtures`` and ``conformance/fixtures`` become ``corpus``; a
   relative import of ``conformance/`` naming ``fixtures`` and a relative import of ``lancespec/`` reaching
   one of the four folders become what they mean; an error that moved out of ``reference/errors.py`` is
   imported from its owner;
3. the golden corpus index (``fixtures/corpus.json``): the digests and total size of the files step 2 changed;
4. pyproject.toml: no ``package-dir``; the packages found by name; ruff's first-party names;
5. tools/typecheck.py and tests/unit/test_packaging.py, whose subject is the mapping, rewritten whole;
6. ``ruff check --select I --fix`` on the Python files it changed (their import blocks regrouped);
7. a stale ``*.egg-info`` of an earlier build removed from the checkout.

Afterwards: ``pip install -e .`` again (an editable install made before still maps the old names).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
FOLDERS = ("reference", "conformance", "simulator", "spec")
RENAMED = {"conformance/fixtures": "conformance/corpus"}
TEXT_SUFFIXES = {".py", ".pyi", ".md", ".toml", ".json", ".sh", ".cfg", ".ini", ".txt", ".mjs", ".js", ".yml",
                 ".yaml", ".html"}
TEXT_NAMES = {".ci/run", "setup.sh"}

#: The textual rules, in order: (name, pattern, replacement).
RULES: list[tuple[str, re.Pattern[str], str]] = [
    ("lancespec.<folder> -> <folder>", re.compile(r"\blancespec\.(" + "|".join(FOLDERS) + r")\b"), r"\1"),
    ("conformance.fixtures -> conformance.corpus",
     re.compile(r"(?<![\w/.-])conformance([./])fixtures\b"), r"conformance\1corpus"),
]
#: Inside conformance/: a relative import of the renamed package.
RELATIVE_FIXTURES = re.compile(r"^(\s*from \.+)fixtures\b", re.M)
#: What only the mapping made true, where it is said: (pattern, replacement).
MAPPING_REMARKS: list[tuple[re.Pattern[str], str]] = [
    # bench/: imports mypy could not follow through package-dir, and the comments saying so
    (re.compile(r"(?m)^[ \t]*# mypy cannot follow the editable install's package-dir mapping[^\n]*\n"
                r"(?:[ \t]*# project-wide limitation[^\n]*\n)?"), ""),
    (re.compile(r"(?m)^(\s*(?:from|import) (?:" + "|".join(FOLDERS) + r")\b[^\n]*?)"
                r"  # type: ignore\[import-not-found, unused-ignore\]$"), r"\1"),
    # README's layout table
    (re.compile(re.escape("`typecheck.py` (mypy on the package as installed)")),
     "`typecheck.py` (mypy on the five packages where they stand)"),
    (re.compile(re.escape("`fixtures/` (corpus build and verify)")),
     "`corpus/` (the golden corpus: build and verify, the breach cases)"),
]


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def tracked() -> list[str]:
    return [p for p in git("ls-files", "-z").split("\0") if p]


def move_folders(dry_run: bool, changed: Counter[str]) -> None:
    """Step 1: git mv every tracked file of a renamed folder (files another branch added there too)."""
    for old, new in RENAMED.items():
        for path in [p for p in tracked() if p.startswith(old + "/")]:
            target = new + path[len(old):]
            if (ROOT / target).exists():
                raise SystemExit(f"relayout: both {path} and {target} exist; merge them by hand, then run again")
            print(f"move {path} -> {target}")
            changed["moved"] += 1
            if not dry_run:
                (ROOT / target).parent.mkdir(parents=True, exist_ok=True)
                git("mv", path, target)
        leftover = ROOT / old
        if leftover.is_dir() and not dry_run:
            for cache in sorted(leftover.rglob("__pycache__"), reverse=True):
                for stale in cache.iterdir():
                    stale.unlink()
                cache.rmdir()
            for folder in sorted((p for p in leftover.rglob("*") if p.is_dir()), reverse=True):
                if not any(folder.iterdir()):
                    folder.rmdir()
            if not any(leftover.iterdir()):
                leftover.rmdir()


def _is_text(path: str) -> bool:
    return path in TEXT_NAMES or Path(path).suffix in TEXT_SUFFIXES


def _package_of(path: str) -> list[str]:
    """The package a module file of lancespec/ belongs to, as the import system sees it."""
    parts = Path(path).with_suffix("").parts
    return list(parts[:-1])


def absolute_cli_imports(path: str, text: str) -> str:
    """A relative import in lancespec/ that reaches one of the folders (``from .reference.table import x``,
    ``from ..conformance import y``, ``from . import reference``) made absolute."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    package = _package_of(path)
    for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level),
                       key=lambda n: n.lineno, reverse=True):
        base = package[:len(package) - node.level + 1]
        target = [*base, *(node.module.split(".") if node.module else [])]
        names = [a.name for a in node.names]
        if len(target) >= 2 and target[0] == "lancespec" and target[1] in FOLDERS:
            new = "from " + ".".join(target[1:])
        elif target == ["lancespec"] and all(n in FOLDERS for n in names) and all(a.asname is None for a in node.names):
            new = None
        else:
            continue
        first = lines[node.lineno - 1]
        head = re.match(r"(\s*)from\s+\.+[\w.]*", first)
        if head is None:
            print(f"relayout: {path}:{node.lineno}: a relative import it cannot rewrite; fix it by hand")
            continue
        if new is None:
            indent = head.group(1)
            lines[node.lineno - 1:node.end_lineno] = [f"{indent}import {', '.join(names)}\n"]
        else:
            lines[node.lineno - 1] = head.group(1) + new + first[head.end():]
    return "".join(lines)


#: The errors that left reference/errors.py for the code that raises them, and where they live now: an import
#: of one of them from ``reference.errors`` (a branch written before they moved) is pointed at its owner.
MOVED_ERRORS = {
    "ScenarioError": "conformance.scenarios.format", "ContractError": "conformance.adapters.base",
    "WriterRefusal": "conformance.adapters.base", "ReaderError": "conformance.adapters.base",
    "CaseBuildError": "conformance.corpus.breaches", "CorpusError": "conformance.corpus.corpus",
    "SparkUnavailable": "conformance.spark.session", "S3ServerError": "simulator.s3",
    "CertifyError": "conformance.certify", "DivergenceFileError": "conformance.divergences",
    "CatalogueError": "conformance.catalogue", "MatrixError": "conformance.traceability",
    "GraphvizError": "lancespec.render.dot",
}


def errors_from_their_owners(path: str, text: str) -> str:
    """``from reference.errors import X, CertifyError`` becomes ``from reference.errors import X`` and
    ``from conformance.certify import CertifyError`` (nothing where the module is the owner itself)."""
    if "reference.errors import" not in text:
        return text
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    module = ".".join(Path(path).with_suffix("").parts).removesuffix(".__init__")
    lines = text.splitlines(keepends=True)
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "reference.errors"
             and not n.level and any(a.name in MOVED_ERRORS for a in n.names)]
    for node in sorted(nodes, key=lambda n: n.lineno, reverse=True):
        indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)  # type: ignore[union-attr]
        def spelled(alias: ast.alias) -> str:
            return alias.name + (f" as {alias.asname}" if alias.asname else "")
        kept = [spelled(a) for a in node.names if a.name not in MOVED_ERRORS]
        owners: dict[str, list[str]] = {}
        for alias in node.names:
            if alias.name in MOVED_ERRORS and MOVED_ERRORS[alias.name] != module:
                owners.setdefault(MOVED_ERRORS[alias.name], []).append(spelled(alias))
        new = [f"{indent}from reference.errors import {', '.join(kept)}\n"] if kept else []
        new += [f"{indent}from {owner} import {', '.join(names)}\n" for owner, names in sorted(owners.items())]
        lines[node.lineno - 1:node.end_lineno] = new or [f"{indent}pass\n"]
    return "".join(lines)


def rewrite(path: str, text: str, counts: Counter[str]) -> str:
    """Step 2 on one file's text."""
    for name, pattern, replacement in RULES:
        text, n = pattern.subn(replacement, text)
        counts[name] += n
    for pattern, replacement in MAPPING_REMARKS:
        text, n = pattern.subn(replacement, text)
        counts["remarks only the mapping made true"] += n
    if path.endswith(".py") and path.startswith("conformance/"):
        text, n = RELATIVE_FIXTURES.subn(r"\1corpus", text)
        counts["from .fixtures -> from .corpus (in conformance/)"] += n
    if path.endswith(".py"):
        new = errors_from_their_owners(path, text)
        counts["errors imported from their owners"] += new != text
        text = new
    if path.endswith(".py") and path.startswith("lancespec/"):
        new = absolute_cli_imports(path, text)
        counts["relative imports of lancespec/ reaching a folder, made absolute"] += new != text
        text = new
    return text


def rewrite_tree(dry_run: bool, changed: Counter[str]) -> list[str]:
    counts: Counter[str] = Counter()
    touched = []
    for path in tracked():
        if path == THIS or not _is_text(path) or not (ROOT / path).is_file() or (ROOT / path).is_symlink():
            continue
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(path, text, counts)
        if new != text:
            touched.append(path)
            if not dry_run:
                (ROOT / path).write_text(new, encoding="utf-8")
    for name, n in counts.items():
        if n:
            print(f"rewrite: {name}: {n}")
    print(f"rewrite: {len(touched)} file(s) changed")
    changed["rewritten"] += len(touched)
    return touched


def refresh_corpus_index(touched: list[str], dry_run: bool) -> None:
    """Step 3: fixtures/corpus.json holds the SHA-256 and the total size of every corpus file."""
    index_path = ROOT / "fixtures" / "corpus.json"
    if not index_path.is_file():
        return
    index = json.loads(index_path.read_text(encoding="utf-8"))
    files: dict[str, str] = index.get("files", {})
    stale = [f"fixtures/{rel}" for rel in files if f"fixtures/{rel}" in touched]
    if not stale:
        return
    for path in stale:
        files[path.removeprefix("fixtures/")] = "sha256:" + hashlib.sha256((ROOT / path).read_bytes()).hexdigest()
    if "total_bytes" in index:
        index["total_bytes"] = sum((ROOT / "fixtures" / rel).stat().st_size for rel in files)
    print(f"corpus index: {len(stale)} digest(s) and the total size refreshed")
    if not dry_run:
        index_path.write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


PACKAGES_FIND = """[tool.setuptools.packages.find]
# Each of the design's top-level folders is the package named after it (tools/relayout.py).
include = [
{}]
namespaces = false
""".format("".join(f'    "{name}", "{name}.*",\n' for name in ("lancespec", *FOLDERS)))


def rewrite_pyproject(dry_run: bool) -> bool:
    """Step 4 (after step 2 took the ``lancespec.`` prefix off the package names)."""
    path = ROOT / "pyproject.toml"
    text = path.read_text(encoding="utf-8")
    new = re.sub(r"(?m)^(#[^\n]*\n)*package-dir = \{[^\n]*\}\n\n?", "", text)
    new = re.sub(r"(?ms)^packages = \[\n.*?^\]\n", PACKAGES_FIND, new)
    first_party = ", ".join(f'"{name}"' for name in ("lancespec", *FOLDERS))
    new = re.sub(r"(?m)^known-first-party = \[[^\n]*\]$", f"known-first-party = [{first_party}]", new)
    # The checkout on pytest's path too: tests/conformance/ and tests/simulator/ (folders of tests, no
    # packages) would otherwise be taken for namespace packages of those names by imports made after
    # pytest puts tests/ first.
    new = re.sub(r'(?m)^pythonpath = \[(?!"\.")', 'pythonpath = [".", ', new)
    # mypy reads the folders where they stand, each module named from the checkout or the mypy_path folder
    # it lies in (the third-party adapters' scripts import ``contract`` from their own folder).
    if "explicit_package_bases" not in new:
        new = re.sub(r"(?m)^(\[tool\.mypy\]\n)", r"\1explicit_package_bases = true\n", new)
    if new != text:
        print("pyproject.toml: package-dir gone, packages found by name, ruff's first-party names, "
              "the checkout on pytest's path")
        if not dry_run:
            path.write_text(new, encoding="utf-8")
    return new != text


TYPECHECK = '''"""Type-check lancespec from the checkout: ``python tools/typecheck.py [mypy args]``.

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
'''

PACKAGING_TEST = '''"""The distribution installs the design's top-level folders as the packages named after them
(lancespec, reference, conformance, simulator, spec), found by name in pyproject.toml, and nothing else:
the tree's import paths are the installed ones (tools/relayout.py)."""

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
'''


def replace_whole(dry_run: bool) -> list[str]:
    """Step 5: files about the mapping, rewritten whole while they still describe it."""
    out = []
    whole = (("tools/typecheck.py", '"""The installed package shape under ``where``', TYPECHECK),
             ("tests/unit/test_packaging.py", "MAPPED = {", PACKAGING_TEST))
    for rel, marker, content in whole:
        path = ROOT / rel
        if path.is_file() and marker in path.read_text(encoding="utf-8"):
            print(f"{rel}: rewritten for the new layout")
            out.append(rel)
            if not dry_run:
                path.write_text(content, encoding="utf-8")
    return out


def sort_imports(paths: list[str], dry_run: bool) -> None:
    """Step 6: the import blocks of the changed modules regrouped under the new first-party names."""
    python = sorted({p for p in paths if p.endswith(".py") and (ROOT / p).is_file()})
    if not python or dry_run:
        return
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "I", "--fix", "--quiet", *python],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        print(f"relayout: ruff could not sort the imports ({done.stderr.strip()}); run "
              "`ruff check --select I --fix .` by hand")
    else:
        print(f"imports sorted in {len(python)} Python file(s)")


def drop_stale_metadata(dry_run: bool) -> None:
    """Step 7: a ``*.egg-info`` a build left in the checkout (ignored by git) still names the old pytest plugin,
    and Python run from the checkout finds it before the installed one: removed (the next build writes it anew)."""
    for info in sorted(ROOT.glob("*.egg-info")):
        if info.is_dir() and "lancespec.conformance" in (info / "entry_points.txt").read_text(errors="replace"):
            print(f"removed the stale build metadata {info.name}/")
            if not dry_run:
                shutil.rmtree(info)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    args = parser.parse_args(argv)
    changed: Counter[str] = Counter()
    move_folders(args.dry_run, changed)
    touched = rewrite_tree(args.dry_run, changed)
    refresh_corpus_index(touched, args.dry_run)
    touched += ["pyproject.toml"] if rewrite_pyproject(args.dry_run) else []
    touched += replace_whole(args.dry_run)
    sort_imports(touched, args.dry_run)
    drop_stale_metadata(args.dry_run)
    if not changed["moved"] and not touched:
        print("relayout: nothing to do (the layout is already the folders' own)")
    elif not args.dry_run:
        print("relayout: done; now `pip install -e .` (or bash setup.sh) so the install maps the new names")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
