"""The writer machine's command: replay a failing program side by side, or export it as a regression scenario
(docs/properties.md "When the machine fails").

``add_arguments`` fills a parser and ``run`` carries out the parsed command, for the ``lancespec`` command line to
mount; ``main`` is ``python -m conformance.machine``. A program is a text file holding the program
Hypothesis printed (``read_program``) or a scenario this command exported (its ``origin.trace``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from conformance.operations import ModelOperation as Operation
from conformance.scenarios import builtin_dir
from reference.errors import LanceSpecError

from .export import ExportError, export, scenario_trace
from .machine import modelled, read_program
from .side_by_side import first_failure, replay


def load_program(path: str) -> list[Operation]:
    """The operations of a printed program or of an exported scenario."""
    text = Path(path).read_text()
    if text.lstrip().startswith("{"):
        return scenario_trace(json.loads(text))[0]
    return read_program(text)


def _replay(args: argparse.Namespace) -> int:
    ops = load_program(args.program)
    with tempfile.TemporaryDirectory(prefix="lancespec-replay-") as tmp:
        try:
            replay(ops, Path(tmp), known=modelled(args.unmodelled or []))
        except Exception as exc:
            print(f"{len(ops)} operations: {type(exc).__name__}: {exc}")
            return 1
    print(f"{len(ops)} operations replayed; the writers and the model agree")
    return 0


def _export(args: argparse.Namespace) -> int:
    """The program must still diverge with ``--finding`` unmodelled: its first divergence is kept as the
    scenario's ``origin.error``."""
    ops = load_program(args.program)
    error = ""
    if args.finding:
        error = first_failure(ops, modelled([args.finding]))
        if not error:
            raise ExportError(f"the program does not diverge with {args.finding} unmodelled: nothing to keep")
    description = args.description or f"Found by the writer machine: {error}"
    print(export(ops, args.name, Path(args.to), description, finding=args.finding,
                 requirements=args.requirement or [], error=error))
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``replay`` and ``export`` subcommands."""
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("replay", help="run a program side by side again; exit 1 when it diverges")
    p.add_argument("program", help="the program Hypothesis printed (a text file), or an exported scenario")
    p.add_argument("--unmodelled", action="append", help="a finding the model should not branch on (repeat; all)")
    p.set_defaults(func=_replay)
    p = sub.add_parser("export", help="turn a program into a regression scenario (lancespec.scenario/1)")
    p.add_argument("program", help="the program Hypothesis printed (a text file), or an exported scenario")
    p.add_argument("--name", required=True, help="scenario name ([a-z0-9-]+)")
    p.add_argument("--to", default=str(builtin_dir()),
                   help="directory (default: the writer-certification corpus, %(default)s)")
    p.add_argument("--description")
    p.add_argument("--finding", help="the spec/findings.md entry the scenario keeps (the program must show it)")
    p.add_argument("--requirement", action="append", help="a requirement id it exercises (repeat)")
    p.set_defaults(func=_export)


def run(args: argparse.Namespace) -> int:
    """Carry out a parsed command: 0 done (replay: the writers agree), 1 the replay diverges, 2 an unreadable
    program or an inexpressible export (one line on stderr)."""
    try:
        result: int = args.func(args)
    except (OSError, ValueError, KeyError, LanceSpecError) as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.machine",
                                     description="Replay or export a program of the writer machine.")
    add_arguments(parser)
    return run(parser.parse_args(argv))
