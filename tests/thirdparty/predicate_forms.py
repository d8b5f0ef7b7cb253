"""The rows and the predicate forms the SQL and dataframe writers' tests delete or replace by (DuckDB's DELETE,
daft-lance's insert_overwrite), each with a plain Python computation of the rows it matches: the second source of
truth those tests compare what the writer left with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Row = dict[str, Any]
IDS = range(20)
ROWS: list[Row] = [{"id": i, "name": None if i % 5 == 4 else f"row-{i}", "value": i * 0.5} for i in IDS]
DATA = {"columns": [{"name": "id", "type": "int64", "values": [r["id"] for r in ROWS]},
                    {"name": "name", "type": "string", "values": [r["name"] for r in ROWS]},
                    {"name": "value", "type": "float64", "values": [r["value"] for r in ROWS]}]}

#: predicate -> the rows it matches (SQL semantics: a NULL comparison matches nothing; `/` divides as DuckDB does,
#: exactly: Lance's own filter dialect divides integers as integers, so its writers skip that form).
MATCHES: dict[str, Callable[[Row], bool]] = {
    "id = 3": lambda r: r["id"] == 3,
    "id >= 15": lambda r: r["id"] >= 15,
    "id < 3 OR id > 17": lambda r: r["id"] < 3 or r["id"] > 17,
    "id > 3 AND id < 6": lambda r: 3 < r["id"] < 6,
    "id IN (1, 2, 7)": lambda r: r["id"] in (1, 2, 7),
    "id NOT IN (1, 2)": lambda r: r["id"] not in (1, 2),
    "id BETWEEN 3 AND 5": lambda r: 3 <= r["id"] <= 5,
    "NOT (id > 2)": lambda r: not r["id"] > 2,
    "id + 1 = 5": lambda r: r["id"] + 1 == 5,
    "id * 2 > 30": lambda r: r["id"] * 2 > 30,
    "id % 3 = 0": lambda r: r["id"] % 3 == 0,
    "id / 2 = 3": lambda r: r["id"] / 2 == 3,
    "abs(id - 10) < 2": lambda r: abs(r["id"] - 10) < 2,
    "value > 5.0": lambda r: r["value"] > 5.0,
    "value = 1.5": lambda r: r["value"] == 1.5,
    "name = 'row-3'": lambda r: r["name"] == "row-3",
    "name LIKE 'row-1%'": lambda r: r["name"] is not None and r["name"].startswith("row-1"),
    "lower(name) = 'row-3'": lambda r: r["name"] is not None and r["name"].lower() == "row-3",
    "name IS NULL": lambda r: r["name"] is None,
    "name IS NOT NULL": lambda r: r["name"] is not None,
    "id < 14 AND value > 5.0": lambda r: r["id"] < 14 and r["value"] > 5.0,
    "value > 5.0 AND id < 14": lambda r: r["value"] > 5.0 and r["id"] < 14,
    "id = 1 OR name = 'row-3'": lambda r: r["id"] == 1 or r["name"] == "row-3",
}
