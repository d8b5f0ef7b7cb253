"""Fixtures of the report tests: golden corpus cases materialised once per session, and a headless
Chromium from the system's packages driven by Playwright. Helpers live in tests/report_kit.py."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from report_kit import CASES

from conformance.corpus.portable import materialize


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``corpus(case)``: the case's ``data/`` materialised (placeholder paths rewritten) once per session."""
    made: dict[str, Path] = {}

    def get(case: str) -> Path:
        if case not in made:
            made[case] = materialize(CASES / case / "data", tmp_path_factory.mktemp("corpus") / case)
        return made[case]

    return get


def _chromium() -> str | None:
    return next((found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium from the system's packages, driven by Playwright; skipped, saying which is missing."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright is not installed (pip install 'lancespec[report]')")
    executable = _chromium()
    if executable is None:
        pytest.skip("no Chromium on PATH (apt-get install chromium; setup.sh does where it can)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable)
        try:
            yield launched
        finally:
            launched.close()
