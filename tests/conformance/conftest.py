"""Fixtures for the conformance tests: clean datasets built by the reference writer (helpers in
tests/conformance_kit.py), checked clean before a test damages them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("conformance_kit")

from conformance_kit import assert_clean, build_reference_dataset, certify_findings  # noqa: E402


@pytest.fixture
def clean_dataset(tmp_path: Path) -> Callable[..., str]:
    """``clean_dataset(**kind)``: ``build_reference_dataset(tmp_path, **kind)``, asserted to breach no MUST
    requirement before the test alters it; returns the URI to certify."""

    def build(**kind: Any) -> str:
        uri = build_reference_dataset(tmp_path, **kind)
        assert_clean(certify_findings(uri))
        return uri

    return build
