#!/usr/bin/env python3
"""Polars with polars-lance as a writer under certification, through its public API only (``write_lance``), over
lancespec's JSON-lines contract (docs/writer-contract.md). It runs in its own environment (polars-lance and the
polars it installs, made by ``python tools/thirdparty_writers.py install polars-lance``) and imports nothing from
lancespec.

    lancespec certify-writer --writer "$(python tools/thirdparty_writers.py command polars-lance)" \
        --capabilities conformance/adapters/processes/polars_writer.toml

``write_lance(df, uri, mode=...)`` is the whole write API: mode ``error`` (create), ``append`` and ``overwrite``,
with ``max_rows_per_file``. Reading back is ``scan_lance`` (the ``read`` operation: a reader of the contract).
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Any

import polars as pl
import polars_lance
from contract import ModeWriter, Refused, serve

TYPES = {"int64": pl.Int64, "float64": pl.Float64, "string": pl.String}


class Writer(ModeWriter):
    writer = "polars-lance"
    create_mode = "error"

    def version(self) -> str:
        return f"{version('polars-lance')} (polars {pl.__version__})"

    def frame(self, data: dict[str, Any]) -> pl.DataFrame:
        series = []
        for col in data["columns"]:
            if col["type"] not in TYPES:
                raise Refused("invalid_input", f"column type {col['type']} is not written by this adapter")
            series.append(pl.Series(col["name"], col["values"], dtype=TYPES[col["type"]]))
        return pl.DataFrame(series)

    def write(self, m: dict[str, Any], mode: str) -> dict[str, Any]:
        polars_lance.write_lance(self.frame(m["data"]), m["uri"], mode=mode,
                                 storage_options=self.options or None, max_rows_per_file=m.get("max_rows_per_file"))
        return {}

    def op_read(self, m: dict[str, Any]) -> dict[str, Any]:
        """The latest version's live rows as ``scan_lance(uri).collect(engine=...)`` returns them (``engine``, not
        part of the contract: polars' default ``auto`` unless given; see F-051)."""
        if m.get("version") is not None or m.get("tag") or m.get("branch") or m.get("blob_columns"):
            raise Refused("invalid_input", "scan_lance reads the latest version only")
        frame = polars_lance.scan_lance(m["uri"], storage_options=self.options or None).collect(
            engine=m.get("engine", "auto"))
        return {"num_rows": frame.height,
                "columns": [{"name": name, "values": frame[name].to_list()} for name in frame.columns]}


def main() -> int:
    # a Rust panic surfaces as pyo3's PanicException, a BaseException: answered like any failure
    return serve(Writer(), lambda op: f"polars-lance has no API for {op!r}", caught=BaseException)

if __name__ == "__main__":
    sys.exit(main())
