"""What the commands share: the parser class, exit codes, option types, storage and limit options, report
output. Every value a dataset controls is printed through ``printable`` (docs/security.md)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn, TypeVar

from lancespec.reference.errors import InvalidOption, StorageError
from lancespec.reference.limits import DEFAULT_LIMITS, LIMIT_OPTIONS, Limits
from lancespec.reference.printable import printable

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
    which no one asked to certify: issue 32)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the dataset URI is empty")
    if "://" not in text:  # a local path: its links are the user's, resolved once here; none below it is
        return os.path.realpath(text)  # followed (reference.store.local._no_link_on_the_way)
    return text


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


def parse_storage_options(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; InvalidOption on an entry without ``=``."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidOption(f"--storage-option expects KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


def check_areas(only: Sequence[str] | None) -> None:
    """Refuse ``--only`` areas no check belongs to, naming the ones there are."""
    from lancespec.conformance.checks import all_checks

    areas = sorted({c.area for c in all_checks().values()})
    unknown = sorted(set(only or ()) - set(areas))
    if unknown:
        raise InvalidOption(f"unknown area(s) {', '.join(unknown)} for --only; choose from {', '.join(areas)}")


def emit_report(report: R, renderers: Mapping[str, Callable[[R], str]], fmt: str, output: str | None) -> None:
    """Write ``report`` in ``fmt`` to ``output`` (then a text summary goes to stderr unless ``fmt`` is text),
    or to stdout. A file that cannot be written is a StorageError naming it."""
    text = renderers[fmt](report)
    if output:
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise StorageError(f"cannot write the report: {exc.strerror or exc}", output) from exc
        if fmt != "text":
            sys.stderr.write(renderers["text"](report))
    else:
        sys.stdout.write(text)
