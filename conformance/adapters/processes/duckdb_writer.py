#!/usr/bin/env python3
"""DuckDB with its Lance extension as a writer under certification: SQL only, over lancespec's JSON-lines
contract (docs/writer-contract.md). It runs in its own environment (duckdb + duckdb-extension-lance, made by
``python tools/thirdparty_writers.py install duckdb-lance``) and imports nothing from lancespec.

    lancespec certify-writer --writer "$(python tools/thirdparty_writers.py command duckdb-lance)" \
        --capabilities conformance/adapters/processes/duckdb_writer.toml

The extension is loaded from the file the ``duckdb-extension-lance`` wheel ships (``LOAD '<path>'``): DuckDB's
extension repository is never contacted. A directory is attached as a Lance namespace
(``ATTACH '{folder}' AS ns (TYPE LANCE)``), whose table ``t`` lives at ``{folder}/t.lance``: the capability
file's ``root_suffix = ".lance"`` makes certify-writer name every dataset root so. The operations are the SQL a
user writes: CREATE TABLE ... AS (create), INSERT INTO (append), CREATE OR REPLACE TABLE (overwrite) and
DELETE FROM ... WHERE (delete).
"""

from __future__ import annotations

import glob
import os
import sys
from importlib.metadata import version
from typing import Any

import duckdb
import duckdb_extension_lance
import pyarrow as pa
from contract import CONTRACT, Refused, serve

TYPES = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}



def extension_file() -> str:
    """The Lance extension the wheel bundles (one file under extensions/v{duckdb version}/)."""
    folder = os.path.dirname(duckdb_extension_lance.__file__)
    found = sorted(glob.glob(os.path.join(folder, "extensions", "*", "lance.duckdb_extension")))
    if not found:
        raise Refused("invalid_input", f"no lance.duckdb_extension under {folder}")
    return found[-1]


def quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class Writer:
    def __init__(self) -> None:
        self.con = duckdb.connect()
        self.con.execute(f"LOAD {quoted(extension_file())}")
        self.attached: dict[str, str] = {}

    def table(self, uri: str) -> str:
        """``uri`` = ``{folder}/{name}.lance``: the SQL name of that table in its attached namespace."""
        folder, leaf = uri.rstrip("/").rsplit("/", 1)
        if not leaf.endswith(".lance"):
            raise Refused("invalid_input",
                          f"DuckDB's Lance namespace keeps a table at {{folder}}/{{name}}.lance, not {uri}")
        if folder not in self.attached:
            alias = f"ns{len(self.attached)}"
            self.con.execute(f"ATTACH {quoted(folder)} AS {alias} (TYPE LANCE)")
            self.attached[folder] = alias
        return f'{self.attached[folder]}.main."{leaf[: -len(".lance")]}"'

    def source(self, data: dict[str, Any]) -> str:
        arrays, names = [], []
        for col in data["columns"]:
            if col["type"] not in TYPES:
                raise Refused("invalid_input", f"column type {col['type']} is not written by this adapter")
            arrays.append(pa.array(col["values"], TYPES[col["type"]]))
            names.append(col["name"])
        self.con.register("lancespec_source", pa.Table.from_arrays(arrays, names=names))
        return "SELECT * FROM lancespec_source"

    def op_hello(self, m: dict[str, Any]) -> dict[str, Any]:
        if m.get("contract") != CONTRACT:
            raise Refused("invalid_input", f"this writer speaks {CONTRACT}, not {m.get('contract')}")
        if m.get("storage_options"):
            raise Refused("invalid_input", "this adapter writes to the local disk only")
        extension = version("duckdb-extension-lance")
        return {"writer": "duckdb-lance", "version": f"{extension} (duckdb {duckdb.__version__})"}

    def op_bye(self, m: dict[str, Any]) -> dict[str, Any]:
        return {}

    def op_create(self, m: dict[str, Any]) -> dict[str, Any]:
        name = self.table(m["uri"])
        self.con.execute(f"CREATE TABLE {name} AS {self.source(m['data'])}")
        return {}

    def op_append(self, m: dict[str, Any]) -> dict[str, Any]:
        name = self.table(m["uri"])
        self.con.execute(f"INSERT INTO {name} {self.source(m['data'])}")
        return {}

    def op_overwrite(self, m: dict[str, Any]) -> dict[str, Any]:
        name = self.table(m["uri"])
        self.con.execute(f"CREATE OR REPLACE TABLE {name} AS {self.source(m['data'])}")
        return {}

    def op_delete(self, m: dict[str, Any]) -> dict[str, Any]:
        name = self.table(m["uri"])
        self.con.execute(f"DELETE FROM {name} WHERE {m['predicate']}")
        return {}

    def op_sql(self, m: dict[str, Any]) -> dict[str, Any]:
        """Not part of the contract: one SQL statement on the table at ``uri`` (written ``{table}``), for the
        semantic tests (tests/thirdparty/test_duckdb_writer.py). Answers the rows it returns."""
        rows = self.con.execute(m["statement"].replace("{table}", self.table(m["uri"]))).fetchall()
        return {"rows": [list(r) for r in rows]}


def main() -> int:
    return serve(Writer(), lambda op: f"operation {op!r} has no SQL form in DuckDB's Lance extension",
                 caught=duckdb.Error, typed=False)

if __name__ == "__main__":
    sys.exit(main())
