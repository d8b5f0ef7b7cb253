"""A lineage (``lineage.Lineage``) as Graphviz DOT, and DOT laid out as SVG by Graphviz's ``dot`` program.

Every node carries an ``id`` (the model's) and a ``class`` (``dataset``, ``lane``, ``branch``, ``version``,
``collapsed``, ``tag``, ``base``, ``missing``; findings add ``marked`` and one ``mark-{SEVERITY}-{area}`` per
kind of finding), which Graphviz copies into the SVG, so the page's script and the browser tests find
nodes by what they stand for. Every name a dataset controls goes through ``printable`` and DOT quoting.
The layout is Graphviz's; nothing here computes a coordinate.
"""

from __future__ import annotations

import html
import itertools
import shutil
import subprocess
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence

from reference.errors import InvalidOption, LanceSpecError
from reference.printable import printable

from .lineage import Clone, DatasetLineage, Lane, Lineage, Location, Step, Usage


class GraphvizError(LanceSpecError):
    """Graphviz's ``dot`` is not installed, or failed to lay a diagram out (the diagram commands cannot run
    here: exit 2, one line)."""


#: The longest a diagram may take to lay out.
DOT_TIMEOUT_SECONDS = 120

#: The address space Graphviz may take to lay a diagram out (without one, a hostile lineage took it to 23.6 GB
#: and the kernel's out-of-memory killer: an outside review).
DOT_MEMORY_BYTES = 2 << 30

#: (severity, area) of the findings a node carries.
Marks = Mapping[str, Collection[tuple[str, str]]]

_GRAPH = ('graph [rankdir=TB, newrank=true, fontname="Helvetica", fontsize=11, nodesep=0.25, ranksep=0.35, '
          'bgcolor="transparent"];\n'
          'node [fontname="Helvetica", fontsize=10, shape=box, style="rounded,filled", fillcolor="white"];\n'
          'edge [fontname="Helvetica", fontsize=9, color="#555555"];\n')


def quote(text: object) -> str:
    """``text`` as a DOT double-quoted string, printable, with no escape Graphviz would interpret."""
    return '"' + printable(text, 200).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(*lines: object) -> str:
    """A multi-line label: each line quoted on its own, joined by DOT's centred line break."""
    return '"' + "\\n".join(quote(line)[1:-1] for line in lines if line != "") + '"'


def _attrs(**attrs: str) -> str:
    return "[" + ", ".join(f"{k}={v}" for k, v in attrs.items()) + "]"


def human_size(n: int) -> str:
    """Bytes for a person: ``512 B``, ``1.5 KiB``, ``3.0 MiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def files_text(use: Usage) -> str:
    """``1 file``, ``3 files``."""
    return "1 file" if use.files == 1 else f"{use.files} files"


def size_text(use: Usage) -> str:
    """The files' recorded bytes, and how many record no size."""
    if use.unsized == use.files:
        return "size not recorded"
    return human_size(use.size) + (f" + {use.unsized} unsized" if use.unsized else "")


def _version_range(versions: tuple[int, ...]) -> str:
    return f"v{versions[0]}" if len(versions) == 1 else f"v{versions[0]} … v{versions[-1]}"


def _node(node_id: str, classes: str, marks: Marks, **attrs: str) -> str:
    found = sorted(set(marks.get(node_id, ())))
    if found:
        classes += " marked " + " ".join(f"mark-{s}-{a}" for s, a in found)
        attrs["color"] = '"#c00000"' if any(s == "MUST" for s, _ in found) else '"#d98000"'
        attrs["penwidth"] = "2.5"
    return f"{node_id} {_attrs(id=quote(node_id), **{'class': quote(classes)}, **attrs)};\n"


def _step(step: Step, branch: str | None, marks: Marks) -> str:
    where = "main" if branch is None else f"branch {branch}"
    if step.collapsed:
        return _node(step.id, "version collapsed", marks, label=_label(
            _version_range(step.versions), f"{len(step.versions):,} versions"), style='"rounded,dashed,filled"',
            fillcolor='"#eeeeee"', tooltip=quote(f"{len(step.versions)} versions of {where}, collapsed"))
    lines: list[object] = [_version_range(step.versions)]
    if step.num_rows is not None:
        lines.append(f"{step.num_rows:,} rows")
    if step.unresolved:
        lines.append(f"{step.unresolved} files unresolved")
    return _node(step.id, "version", marks, label=_label(*lines),
                 tooltip=quote(f"version {step.versions[0]} of {where}"))


