"""Tag and branch JSON (``_refs/tags/{tag}.json``, ``_refs/branches/{name}.json``) and the version hint.

The key spellings and formatting are those pylance 14.0.2 writes (docs/lance-format.md §11): camelCase keys,
two-space indentation, no trailing newline; tags carry RFC 3339 ``createdAt``/``updatedAt`` strings,
branches an integer ``createAt`` in Unix seconds and a ``identifier.version_mapping`` lineage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..errors import FormatError


def _load_object(data: bytes, where: str) -> dict[str, Any]:
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"not valid JSON: {exc}", where) from exc
    except ValueError as exc:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise FormatError(f"a number too long to be a version: {exc}", where) from exc
    except RecursionError as exc:  # the parser's own bound on nesting: no ref is nested that deep
        raise FormatError("JSON nested too deeply to be a ref", where) from exc
    if not isinstance(obj, dict):
        raise FormatError(f"expected a JSON object, found {type(obj).__name__}", where)
    return obj


def _int_key(obj: dict[str, Any], key: str, where: str, required: bool = True) -> int | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise FormatError(f"missing required key {key!r}", where)
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise FormatError(f"key {key!r} must be a non-negative integer, found {value!r}", where)
    return value


def _str_or_none(obj: dict[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise FormatError(f"key {key!r} must be a string or null, found {value!r}", where)
    return value


def _metadata(obj: dict[str, Any], where: str) -> dict[str, str]:
    value = obj.get("metadata") or {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise FormatError("key 'metadata' must map strings to strings", where)
    return dict(value)


def _dump(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")


def rfc3339_nanos(moment: datetime) -> str:
    """``2026-11-21T22:06:27.083086000Z``: UTC, nanosecond digits, ``Z`` (microsecond precision here)."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond:06d}000Z"


@dataclass(frozen=True)
class TagRecord:
    """A tag: the version (and branch) it names and the size of that version's manifest."""

    version: int
    branch: str | None = None
    manifest_size: int | None = None
    created_at: str | None = None
    updated_at: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        return _dump(
            {
                "branch": self.branch,
                "version": self.version,
                "createdAt": self.created_at,
                "updatedAt": self.updated_at,
                "manifestSize": self.manifest_size,
                "metadata": self.metadata,
            }
        )


def decode_tag(data: bytes, where: str = "") -> TagRecord:
    """Parse a tag file; raise FormatError naming ``where`` when a required key is missing or mistyped."""
    obj = _load_object(data, where)
    version = _int_key(obj, "version", where)
    assert version is not None
    return TagRecord(
        version=version,
        branch=_str_or_none(obj, "branch", where),
        manifest_size=_int_key(obj, "manifestSize", where, required=False),
        created_at=_str_or_none(obj, "createdAt", where),
        updated_at=_str_or_none(obj, "updatedAt", where),
        metadata=_metadata(obj, where),
    )


@dataclass(frozen=True)
class BranchRecord:
    """A branch: its parent branch (None = main), the fork version, and the lineage of branch ids."""

    parent_version: int
    parent_branch: str | None = None
    version_mapping: tuple[tuple[int, str], ...] = ()
    create_at: int | None = None
    manifest_size: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        return _dump(
            {
                "parentBranch": self.parent_branch,
                "identifier": {"version_mapping": [[v, u] for v, u in self.version_mapping]},
                "parentVersion": self.parent_version,
                "createAt": self.create_at,
                "manifestSize": self.manifest_size,
                "metadata": self.metadata,
            }
        )


def decode_branch(data: bytes, where: str = "") -> BranchRecord:
    """Parse a branch file; raise FormatError naming ``where`` when a required key is missing or mistyped."""
    obj = _load_object(data, where)
    parent_version = _int_key(obj, "parentVersion", where)
    assert parent_version is not None
    mapping: list[tuple[int, str]] = []
    identifier = obj.get("identifier")
    if identifier is not None:
        raw = identifier.get("version_mapping", []) if isinstance(identifier, dict) else None
        if not isinstance(raw, list):
            raise FormatError("key 'identifier.version_mapping' must be a list", where)
        for entry in raw:
            match entry:
                case [int() as version, str() as branch_id]:
                    mapping.append((version, branch_id))
                case _:
                    raise FormatError(f"bad identifier.version_mapping entry {entry!r}", where)
    return BranchRecord(
        parent_version=parent_version,
        parent_branch=_str_or_none(obj, "parentBranch", where),
        version_mapping=tuple(mapping),
        create_at=_int_key(obj, "createAt", where, required=False),
        manifest_size=_int_key(obj, "manifestSize", where, required=False),
        metadata=_metadata(obj, where),
    )


def encode_version_hint(version: int) -> bytes:
    """``{"version":N}``: compact, no newline (``_versions/latest_version_hint.json``)."""
    return json.dumps({"version": version}, separators=(",", ":")).encode()


def decode_version_hint(data: bytes) -> int | None:
    """The hinted version, or None when the hint is unusable (a hint is never trusted as truth)."""
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    value = obj.get("version") if isinstance(obj, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
