"""Test-suite wide configuration: Hypothesis settings profiles, chosen by HYPOTHESIS_PROFILE.

Tiers (markers in pyproject.toml): unit (pure, fast), interop (real pylance), s3 (embedded S3 server on
127.0.0.1), spark (local Spark), slow (run on request with ``-m slow``).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["pytester"]

# Shared test kits live in tests/ (on pythonpath); rewrite their asserts for readable failures.
pytest.register_assert_rewrite("store_contract")

settings.register_profile("dev", max_examples=20, deadline=None)
settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
