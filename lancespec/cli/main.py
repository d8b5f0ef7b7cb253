"""The ``lancespec`` command line: the parser of every command and the one place exit codes are decided.

Exit status (every path: docs/exit-codes.md): 0 success, 1 a breach (certify) or a failure (the other
commands), 2 the input cannot be read for the reader's setup (``CannotRead``: "lancespec: cannot read: ...",
one line naming the cause and what to do, no requirement id), cannot be judged, or the command line is wrong
(one line on stderr naming the file or the option and the problem, no traceback: a ``LanceSpecError``),
3 an internal error (a bug in lancespec: any other exception, one line saying where; certify still
writes the report of what it checked before; set LANCESPEC_DEBUG=1 for the traceback), 130 interrupted
(Ctrl-C). Every value a dataset controls is printed through ``printable`` (docs/security.md).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from reference.collector import fewer_full_collections
from reference.errors import CannotRead, InvalidOption, LanceSpecError
from reference.printable import printable

from .options import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_UNREADABLE,
    LEFT_TO_EXIT,
    Parser,
    add_quiet_option,
    check_report_options,
    emit_report,
)


def _leaves(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers of the commands themselves (``fixtures verify``, not ``fixtures``)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [parser]
    return [leaf for action in subs for child in dict.fromkeys(action.choices.values()) for leaf in _leaves(child)]


def build_parser() -> argparse.ArgumentParser:
    """Every command, each with ``--quiet`` (``options.add_quiet_option``; added here to those that do not
    add it with their report options)."""
    from reference import __version__

    from . import certify, fixtures, inspect, scenarios, serve, simulate, spark, store

    parser = Parser(prog="lancespec", description="Conformance tools for the Lance table format. Every command "
                    "takes --quiet; those that report take --format and --output; each one's --help gives its "
                    "exit statuses.")
    parser.add_argument("-V", "--version", action="version", version=f"lancespec {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for family in (inspect, certify, fixtures, scenarios, spark, simulate, store, serve):
        family.register(sub)
    for leaf in _leaves(parser):
        if not any("--quiet" in a.option_strings for a in leaf._actions):
            add_quiet_option(leaf)
    return parser


def main(argv: Sequence[str] | None = None, *, parser: argparse.ArgumentParser | None = None) -> int:
    """The ``lancespec`` command. The commands are imported here, inside the handler of Ctrl-C. ``parser``: one
    ``build_parser`` made before, for a caller that runs many commands in one process (the fuzzer's worker: the
    parser of every command costs about 7 ms to build)."""
    try:
        parser = parser or build_parser()
        args = parser.parse_args(argv)
        func: Callable[[argparse.Namespace], int] = args.func
        code = _run_command(parser, func, args)
    except KeyboardInterrupt:
        # Children (servers, writers, Spark) are stopped by the context managers the interrupt unwound. When this
        # process is the command (argv from its command line), a SIGINT still pending (one press can be seen
        # twice while a library loads) must not end the exit by a signal; a caller's own process is left alone.
        if argv is None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("lancespec: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    finally:
        if argv is not None:  # a caller's process: what the command left to the end is its to free
            LEFT_TO_EXIT.clear()
    if argv is None:
        exit_now(code)
    return code


def exit_now(code: int) -> NoReturn:
    """End this process, the command, with ``code``: the threads it started that are not daemons are waited for,
    the exit handlers run (codec and tail-reading children, Spark, temporary folders) and the streams are
    flushed, then the process ends at once, freeing nothing one by one. After a Ctrl-C it is also the only
    sure way to exit 130: seen under strace, with one SIGINT sent as pyarrow loads, the interrupt caught and the
    line printed, the interpreter still set SIGINT to its default at exit and killed itself with it (3 runs in
    65), as Python 3.11 does when it believes a KeyboardInterrupt went unhandled (0 in 80 ending here)."""
    import atexit
    import threading

    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _run_command(parser: argparse.ArgumentParser, func: Callable[[argparse.Namespace], int],
                 args: argparse.Namespace) -> int:
    try:
        check_report_options(args)
        with fewer_full_collections():
            return func(args)
    except InvalidOption as exc:
        parser.error(str(exc))
    except CannotRead as exc:
        if exc.report is not None:  # certify's report saying so, for a program that asked for one
            from . import certify

            certify.emit_cannot_read(exc.report, args)
        where = f"{printable(exc.where)}: " if exc.where else ""
        print(f"lancespec: cannot read: {where}{printable(exc.message)}", file=sys.stderr)
        return EXIT_UNREADABLE
    except LanceSpecError as exc:
        where = f"{printable(exc.where)}: " if exc.where else ""
        print(f"lancespec: error: {where}{printable(exc.message)}", file=sys.stderr)
        return EXIT_UNREADABLE
    except Exception as exc:  # a bug: say so in one line unless asked for the traceback
        from conformance.certify import CertifyError, bug_site

        if isinstance(exc, CertifyError):  # a check failed: certify's report of what was checked before
            from . import certify

            if exc.report is not None and hasattr(args, "format"):  # a command that reports (certify, spark-certify)
                emit_report(exc.report, certify.renderers(args), args)
            if os.environ.get("LANCESPEC_DEBUG"):
                raise
            print(f"lancespec: internal error (a bug in lancespec): {printable(exc)}", file=sys.stderr)
            return EXIT_INTERNAL
        if os.environ.get("LANCESPEC_DEBUG"):
            raise
        print(f"lancespec: internal error: {type(exc).__name__}: {printable(exc)} (at {bug_site(exc)}; "
              "set LANCESPEC_DEBUG=1 for details)", file=sys.stderr)
        return EXIT_INTERNAL