def _lane(ds: DatasetLineage, lane: Lane, marks: Marks) -> Iterable[str]:
    yield f"subgraph cluster_{lane.id} {{\n"
    yield f'id={quote("cluster_" + lane.id)}; class="lane"; label=""; style="rounded,filled"; ' \
          'color="#c8d3e0"; fillcolor="#f5f8fc";\n'
    name = "main" if lane.branch is None else f"branch {lane.branch}"
    origin = "" if lane.fork is None else \
        f"from {lane.fork.parent_branch or 'main'} v{lane.fork.parent_version}"
    empty = "" if lane.steps else "(no readable version)"
    yield _node(lane.id, "branch", marks, shape="cds", fillcolor='"#dbe6f4"', label=_label(name, origin, empty))
    for step in lane.steps:
        yield _step(step, lane.branch, marks)
    for tag in ds.tags:
        if tag.branch == lane.branch:
            yield _node(tag.id, "tag", marks, shape="note", fillcolor='"#fff4c8"', label=_label(f"tag {tag.name}"),
                        tooltip=quote(f"tag {tag.name} pins v{tag.version}"))
    chain = [lane.id, *(s.id for s in lane.steps)]
    for a, b in itertools.pairwise(chain):
        yield f'{a} -> {b} [class="next"];\n'
    yield "}\n"


def _clone_label(clone: Clone) -> str:
    kind = "shallow" if clone.shallow else "deep"
    branch = f" (branch {clone.source_branch})" if clone.source_branch else ""
    return f"{kind} clone of {clone.source}{branch} v{clone.source_version}"


def _dataset(ds: DatasetLineage, marks: Marks) -> Iterable[str]:
    yield f"subgraph cluster_{ds.id} {{\n"
    title = [f"dataset {ds.root}"] + ([_clone_label(ds.clone)] if ds.clone else [])
    yield f'id={quote("cluster_" + ds.id)}; class="dataset"; label={_label(*title)}; style="rounded"; ' \
          'color="#7a8aa0"; fontsize=12;\n'
    for lane in ds.lanes:
        yield from _lane(ds, lane, marks)
    yield "}\n"


def _edges(ds: DatasetLineage) -> Iterable[str]:
    """Tags to their versions, forks, and a shallow clone to its source (or to a missing-source node)."""
    for tag in ds.tags:
        if tag.step is not None:
            yield f'{tag.id} -> {tag.step} [class="pin", arrowhead=none, style=dashed, color="#b59a2a"];\n'
    for lane in ds.lanes:
        if lane.fork is not None and lane.fork.source is not None:
            yield f'{lane.fork.source} -> {lane.id} [class="fork", label="fork", style=bold, color="#3465a4"];\n'
    clone = ds.clone
    if clone is None or not clone.shallow or not ds.lanes[0].steps:
        return
    start = ds.lanes[0].steps[0].id
    target = clone.target
    if target is None:
        target = f"{ds.id}src"
        yield (f'{target} [id={quote(target)}, class="missing", style="dashed", '
               f'label={_label("source not readable", clone.source, f"v{clone.source_version}")}];\n')
    untagged = clone.tagged is False
    label = _label(f"shallow clone of v{clone.source_version}", "untagged" if untagged else "")
    color = '"#c00000"' if untagged else '"#3465a4"'
    yield (f'{start} -> {target} [class={quote("clone shallow" + (" untagged" if untagged else ""))}, '
           f'label={label}, color={color}, fontcolor={color}, style=bold];\n')


def _cell(text: object, attrs: str) -> str:
    return f"<TD {attrs}>{html.escape(printable(text, 120))}</TD>"


