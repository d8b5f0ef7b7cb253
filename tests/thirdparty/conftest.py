"""Third-party writers: datasets written by LanceDB for Python and for Node, certified by lancespec. Every
test collected from this folder carries ``pytest.mark.thirdparty``; the tests skip, with the reason, when
the writer is not installed (``pip install 'lancespec[lancedb]'``; ``npm ci`` in tests/thirdparty/node)."""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.thirdparty)
