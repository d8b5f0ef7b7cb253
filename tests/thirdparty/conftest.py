"""Third-party writers: datasets written by LanceDB for Python and for Node, DuckDB and Polars, certified by
lancespec. Every test collected from this folder carries ``pytest.mark.thirdparty``; the tests skip, with the
reason, when the writer is not installed (``pip install 'lancespec[lancedb]'``; ``npm install --prefix
tests/thirdparty/node``; DuckDB's and Polars' environments are made on first use by tools/thirdparty_writers.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.thirdparty)


@pytest.fixture(scope="session")
def lancedb_built(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``lancedb_built(name)``: the database folder of a shape of ``lancedb_shapes``, written with LanceDB
    for Python on first request (read-only after). Skips when LanceDB is not installed."""
    pytest.importorskip("lancedb", reason="LanceDB for Python is not installed (pip install 'lancespec[lancedb]')")
    from lancedb_shapes import SHAPES

    done: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in done:
            folder = tmp_path_factory.mktemp(f"lancedb-{name}") / "db"
            SHAPES[name](folder)
            done[name] = folder
        return done[name]

    return get
