"""What the commands share: the parser class, exit codes, option types, storage and limit options, report
output. Every value a dataset controls is printed through ``printable`` (docs/security.md)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

from reference.errors import InvalidOption
from reference.limits import DEFAULT_LIMITS, LIMIT_OPTIONS, Limits
from reference.printable import Rendered, printable
from reference.store.uri import is_file_uri, local_path

from ..destination import write_rendered, write_text

R = TypeVar("R")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_UNREADABLE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

#: The largest version number there is (versions are u64).
MAX_VERSION = 2**64 - 1


class Parser(argparse.ArgumentParser):
    """Command-line mistakes in one line (``lancespec: error: ...``, exit 2), not the usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_UNREADABLE, f"{self.prog}: error: {printable(message)} (see {self.prog} --help)\n")


def version_number(text: str) -> int:
    """An argparse type: a version, a decimal integer in [0, 2^64 - 1] (checked before converting, so a
    number of thousands of digits is refused in one line)."""
    digits = text.strip()
    if not digits.isdigit() or not digits.isascii() or len(digits) > len(str(MAX_VERSION)) \
            or int(digits) > MAX_VERSION:
        raise argparse.ArgumentTypeError(f"a version is an integer from 0 to {MAX_VERSION}, not {printable(text, 40)}")
    return int(digits)


def positive_count(text: str) -> int:
    """An argparse type: a positive integer of at most 19 digits (a limit)."""
    digits = text.strip()
    if not digits.isdigit() or not digits.isascii() or len(digits) > 19 or int(digits) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer of at most 19 digits, not {printable(text, 40)}")
    return int(digits)


def dataset_uri(text: str) -> str:
    """An argparse type: a dataset root, refused when empty (an empty path would name the working directory,
    which no one asked to certify: issue 32). A local root, given as a path or a ``file:`` URI, becomes its
    canonical path: its links are the user's, resolved once here (none below it is followed:
    ``reference.store.local._no_link_on_the_way``), and the names listed below it are read as they are
    (appended to a ``file:`` URI, a name holding ``%41`` would be decoded into another name)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the dataset URI is empty")
    if is_file_uri(text):
        return os.path.realpath(local_path(text))
    if not _SCHEME.match(text):
        return os.path.realpath(text)
    return text  # a URI, well formed or not (``s3:/x`` is the store's to refuse, naming what is wrong)


#: A URI's scheme and colon (``s3:``, ``file:``, ``gs:``); a local path has none.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    """Every limit of ``reference.limits.LIMIT_OPTIONS`` (``--max-object-bytes``, ``--max-fragments``, ...)."""
    for name, what in LIMIT_OPTIONS.items():
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=positive_count, metavar="N",
                            default=getattr(DEFAULT_LIMITS, name), help=f"{what} (default %(default)s)")


def limits_of(args: argparse.Namespace) -> Limits:
    """The limits the command line asked for."""
    return Limits(**{name: getattr(args, name) for name in LIMIT_OPTIONS})


def add_storage_options(parser: argparse.ArgumentParser) -> None:
    """``--storage-option KEY=VALUE`` (repeatable) and ``--io-parallelism N``."""
    parser.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a pylance-style storage option (aws_endpoint, aws_region, allow_http, connect_timeout, "
                        "timeout, ...); repeat")
    parser.add_argument("--io-parallelism", type=int, metavar="N",
                        help="requests in flight at once (default 32; storage option lancespec_io_parallelism)")


def parse_storage_options(pairs: Sequence[str], flag: str = "--storage-option") -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; InvalidOption on an entry without ``=``, a key no store accepts
    (``reference.store.option_keys``) or a value no store could use (``CloudOptions``: a control character, a
    duration that is not finite, a port past 65535), whichever store the run reads: a local run took
    ``timeout=inf`` without a word (issue 32). Every command that takes storage options parses them here,
    before it starts anything."""
    from reference.errors import StoreConfigError
    from reference.store.cloud_options import CloudOptions
    from reference.store.option_keys import parse_storage_options as parse

    options = parse(pairs, flag)
    try:
        CloudOptions(options)
    except StoreConfigError as exc:
        raise InvalidOption(f"{flag}: {exc}") from None
    return options


