"""Spark tests: every test collected here carries ``pytest.mark.spark`` and shares one local[2] session.

The whole folder is skipped, with the reason, when pyspark or a Java runtime is missing (``bash setup.sh``
installs both); otherwise the session starts once (5 to 10 s), bound to 127.0.0.1 with the UI off.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.spark.session import spark_unavailable

_HERE = Path(__file__).resolve().parent
_WHY_NOT = spark_unavailable()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.spark)
            if _WHY_NOT is not None:
                item.add_marker(pytest.mark.skip(reason=f"Spark tests need pyspark and Java: {_WHY_NOT}"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] SparkSession for the session: loopback only, UI off, two shuffle partitions."""
    if _WHY_NOT is not None:
        pytest.skip(f"Spark tests need pyspark and Java: {_WHY_NOT}")
    from conformance.spark import spark_session

    session = spark_session("local[2]", app_name="lancespec-tests",
                            conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    try:
        yield session
    finally:
        session.stop()
