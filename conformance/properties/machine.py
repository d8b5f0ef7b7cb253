"""The writer machine: random programs on every writer side by side, in Hypothesis's own terms (docs/properties.md
"The machine").

Rules draw operations of the operation language (``strategies.DRAWERS``), each acting on a value of a Bundle:
``roots`` (every dataset root), ``branches`` (to fork again) and ``tags`` (``(family, tag)``, what a shallow clone
is made from); a rule that needs a root with a live row or a base, or a non-empty bundle, has a precondition.
After every step two invariants compare what the step touched: every world with the model, and the worlds with
each other. A failure is a program Hypothesis shrinks and prints, one ``state.<rule>(op=<operation>)`` per step;
``read_program`` reads it back, for a replay or an export (``properties.export``).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, multiple, precondition, rule

from conformance import operations as lang
from conformance.model import KNOWN_FINDINGS, Outcome
from conformance.strategies import DRAWERS, draw_create, pick, sources

from .side_by_side import WRITERS, SideBySide
from .worlds import Reader


def modelled(unmodelled: Iterable[str]) -> frozenset[str]:
    """``KNOWN_FINDINGS`` less ``unmodelled`` (all of them for ``all``): a model blind to those, to find them again."""
    dropped = set(unmodelled)
    return frozenset() if "all" in dropped else KNOWN_FINDINGS - dropped


def made(op: lang.Create | lang.Tag | lang.Branch | lang.ShallowClone | lang.DeepClone) -> str | tuple[str, str]:
    """What the step that applied ``op`` adds to its bundles: the new root's directory, or ``(family, tag)``."""
    if isinstance(op, lang.Tag):
        return op.family, op.name
    if isinstance(op, lang.Branch):
        return lang.root_dir(op.family, op.name)
    return op.target if isinstance(op, lang.ShallowClone | lang.DeepClone) else op.root


@st.composite
def _create(draw: st.DrawFn) -> lang.Create:
    return draw_create(draw, draw(st.runner()).side.model)


@st.composite
def _drawn(draw: st.DrawFn, kind: str, source: st.SearchStrategy[Any] | None = None) -> lang.ModelOperation:
    """An operation of ``kind`` for the running machine's model, acting on a value of the bundle ``source`` or,
    without one, on any source the model offers (``strategies.sources``; a precondition keeps it non-empty)."""
    model = draw(st.runner()).side.model
    chosen = draw(source) if source is not None else pick(draw, sources(model, kind))
    return DRAWERS[kind](draw, model, chosen)


def _rule(kind: str, source: Bundle[Any] | None = None, *, makes: tuple[Bundle[Any], ...] = (),
          name: str | None = None) -> Any:
    """The machine's rule ``name`` (default ``kind``): apply an operation of ``kind`` drawn on a value of the
    bundle ``source`` (``_drawn``); what it made joins the bundles ``makes`` (``WriterMachine._make``). Its
    precondition: the model offers a source (without ``source``), or the bundle ``source`` is non-empty (``roots``
    never is)."""

    def step(self: WriterMachine, op: Any) -> Any:
        return self._make(op) if makes else self._step(op) and None

    step.__name__ = step.__qualname__ = name or kind  # Hypothesis prints a step as state.<name>(op=...)
    decorated = rule(targets=makes, op=_drawn(kind, source))(step)
    if source is None:
        return precondition(lambda self: bool(sources(self.side.model, kind)))(decorated)
    if source.name != "roots":
        return precondition(lambda self: bool(self.bundle(source.name)))(decorated)
    return decorated


