"""Every example of README.md and docs/*.md runs as written (issue 27).

What is extracted: every fenced block tagged ``bash``/``sh``/``shell`` (one command per logical line: a
line ending in ``\\`` continues, a ``#`` outside quotes starts a comment) and every block tagged
``python`` (one program). A block that cannot run as written is preceded by the line
``<!-- not-run: REASON -->`` (a reason is required; used sparingly). A block in another language or
untagged may not look like a command (its first word ``lancespec``, ``python``, ``pytest``, ...): tag a
synopsis ``text``.

How a command runs: with ``bash -c`` in a scratch directory holding a link to every top-level entry of the
checkout (so ``examples/...`` and ``tests/...`` resolve and what a command writes stays in the scratch
directory), with this test's Python first on PATH (``python3``, ``python`` and ``lancespec`` are the
installed ones). It must exit 0, or N when its comment says ``exits N``, and print no traceback. A python
block runs as a script; one that defines ``test_`` functions runs under pytest (the plugin is installed).

Placeholders, resolved the documented way (``SUBSTITUTIONS`` and ``READER_FILES``): ``/tmp/...`` is the
reader's scratch space (a ``tmp/`` of the scratch directory); ``/tmp/quickstart`` is made by the README's
own ``python3 examples/quickstart.py /tmp/quickstart`` first; the reference-writer snippet runs before the
commands that read ``/tmp/ref``; an ``s3://`` location, ``http://127.0.0.1:9000`` and ``...`` for keys
and options stand for the embedded S3 server (bucket ``bucket`` holds a small pylance dataset ``ds``,
bucket ``scratch`` is empty). Commands that take minutes (certify-writer, simulate, spark-certify) are in
the slow tier; one that needs an optional writer or Spark is skipped, naming what is missing.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")))
SHELL = ("bash", "sh", "shell")
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.*?)\s*-->")
FENCE = re.compile(r"^```(\S*)\s*$")
COMMAND_WORDS = ("lancespec", "python", "python3", "pytest", "bash", "pip", "node")
EXITS = re.compile(r"\bexits (\d+)\b")

#: Commands that take minutes: the slow tier.
SLOW = ("lancespec certify-writer", "lancespec simulate", "lancespec spark-certify")

#: What a command needs beyond the default install: (text in the command, modules, programs, what to install).
NEEDS = (
    ("--writer lancedb", ("lancedb",), (), "the lancedb extra"),
    ("cmd:node ", (), ("node",), "Node.js and npm install in tests/thirdparty/node (setup.sh)"),
    ("spark-certify", ("pyspark",), ("java",), "pyspark and Java 17 (setup.sh)"),
)

#: Files the docs name as the reader's own: file name -> how the scratch directory provides it.
READER_FILES = {
    "my_writer.py": "import lance\nimport pyarrow as pa\n\n\ndef write(path):\n"
                    "    lance.write_dataset(pa.table({'id': [0, 1, 2]}), str(path))\n",
}
#: Names a python snippet uses without importing them (the reader's own module): name -> import line.
READER_IMPORTS = {"my_writer.": "import my_writer\n"}


@dataclass(frozen=True)
class Block:
    """A fenced block: where it is, its language, its text, and the not-run reason before it (or None)."""

    doc: str
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    not_run: str | None


@dataclass(frozen=True)
class Example:
    """One thing to run: a shell command or a python program, and the exit status the docs promise."""

    doc: str
    line: int
    kind: str  # "shell" or "python"
    text: str
    exit: int

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def slow(self) -> bool:
        return any(word in self.text for word in SLOW)


def blocks(doc: str) -> Iterator[Block]:
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        start, lang = i, opened.group(1)
        i += 1
        while not lines[i].startswith("```"):
            i += 1
        previous = next((line for line in reversed(lines[:start]) if line.strip()), "")
        marker = NOT_RUN.search(previous)
        yield Block(doc, start + 1, lang, "\n".join(lines[start + 1:i]), marker.group(1) if marker else None)
        i += 1


def commands(block: Block) -> Iterator[Example]:
    """The block's logical command lines, comments removed, each with the exit status its comment states."""
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        first = i
        logical = lines[i]
        while logical.rstrip().endswith("\\"):
            i += 1
            logical = logical.rstrip()[:-1] + " " + lines[i].strip()
        i += 1
        words = shlex.split(logical, comments=True)
        if not words:
            continue  # a comment line continues the comment of the command before
        comment = logical[len(logical.split(" #")[0]):] if " #" in logical else ""
        expected = EXITS.search(comment)
        yield Example(block.doc, block.line + 1 + first, "shell", shlex.join(words),
                      int(expected.group(1)) if expected else 0)


