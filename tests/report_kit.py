"""Shared pieces of the report tests (tests/report): the golden corpus cases, what ``lancespec inspect
--json`` (run as the command line, in process) says a lineage holds, and a page opened in a browser with
every console error and every request recorded (the browser itself is tests/report/conftest.py's fixture)."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lancespec.cli import main

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "fixtures" / "cases"
#: Every corpus case but the breach cases (``breach-*``): those are datasets broken on purpose for judges
#: (tests/fixtures/test_breach_cases.py), with no inspect or reader expectations to draw them against.
ALL_CASES = sorted(p.name for p in CASES.iterdir() if (p / "case.json").is_file() and not p.name.startswith("breach-"))


def case_json(case: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CASES / case / "case.json").read_text())
    return loaded


def run_cli(*argv: str) -> tuple[int, str]:
    """``lancespec ARGV`` in process: (exit status, standard output); a command-line mistake exits 2
    through argparse (SystemExit)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = int(exc.code or 0)
    return rc, out.getvalue()


def inspect_json(uri: str, *args: str) -> dict[str, Any] | None:
    """``lancespec inspect URI --format json ARGS``, or None when it exits 2 (that version cannot be read)."""
    rc, out = run_cli("inspect", uri, "--format", "json", *args)
    if rc == 2:
        return None
    assert rc == 0
    doc: dict[str, Any] = json.loads(out)
    return doc


@dataclass
class InspectedLineage:
    """What the inspect command says about a lineage: per main root, the versions of each lane (None for
    main), the tags as (branch, version), the clone; every root and base path of every readable version."""

    lanes: dict[str, dict[str | None, list[int]]] = field(default_factory=dict)
    tags: dict[str, dict[str, tuple[str | None, int]]] = field(default_factory=dict)
    clones: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    locations: set[str] = field(default_factory=set)
    unreadable: int = 0

    @property
    def versions(self) -> int:
        return sum(len(v) for lanes in self.lanes.values() for v in lanes.values())


def inspected_lineage(uri: str) -> InspectedLineage:
    """Follow ``uri``'s lanes and shallow clone sources through ``inspect --format json`` alone."""
    out = InspectedLineage()
    queue = [uri.rstrip("/")]
    while queue:
        root = queue.pop(0)
        head = inspect_json(root)
        if root in out.lanes or head is None:
            continue
        lanes: dict[str | None, list[int]] = {None: head["versions"]}
        for name, latest in head["branches"].items():
            branch_head = inspect_json(root, "--branch", name) if latest is not None else None
            lanes[name] = branch_head["versions"] if branch_head else []
        out.lanes[root] = lanes
        out.tags[root] = {name: (head["tag_branches"][name], v) for name, v in head["tags"].items()}
        out.clones[root] = head["clone"]
        for branch, versions in lanes.items():
            for v in versions:
                doc = inspect_json(root, "--version", str(v), *(["--branch", branch] if branch else []))
                if doc is None:
                    out.unreadable += 1
                    continue
                out.locations |= {doc["uri"].rstrip("/")} | {b["path"].rstrip("/") for b in doc["bases"]}
        clone = head["clone"]
        if clone is not None and clone["shallow"]:
            source = clone["source"].rstrip("/")
            if clone["source_branch"]:
                source = source.removesuffix(f"/tree/{clone['source_branch']}")
            queue.append(source)
    return out



# --- pages in the browser ---------------------------------------------------------------------------


@dataclass
class OpenedPage:
    """A page in the browser with what it tried: console errors, uncaught exceptions, every request, and
    the requests that would have left it (aborted)."""

    page: Any
    url: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)


@contextlib.contextmanager
def opened(browser: Any, path: Path) -> Iterator[OpenedPage]:
    """Open ``path`` with every request routed: the page itself and ``data:`` URLs go through, anything
    else is aborted and recorded."""
    context = browser.new_context()
    url = path.resolve().as_uri()
    seen = OpenedPage(None, url)

    def route(r: Any) -> None:
        if r.request.url == url or r.request.url.startswith("data:"):
            r.continue_()
        else:
            seen.outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen.errors.append(str(e)))
    page.on("request", lambda r: seen.requests.append(r.url))
    page.goto(url)
    page.wait_for_load_state("load")
    seen.page = page
    try:
        yield seen
    finally:
        context.close()


def assert_self_contained(seen: OpenedPage) -> None:
    """No console error, and no request but the page's own."""
    assert seen.errors == []
    assert seen.outside == []
    assert [u for u in seen.requests if u != seen.url and not u.startswith("data:")] == []