def _location(loc: Location, rows: Sequence[tuple[str, Usage]], marks: Marks) -> str:
    """A location's box: its path (relative to its group), kind and names, then one row per version drawn
    that resolves files into it: which version, how many files, how many bytes."""
    head = [loc.label, loc.kind + (f", named {', '.join(loc.names)}" if loc.names else "")]
    left, right, whole, gap = 'ALIGN="LEFT"', 'ALIGN="RIGHT"', 'COLSPAN="5"', '<TD WIDTH="8"></TD>'
    table = ['<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">']
    table += [f"<TR>{_cell(line, whole)}</TR>" for line in head]
    table += [f"<TR>{_cell(version, left)}{gap}{_cell(files_text(use), right)}{gap}{_cell(size_text(use), right)}"
              "</TR>" for version, use in rows]
    table.append("</TABLE>>")
    return _node(loc.id, "base", marks, shape="folder", fillcolor='"#e6f2dc"', label="".join(table),
                 tooltip=quote(loc.path))


def _usage_rows(lineage: Lineage) -> dict[str, list[tuple[str, Usage]]]:
    """Location path -> (version as a person reads it, usage) for every version drawn, lane by lane."""
    out: dict[str, list[tuple[str, Usage]]] = {}
    several = len(lineage.datasets) > 1
    for ds in lineage.datasets:
        prefix = f"{ds.root.rsplit('/', 1)[-1]} " if several else ""
        for lane in ds.lanes:
            name = "main" if lane.branch is None else lane.branch
            for step in lane.steps:
                for use in step.usage:
                    out.setdefault(use.location, []).append((f"{prefix}{name} v{step.versions[0]}", use))
    return out


def to_dot(lineage: Lineage, marks: Marks | None = None) -> str:
    """The DOT text of ``lineage``; nodes in ``marks`` are drawn marked (certify's findings)."""
    marks = marks or {}
    out = ["digraph lineage {\n", _GRAPH]
    for ds in lineage.datasets:
        out += _dataset(ds, marks)
    rows = _usage_rows(lineage)
    for group in lineage.groups:
        out.append(f"subgraph {group.id} {{\n")
        out.append(f'id={quote(group.id)}; class="bucket"; label={quote(group.label)}; style="rounded,filled"; '
                   'color="#9bb58a"; fillcolor="#f6faf2";\n')
        out += [_location(loc, rows.get(loc.path, []), marks) for loc in group.locations]
        out.append("}\n")
    for ds in lineage.datasets:
        out += _edges(ds)
    # No edge ties the locations to the lanes' ends: invisible edges from every end to every location (N x M of
    # them) took Graphviz past 120 s and 8.6 GB on a chain of 200 clones, and through one node past 60 s (an
    # outside review); laid out where their usage edges pull them, 0.2 s
    out.append("}\n")
    return "".join(out)


def graphviz_available() -> bool:
    return shutil.which("dot") is not None


def require_graphviz(where: str) -> None:
    """Raise GraphvizError (one line, naming ``where``) when ``dot`` is not on PATH."""
    if not graphviz_available():
        raise GraphvizError("drawing the lineage as SVG needs Graphviz's dot program, which is not on PATH "
                            "(install Graphviz, e.g. apt-get install graphviz; a .dot file needs none)", where)


#: Graphviz started under an address-space limit (``argv[1]`` bytes; past it, it fails): set by a small Python
#: program that then becomes ``dot`` (a ``preexec_fn`` is not safe while other threads run).
_LIMITED_DOT = ("import os, resource, sys\n"
                "limit = int(sys.argv[1])\n"
                "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
                "os.execvp('dot', ['dot', '-Tsvg'])\n")


def to_svg(dot_text: str, where: str = "") -> str:
    """``dot_text`` laid out by Graphviz as an SVG document."""
    require_graphviz(where)
    try:
        done = subprocess.run([sys.executable, "-c", _LIMITED_DOT, str(DOT_MEMORY_BYTES)], input=dot_text,
                              capture_output=True, text=True, timeout=DOT_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired as exc:
        raise GraphvizError(f"Graphviz took more than {DOT_TIMEOUT_SECONDS} s to lay out the lineage", where) from exc
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise GraphvizError(f"Graphviz failed ({printable(first, 200)})", where)
    return done.stdout


def graph_text(lineage: Lineage, path: str) -> str:
    """``lineage`` as the file ``path`` names holds it: DOT for ``.dot``, SVG (needs Graphviz) for ``.svg``."""
    dot_text = to_dot(lineage)
    if path.endswith(".dot"):
        return dot_text
    if path.endswith(".svg"):
        return to_svg(dot_text, path)
    raise InvalidOption(f"--graph writes .svg or .dot, not {printable(path, 80)}")
