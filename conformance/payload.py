"""What a writing operation writes: the plain rows ``rows(start, count)``, or a blob v2 column (``Blobs``).

An operation names its rows by ``start`` and ``count`` (ids ``start .. start+count-1``; the other columns
follow from the id), so every writer writes the same table and a reader's output compares against
``expected_rows``. ``table`` builds the Arrow table an in-process writer takes; ``columns`` the explicit
``data`` object of the JSON-lines contract (docs/writer-contract.md), for a writer in another process.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

__all__ = ["Blob", "Blobs", "columns", "expected_rows", "rows", "table"]

Locate = Callable[[str], str]
"""Resolves a site-relative location (an external blob's) to a URI."""


def rows(start: int, count: int) -> pa.Table:
    """``id = start .. start+count-1`` with a string and a float column derived from it."""
    ids = list(range(start, start + count))
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"row-{i}" for i in ids], pa.string()),
                     "value": pa.array([i * 0.5 for i in ids], pa.float64())})


def expected_rows(ids: Iterable[int]) -> list[dict[str, Any]]:
    """The rows ``rows`` makes for these ids, in this order, as plain dicts: written out once more, not
    derived from the Arrow table, so a reader's output compares against an independent statement."""
    return [{"id": i, "name": f"row-{i}", "value": i * 0.5} for i in ids]


@dataclass(frozen=True)
class Blob:
    """One value of a blob column: ``text`` (its UTF-8 bytes; ``""`` is the empty blob), ``fill`` repeated
    ``size`` times, or the external object at location ``at`` (its ``position``, ``size`` range if given)."""

    text: str | None = None
    fill: int | None = None
    size: int | None = None
    at: str | None = None
    position: int | None = None

    def content(self) -> bytes | None:
        """The bytes of a managed value (None for an external one)."""
        if self.text is not None:
            return self.text.encode("utf-8")
        if self.fill is not None:
            return bytes([self.fill]) * int(self.size or 0)
        return None


@dataclass(frozen=True)
class Blobs:
    """A blob v2 column ``blob`` (None: a null value) beside ``id``, instead of the plain rows; ``thresholds``
    are the field's ``lance-encoding:blob-*`` settings (the Blob v2 post "Thresholds")."""

    values: tuple[Blob | None, ...]
    thresholds: tuple[tuple[str, int], ...] = ()


def _items(data: Blobs, locate: Locate) -> list[dict[str, Any] | None]:
    """Each value as ``{"bytes"}`` or ``{"uri", "position", "size"}`` (None: a null value)."""
    out: list[dict[str, Any] | None] = []
    for blob in data.values:
        if blob is None or blob.content() is not None:
            out.append(None if blob is None else {"bytes": blob.content()})
        else:
            out.append({"uri": locate(str(blob.at)), "position": blob.position, "size": blob.size})
    return out


def table(start: int, count: int, data: Blobs | None, locate: Locate) -> pa.Table:
    """The Arrow table of ``rows(start, count)``, or of ``data`` with ids from ``start``."""
    if data is None:
        return rows(start, count)
    import lance

    def value(item: dict[str, Any] | None) -> Any:
        if item is None or "bytes" in item:
            return None if item is None else item["bytes"] or lance.Blob.empty()
        if item["position"] is None:
            return item["uri"]
        return lance.Blob.from_uri(item["uri"], position=item["position"], size=item["size"])

    values = [value(item) for item in _items(data, locate)]
    thresholds: dict[str, Any] = dict(data.thresholds)
    schema = pa.schema([pa.field("id", pa.int64()), lance.blob_field("blob", **thresholds)])
    return pa.Table.from_arrays([pa.array(range(start, start + len(values)), pa.int64()), lance.blob_array(values)],
                                schema=schema)


def columns(start: int, count: int, data: Blobs | None, locate: Locate) -> dict[str, Any]:
    """The contract ``data`` object (explicit columns) of the same table."""
    if data is None:
        ids = list(range(start, start + count))
        return {"columns": [{"name": "id", "type": "int64", "values": ids},
                            {"name": "name", "type": "string", "values": [f"row-{i}" for i in ids]},
                            {"name": "value", "type": "float64", "values": [i * 0.5 for i in ids]}]}
    items = [None if item is None else {"base64": base64.b64encode(item["bytes"]).decode("ascii")} if "bytes" in item
             else {k: v for k, v in item.items() if v is not None} for item in _items(data, locate)]
    column: dict[str, Any] = {"name": "blob", "type": "blob", "values": items}
    if data.thresholds:
        column["thresholds"] = dict(data.thresholds)
    return {"columns": [{"name": "id", "type": "int64", "values": list(range(start, start + len(items)))}, column]}