def all_blocks() -> list[Block]:
    return [b for doc in DOCS for b in blocks(doc)]


def examples() -> list[Example]:
    out: list[Example] = []
    for block in all_blocks():
        if block.not_run is not None:
            continue
        if block.lang in SHELL:
            out.extend(commands(block))
        elif block.lang == "python":
            out.append(Example(block.doc, block.line, "python", block.text, 0))
    return out


EXAMPLES = examples()


def example_params() -> list[Any]:
    params = []
    for example in EXAMPLES:
        marks = [pytest.mark.slow] if example.slow else []
        params.append(pytest.param(example, id=example.id, marks=marks))
    return params


# --- the scratch directory and the order of producers -------------------------------------------------


class Scratch:
    """The scratch directory, the substitutions and each example's result (each runs at most once)."""

    def __init__(self, work: Path, request: pytest.FixtureRequest) -> None:
        self.work = work
        self.request = request
        self.results: dict[str, subprocess.CompletedProcess[str]] = {}
        self.s3: dict[str, str] | None = None
        for entry in ROOT.iterdir():
            if entry.name != ".git" and not entry.name.startswith(".pytest"):
                (work / entry.name).symlink_to(entry)
        (work / "tmp").mkdir()
        for name, text in READER_FILES.items():
            (work / name).write_text(text)
        shutil.copy(ROOT / "conformance" / "scenarios" / "data" / "clone-after-tag.json", work / "my-case.json")
        self.env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")

    def s3_options(self) -> dict[str, str]:
        """The embedded S3 server's options, with bucket ``bucket`` holding ``ds`` and bucket ``scratch``."""
        if self.s3 is None:
            server = self.request.getfixturevalue("s3_server")
            for name in ("bucket", "scratch"):
                try:
                    server.create_bucket(name)
                except Exception as exc:  # a second run of this module finds them made
                    if "BucketAlready" not in type(exc).__name__ + str(exc):
                        raise
            self.s3 = dict(server.storage_options(), aws_region="us-east-1")
            lance.write_dataset(pa.table({"id": list(range(6))}), "s3://bucket/ds", mode="overwrite",
                                max_rows_per_file=2, storage_options=self.s3)
        return self.s3

    def substitute(self, text: str) -> str:
        """SUBSTITUTIONS: the documented placeholders, resolved."""
        text = text.replace("/tmp/", f"{self.work}/tmp/")
        if "s3://" in text or "127.0.0.1:9000" in text:
            opts = self.s3_options()
            every = " ".join(f"--storage-option {k}={v}" for k, v in opts.items())
            text = (text.replace("http://127.0.0.1:9000", opts["aws_endpoint"])
                    .replace("aws_access_key_id=...", f"aws_access_key_id={opts['aws_access_key_id']}")
                    .replace("aws_secret_access_key=...", f"aws_secret_access_key={opts['aws_secret_access_key']}")
                    .replace("--storage-option ...", every))
        return text

    def run(self, example: Example) -> subprocess.CompletedProcess[str]:
        if example.id in self.results:
            return self.results[example.id]
        for needle, producer in PRODUCERS:
            if needle in example.text and producer(example) is None:
                made = next(e for e in EXAMPLES if producer(e))
                assert self.run(made).returncode == 0, f"{made.id} must run first and failed"
        text = self.substitute(example.text)
        if example.kind == "shell":
            argv = ["bash", "-c", text]
        else:
            for name, line in READER_IMPORTS.items():
                if name in text:
                    text = line + text
            script = self.work / (re.sub(r"\W", "_", f"example_{example.doc}_{example.line}") + ".py")
            script.write_text(text)
            argv = ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", script.name]
                    if re.search(r"^def test_", text, re.M) else [sys.executable, script.name])
        done = subprocess.run(argv, cwd=self.work, env=self.env, capture_output=True, text=True, timeout=3600,
                              check=False)
        self.results[example.id] = done
        return done