class WriterMachine(RuleBasedStateMachine):
    """Random programs on the worlds of ``writers`` (keys of ``worlds.DRIVERS``), read by ``readers`` (default:
    each world's own reader); a subclass may set both. Use ``WriterMachine.TestCase``: settings come from
    the active Hypothesis profile, ``stateful_step_count`` bounds a program's length."""

    writers: tuple[str, ...] = WRITERS
    readers: tuple[Reader, ...] | None = None

    roots = Bundle("roots")
    branches = Bundle("branches")
    tags = Bundle("tags")

    def __init__(self) -> None:
        super().__init__()
        self._tmp = Path(tempfile.mkdtemp(prefix="lancespec-machine-"))
        unmodelled = os.environ.get("LANCESPEC_MACHINE_UNMODELLED", "").replace(" ", "").split(",")  # F-028,...|all
        self.side = SideBySide(self._tmp, known=modelled(unmodelled), writers=self.writers, readers=self.readers)
        self.last: tuple[lang.ModelOperation, Outcome] | None = None

    def _step(self, op: lang.ModelOperation) -> Outcome:
        outcome = self.side.apply(op)
        self.last = op, outcome
        event(f"{type(op).__name__}: {outcome.kind}" + (f" ({outcome.finding})" if outcome.finding else ""))
        if outcome.removed:
            event("cleanup removed versions")
        return outcome

    def _make(self, op: lang.Create | lang.Tag | lang.Branch | lang.ShallowClone | lang.DeepClone) -> Any:
        """Apply ``op``; what it made joins the rule's bundles (nothing when a known divergence left the worlds
        as they were)."""
        return made(op) if self._step(op).kind == "ok" else multiple()

    @initialize(target=roots, op=_create())
    def create(self, op: lang.Create) -> Any:
        return self._make(op)

    append = _rule("append", roots)
    delete = _rule("delete")
    add_base = _rule("add_base", roots)
    tag = _rule("tag", roots, makes=(tags,))
    branch = _rule("branch", roots, makes=(roots, branches))
    branch_of_branch = _rule("branch", branches, makes=(roots, branches), name="branch_of_branch")
    shallow_clone = _rule("shallow_clone", tags, makes=(roots,))
    deep_clone = _rule("deep_clone", roots, makes=(roots,))
    relocate = _rule("relocate")
    cleanup = _rule("cleanup", roots)

    @invariant()
    def worlds_match_the_model(self) -> None:
        if self.last is not None:
            self.side.check_model_after(*self.last)

    @invariant()
    def worlds_match_each_other(self) -> None:
        if self.last is not None:
            self.side.check_worlds_after(*self.last)

    def teardown(self) -> None:
        """Every version of every root, unless the program already failed (Hypothesis tears down in a
        ``finally``: the failure in flight is the one to report)."""
        try:
            if self.last is not None and sys.exc_info()[0] is None:
                self.side.check_all()
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)


# --- reading a printed program back ---------------------------------------------------------------------

_PYTEST_PREFIX = re.compile(r"^E(?: {7}|$)")
_CONSTRUCTORS: dict[str, Any] = {**lang.OPERATIONS, "BaseSpec": lang.BaseSpec}


def _value(node: ast.expr, names: dict[str, Any]) -> Any:
    """A literal of the operation language: constants, tuples, operation and ``BaseSpec`` constructors, and
    the names earlier steps bound."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_value(item, names) for item in node.elts)
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CONSTRUCTORS:
        return _CONSTRUCTORS[node.func.id](*(_value(a, names) for a in node.args),
                                           **{str(k.arg): _value(k.value, names) for k in node.keywords})
    raise ValueError(f"line {node.lineno}: {ast.unparse(node)} is not a value of the operation language")


def read_program(text: str) -> list[lang.ModelOperation]:
    """The operations of a writer-machine program as Hypothesis prints it (``state = WriterMachine()`` to
    ``state.teardown()``, also with pytest's ``E`` margin): each ``state.<rule>(op=...)`` step in order;
    ``name = state.<rule>(...)`` binds what the step made (``made``) for the steps after it."""
    lines = [_PYTEST_PREFIX.sub("", line) for line in text.splitlines()]
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("state = ")), None)
    if start is None:
        raise ValueError("no program: expected the lines from `state = WriterMachine()` to `state.teardown()`")
    end = next((i for i in range(start, len(lines)) if lines[i].strip() == "state.teardown()"), len(lines) - 1)
    try:
        tree = ast.parse(textwrap.dedent("\n".join(lines[start:end + 1])))
    except SyntaxError as exc:
        raise ValueError(f"the program does not parse: {exc}") from exc
    names: dict[str, Any] = {}
    ops: list[lang.ModelOperation] = []
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Assign | ast.Expr) else None
        op_arg = [k.value for k in call.keywords if k.arg == "op"] if isinstance(call, ast.Call) else []
        if not op_arg:
            continue  # the machine's construction, an invariant, the teardown
        op = _value(op_arg[0], names)
        ops.append(op)
        if isinstance(statement, ast.Assign):
            names.update((target.id, made(op)) for target in statement.targets if isinstance(target, ast.Name))
    return ops
