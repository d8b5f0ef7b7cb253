"""What every writer (and reader) adapter shares: the ``lancespec.writer/1`` message form, refusals with
an error kind, capability files, and the conversion of contract data to Arrow.

The contract (docs/writer-contract.md) is the adapter interface: the runner builds one JSON-able message
per operation and hands it to ``WriterSession.apply``. In-process adapters (the reference, pylance) get
the very dict an external process reads from its stdin, so every writer is driven identically.
"""

from __future__ import annotations

import base64
import fnmatch
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from lancespec.reference.errors import ERROR_KINDS, ContractError, WriterRefusal

CONTRACT = "lancespec.writer/1"


class WriterSession(Protocol):
    """One connection to a writer for one scenario run."""

    def apply(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Carry out one operation; raise WriterRefusal when the writer refuses it."""

    def close(self) -> None: ...


class Writer(Protocol):
    name: str
    capabilities: Capabilities

    def version(self) -> str: ...

    def open(self, storage_options: Mapping[str, str]) -> WriterSession: ...


# --- capability files ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Divergence:
    """A listed, expected divergence: ``scenario`` (a glob on scenario names), ``step`` (an index, or 0 for
    the content comparison with the reference, -1 for certification), the finding id and why."""

    scenario: str
    step: int
    finding: str
    reason: str
    stores: tuple[str, ...] = ("local", "s3")
    versions: tuple[str, ...] = ()  # globs on the writer's version; empty: every version


@dataclass(frozen=True)
class Capabilities:
    """What a writer declares about itself (a TOML file; docs/writer-contract.md "Capability files")."""

    writer: str
    exact_error_kinds: bool = True
    unsupported: Mapping[str, str] = field(default_factory=dict)
    divergences: tuple[Divergence, ...] = ()
    source: str = ""
    version: str = ""  # the version of the writer under test (set by its adapter), for ``versions`` globs

    def unsupported_reason(self, op: str) -> str | None:
        return self.unsupported.get(op)

    def divergence(self, scenario: str, step: int, store: str) -> Divergence | None:
        for d in self.divergences:
            if d.versions and not any(fnmatch.fnmatchcase(self.version, v) for v in d.versions):
                continue
            if d.step == step and store in d.stores and fnmatch.fnmatchcase(scenario, d.scenario):
                return d
        return None

    @classmethod
    def load(cls, path: str | Path) -> Capabilities:
        text = Path(path).read_text(encoding="utf-8")
        return cls.parse(tomllib.loads(text), str(path))

    @classmethod
    def parse(cls, doc: Mapping[str, Any], source: str = "<capabilities>") -> Capabilities:
        known = {"writer", "exact_error_kinds", "unsupported", "divergence"}
        unknown = set(doc) - known
        if unknown:
            raise ValueError(f"{source}: unknown key(s) {sorted(unknown)}; known: {sorted(known)}")
        unsupported = {}
        for op, reason in dict(doc.get("unsupported", {})).items():
            if not isinstance(reason, str) or not reason:
                raise ValueError(f"{source}: unsupported.{op} must be a reason (a sentence)")
            unsupported[str(op)] = reason
        divergences = []
        for entry in doc.get("divergence", []):
            missing = {"scenario", "step", "finding", "reason"} - set(entry)
            if missing:
                raise ValueError(f"{source}: a [[divergence]] needs {sorted(missing)}")
            divergences.append(Divergence(str(entry["scenario"]), int(entry["step"]), str(entry["finding"]),
                                          str(entry["reason"]), tuple(entry.get("stores", ("local", "s3"))),
                                          tuple(entry.get("versions", ()))))
        return cls(str(doc.get("writer", "")), bool(doc.get("exact_error_kinds", True)), unsupported,
                   tuple(divergences), source)


def builtin_capabilities(name: str) -> Capabilities:
    """The shipped capability file of a built-in writer (``reference``, ``pylance``)."""
    path = resources.files("lancespec.conformance.adapters") / "capabilities" / f"{name}.toml"
    return Capabilities.parse(tomllib.loads(path.read_text(encoding="utf-8")), f"capabilities/{name}.toml")


# --- data -----------------------------------------------------------------------------------------

_PLAIN_TYPES = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}


def blob_bytes(value: Mapping[str, Any]) -> bytes:
    return base64.b64decode(value["base64"])


def table_from_message(data: Mapping[str, Any], blob_value: Any = None) -> pa.Table:
    """The Arrow table a contract ``data`` object describes.

    ``blob_value(item)`` turns one blob item (``{"base64"}``, ``{"uri", "position"?, "size"?}`` or None)
    into what ``lance.blob_array`` takes; the default maps bytes to bytes, an empty value to
    ``lance.Blob.empty()`` and URIs to ``lance.Blob.from_uri``.
    """
    import lance

    def default_blob(item: Any) -> Any:
        if item is None:
            return None
        if "base64" in item:
            raw = blob_bytes(item)
            return raw if raw else lance.Blob.empty()
        if item.get("position") is not None:
            return lance.Blob.from_uri(item["uri"], position=item["position"], size=item["size"])
        return item["uri"]

    convert = blob_value or default_blob
    arrays = []
    fields = []
    for column in data["columns"]:
        name, kind = column["name"], column["type"]
        if kind in _PLAIN_TYPES:
            fields.append(pa.field(name, _PLAIN_TYPES[kind]))
            arrays.append(pa.array(column["values"], _PLAIN_TYPES[kind]))
        elif kind == "blob":
            fields.append(lance.blob_field(name, **dict(column.get("thresholds", {}))))
            arrays.append(lance.blob_array([convert(v) for v in column["values"]]))
        else:
            raise ContractError(f"unknown column type {kind!r}")
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def has_blobs(data: Mapping[str, Any] | None) -> bool:
    return bool(data) and any(c["type"] == "blob" for c in data["columns"])  # type: ignore[index]


def reference_tuple(reference: Any) -> Any:
    """A contract reference (null, int, tag string, {branch, version}) as pylance takes it."""
    if isinstance(reference, dict):
        branch = reference.get("branch")
        return (None if branch in (None, "main") else branch, reference.get("version"))
    return reference


__all__ = [
    "CONTRACT",
    "ERROR_KINDS",
    "Capabilities",
    "ContractError",
    "Divergence",
    "Writer",
    "WriterRefusal",
    "WriterSession",
    "blob_bytes",
    "builtin_capabilities",
    "has_blobs",
    "reference_tuple",
    "table_from_message",
]