class Areas(Sequence[str]):
    """The ``--only`` choices: the areas of the registered checks (``conformance.checks.areas``), the one list
    the help, the error message and the certify page's filter show. Read on first use, so that building the
    parser imports no check."""

    def _names(self) -> list[str]:
        from conformance.checks import areas

        return areas()

    def __getitem__(self, index: Any) -> Any:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, value: object) -> bool:
        return value in self._names()


AREAS = Areas()


def add_area_option(parser: argparse.ArgumentParser) -> None:
    """``--only AREA`` (repeatable), one of ``AREAS``."""
    parser.add_argument("--only", action="append", choices=AREAS, metavar="AREA",
                        help="run only this area's checks: %(choices)s; repeat")


def exits(own: str) -> str:
    """A command's exit statuses for its help: ``own`` (0 and 1), then those every command shares."""
    return (f"Exit {own}, 2 the command line is wrong or the input cannot be read, 3 a lancespec bug, "
            "130 interrupted (docs/exit-codes.md).")


def add_quiet_option(parser: argparse.ArgumentParser) -> None:
    """``--quiet``: the verdict line alone (a report still goes to ``--output``); no progress bar."""
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print only the verdict line (the report still goes to --output); no progress bar")


class DeprecatedSpelling(argparse.Action):
    """An old spelling kept for users' scripts (``--json FILE`` for ``--format json --output FILE``): one line
    on stderr names the new one; the report then goes out in ``fmt`` (to the FILE given, if any) beside the
    one ``--format`` asks for (``report_targets``)."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, fmt: str, **kwargs: Any) -> None:
        self.fmt = fmt
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        path = values if isinstance(values, str) else None
        new = f"--format {self.fmt}" + (" --output FILE" if path is not None else "")
        sys.stderr.write(f"{parser.prog}: warning: {option_string} is deprecated; use {new}\n")
        if path is None:  # a flag (inspect --json): the format itself
            namespace.format = self.fmt
        else:
            namespace.also = [*getattr(namespace, "also", []), (self.fmt, path)]


def add_report_options(parser: argparse.ArgumentParser, formats: Sequence[str], format_help: str | None = None,
                       output_help: str = "write the report here (a text summary still goes to stderr for the "
                       "other formats)") -> None:
    """``--format`` (one of ``formats``, default text), ``--output FILE`` and ``--quiet``."""
    parser.add_argument("--format", choices=formats, default="text", help=format_help)
    parser.add_argument("--output", metavar="FILE", help=output_help)
    add_quiet_option(parser)


#: What a command leaves for the process's end to free (``leave_to_exit``).
LEFT_TO_EXIT: list[object] = []


def leave_to_exit(*objects: object) -> None:
    """Keep ``objects`` (a run's store and report: a million listed files, their tails) until the process
    ends: when the process is the command, ``exit_now`` ends it without freeing them one by one (0.7 s after a
    run over a million data files); a caller's ``main(argv)`` frees them as it returns."""
    LEFT_TO_EXIT.extend(objects)


def report_targets(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """Where the report goes: (format, file or None for stdout), ``--format``/``--output`` first, then the
    deprecated spellings'."""
    return [(args.format, args.output), *getattr(args, "also", [])]


def check_report_options(args: argparse.Namespace) -> None:
    """Refuse, before any work, what cannot be honoured: ``--quiet`` with a report for stdout in another
    format than text (the verdict line would be all there is of it)."""
    if getattr(args, "quiet", False) and getattr(args, "format", "text") != "text" and not getattr(args, "output", 1):
        raise InvalidOption(f"--quiet prints only the verdict line: give --output FILE for the {args.format} report")


def emit_report(report: R, renderers: Mapping[str, Callable[[R], Rendered]], args: argparse.Namespace) -> None:
    """Write ``report`` where ``report_targets`` say: each to its file, or to stdout. When nothing went to
    stdout in text, the text report goes to stderr (formats other than text) so the verdict is seen; with
    ``--quiet`` only the verdict line (the text report's first line) is printed, on stdout."""
    targets = report_targets(args)
    for fmt, path in targets:
        if path is not None:
            write_text(path, renderers[fmt](report))
    text = renderers["text"](report)
    assert isinstance(text, str)
    if getattr(args, "quiet", False):
        sys.stdout.write(text.splitlines()[0] + "\n")
        return
    for fmt, path in targets:
        if path is None:
            write_rendered(sys.stdout, text if fmt == "text" else renderers[fmt](report))
    if all(path is not None for _, path in targets) and any(fmt != "text" for fmt, _ in targets):
        sys.stderr.write(text)
