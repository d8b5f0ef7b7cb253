#!/usr/bin/env python3
"""Daft with daft-lance as a writer under certification, through its public API only (``daft_lance.write_lance``),
over lancespec's JSON-lines contract (docs/writer-contract.md). It runs in its own environment (daft, daft-lance
and the pylance they resolve, made by ``python tools/thirdparty_writers.py install daft-lance``) and imports
nothing from lancespec.

    lancespec certify-writer --writer "$(python tools/thirdparty_writers.py command daft-lance)" \\
        --capabilities conformance/adapters/processes/daft_writer.toml

``write_lance(df, uri, mode=...)``: mode ``create``, ``append`` and ``overwrite``, with ``max_rows_per_file``
and ``storage_options`` passed on to Lance; ``insert_overwrite`` with ``overwrite_where`` (replace the rows a
predicate matches) is the ``insert_overwrite`` operation, not part of the contract
(tests/thirdparty/test_daft_lance.py).
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Any

import daft
import daft_lance
import pyarrow as pa
from contract import ModeWriter, Refused, serve

TYPES = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}



def frame(data: dict[str, Any]) -> Any:
    fields, arrays = [], []
    for col in data["columns"]:
        if col["type"] not in TYPES:
            raise Refused("invalid_input", f"column type {col['type']} is not written by this adapter")
        fields.append(pa.field(col["name"], TYPES[col["type"]]))
        arrays.append(pa.array(col["values"], TYPES[col["type"]]))
    return daft.from_arrow(pa.Table.from_arrays(arrays, schema=pa.schema(fields)))


class Writer(ModeWriter):
    writer = "daft-lance"

    def version(self) -> str:
        return f"{version('daft-lance')} (daft {version('daft')}, pylance {version('pylance')})"

    def write(self, m: dict[str, Any], mode: str, **extra: Any) -> dict[str, Any]:
        if self.options:
            extra["storage_options"] = self.options
        if m.get("max_rows_per_file") is not None:
            extra["max_rows_per_file"] = m["max_rows_per_file"]
        daft_lance.write_lance(frame(m["data"]), m["uri"], mode=mode, **extra)
        return {}

    def op_insert_overwrite(self, m: dict[str, Any]) -> dict[str, Any]:
        """Not part of the contract: replace the rows ``where`` matches with ``data`` (one commit)."""
        return self.write(m, "insert_overwrite", overwrite_where=m["where"])

    def op_compact(self, m: dict[str, Any]) -> dict[str, Any]:
        """Not part of the contract: ``daft_lance.compact_files(uri, compaction_options=...)``."""
        daft_lance.compact_files(m["uri"], storage_options=self.options or None,
                                 compaction_options=m.get("compaction_options"))
        return {}

    def op_read(self, m: dict[str, Any]) -> dict[str, Any]:
        """The latest version's live rows as ``daft_lance.read_lance(uri)`` returns them."""
        if m.get("version") is not None or m.get("tag") or m.get("branch") or m.get("blob_columns"):
            raise Refused("invalid_input", "this adapter reads the latest version only")
        table = daft_lance.read_lance(m["uri"]).to_pydict()
        return {"num_rows": len(next(iter(table.values()), [])),
                "columns": [{"name": name, "values": values} for name, values in table.items()]}


def main() -> int:
    return serve(Writer(), lambda op: f"daft-lance has no API for {op!r}")

if __name__ == "__main__":
    sys.exit(main())