def _producer(pattern: str) -> Callable[[Example], Example | None]:
    return lambda e: e if pattern in e.text else None


#: Examples that make what later ones read: (text a reader contains, the producer it needs run first).
PRODUCERS = (
    ("/tmp/quickstart", _producer("examples/quickstart.py /tmp/quickstart")),
    ("/tmp/ref/", _producer("ref.write_dataset(")),
    ("lancespec-baseline.toml", _producer("--write-baseline lancespec-baseline.toml")),
    ("--since certified.json",
     lambda e: e if "--output certified.json" in e.text and "--since" not in e.text else None),
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Scratch:
    return Scratch(tmp_path_factory.mktemp("docs"), request)


def skip_reason(example: Example) -> str | None:
    for needle, modules, programs, install in NEEDS:
        if needle in example.text:
            missing = [m for m in modules if importlib.util.find_spec(m) is None]
            missing += [p for p in programs if shutil.which(p) is None]
            if missing:
                return f"needs {', '.join(missing)}: {install}"
    return None


@pytest.mark.parametrize("example", example_params())
def test_example_runs_as_written(example: Example, scratch: Scratch) -> None:
    reason = skip_reason(example)
    if reason:
        pytest.skip(reason)
    done = scratch.run(example)
    output = f"$ {example.text}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
    assert done.returncode == example.exit, output
    assert "Traceback" not in done.stdout + done.stderr, output


# --- nothing left out ----------------------------------------------------------------------------------


def test_every_block_is_run_or_marked_with_a_reason() -> None:
    """Every fenced block is counted: run (shell or python), marked not-run with a reason, or in another
    language and not a command; a raw count of the fences agrees, so a block the extractor missed fails."""
    found = all_blocks()
    for doc in DOCS:
        fences = sum(1 for line in (ROOT / doc).read_text(encoding="utf-8").splitlines() if line.startswith("```"))
        assert fences == 2 * sum(1 for b in found if b.doc == doc), doc
    for block in found:
        where = f"{block.doc}:{block.line}"
        if block.not_run is not None:
            assert block.not_run, f"{where}: not-run needs a reason"
            assert block.lang in (*SHELL, "python"), f"{where}: not-run marks a {block.lang or 'untagged'} block"
        elif block.lang not in (*SHELL, "python", "text"):
            first = block.text.split(maxsplit=1)[0] if block.text.strip() else ""
            assert first not in COMMAND_WORDS, f"{where}: a command in a {block.lang or 'untagged'} block (tag it "
            "bash, or text for a synopsis)"


def test_the_readme_examples_are_all_counted() -> None:
    """The README's examples, by what happens to them: a new one changes a count and must be looked at
    (run in the default or the slow tier, or marked not-run with a reason)."""
    readme = [b for b in all_blocks() if b.doc == "README.md"]
    ran = [e for e in EXAMPLES if e.doc == "README.md"]
    assert len(readme) == 18
    assert sorted(b.line for b in readme if b.not_run) == [26, 63, 344]
    assert (sum(not e.slow for e in ran), sum(e.slow for e in ran)) == (24, 11)
