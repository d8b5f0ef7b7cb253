"""examples/spark_distributed_write.py runs and certifies clean (small, on the test session)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_distributed_write.py"


def test_distributed_write_example(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pyspark import cloudpickle

    spec = importlib.util.spec_from_file_location("spark_distributed_write", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    cloudpickle.register_pickle_by_value(module)  # executors cannot import the example by name
    try:
        assert module.run(spark, tmp_path, rows=20_000, partitions=4) == 0
    finally:
        cloudpickle.unregister_pickle_by_value(module)
        del sys.modules[spec.name]
    out = capsys.readouterr().out
    assert "create (the recipe by hand): CLEAN: version 1, 20,000 rows in 4 new fragment(s)" in out
    assert "append with write_lance (read version 1): CLEAN: version 2, 2,000 rows" in out
    assert {p.name for p in tmp_path.iterdir()} == {"ds", "base-1", "base-2", "base-3"}
