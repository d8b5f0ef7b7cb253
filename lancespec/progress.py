"""A progress bar on standard error for long runs, silent when standard error is not a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from reference.printable import printable


@contextmanager
def progress_bar(title: str, quiet: bool = False) -> Iterator[Callable[[int, int, str], None]]:
    """Yields ``update(done, total, description)``; draws only on an interactive stderr, and not when
    ``quiet``."""
    if quiet or not sys.stderr.isatty():
        yield lambda done, total, description: None
        return
    with Progress(TextColumn(f"{title} [progress.description]{{task.description}}"), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("", total=None)

        def update(done: int, total: int, description: str) -> None:
            bar.update(task, completed=done, total=total, description=escape(printable(description, 80)))

        yield update
