"""Interop tests: datasets written by pylance 14.0.2 and read by lancespec.

Every test collected from this folder carries ``pytest.mark.interop``. The shapes of
``conformance.shapes`` are built lazily, each at most once per session, into a directory of
``tmp_path_factory``; tests must treat them as read-only (copy a shape before changing it).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conformance.shapes import SHAPES, Shape

_HERE = Path(__file__).resolve().parent

SHAPE_NAMES = sorted(SHAPES)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.interop)


@pytest.fixture(scope="session")
def build_shape(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Shape]:
    """``build_shape(name)``: the shape, built on first request and reused for the rest of the session."""
    built: dict[str, Shape] = {}

    def get(name: str) -> Shape:
        if name not in built:
            built[name] = SHAPES[name](tmp_path_factory.mktemp(f"shape-{name}"))
        return built[name]

    return get


@pytest.fixture(params=SHAPE_NAMES)
def shape(request: pytest.FixtureRequest, build_shape: Callable[[str], Shape]) -> Shape:
    """Each shape in turn (read-only)."""
    return build_shape(request.param)


@pytest.fixture
def copy_tree(tmp_path: Path) -> Callable[[str], Path]:
    """``copy_tree(dir)``: a private copy of a directory (e.g. a shape's root) to damage or rewrite."""

    def copy(src: str) -> Path:
        dst = tmp_path / f"copy-{Path(src).name}"
        shutil.copytree(src, dst)
        return dst

    return copy
