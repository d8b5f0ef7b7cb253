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

# Hypothesis profiles (HYPOTHESIS_PROFILE; docs/properties.md). ``stateful_step_count`` bounds the writer
# machine's sequences (tests/properties/test_machine.py). The example database stays out of the repository:
# dev and thorough keep it in .hypothesis/ (git-ignored) so a failure replays first next time; ci runs
# without one, and prints a reproduction blob for every failure instead.
_SLOW_OK = [HealthCheck.too_slow]
settings.register_profile("dev", max_examples=20, deadline=None, stateful_step_count=12,
                          suppress_health_check=_SLOW_OK)
settings.register_profile("ci", max_examples=60, deadline=None, stateful_step_count=20, database=None,
                          print_blob=True, suppress_health_check=_SLOW_OK)
settings.register_profile("thorough", max_examples=1000, deadline=None, stateful_step_count=30,
                          suppress_health_check=_SLOW_OK)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
