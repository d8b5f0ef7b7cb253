"""pylance behind the writer contract (in process).

pylance's refusals are ``OSError``/``ValueError`` whose message names the problem; ``error_kind`` maps
the message to a contract kind (docs/lance-format.md §16.8: messages end with a Rust source location).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from .base import Capabilities, WriterRefusal, builtin_capabilities, has_blobs, reference_tuple, table_from_message

_KINDS: tuple[tuple[str, str], ...] = (
    (r"Duplicate base path ID|Conflict detected: Base path", "duplicate_base"),
    (r"Base reference .* not found in available bases", "unknown_target_base"),
    (r"Ref is invalid|invalid characters|is reserved for the default branch", "invalid_ref_name"),
    (r"Ref conflict error: .* already exists|already exists", "ref_exists"),
    (r"Ref not found|Version not found|was not found|does not exist", "ref_not_found"),
    (r"is not a valid absolute URI|relative path", "invalid_base_path"),
)


def error_kind(message: str) -> str:
    """The contract error kind of a pylance error message."""
    if "Dataset already exists" in message:
        return "dataset_exists"
    for pattern, kind in _KINDS:
        if re.search(pattern, message):
            return kind
    return "invalid_input"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class PylanceSession:
    def __init__(self, storage_options: Mapping[str, str]) -> None:
        import lance

        self.lance = lance
        self.options = dict(storage_options)

    def _ds(self, uri: str) -> Any:
        return self.lance.dataset(uri, storage_options=self.options or None)

    def _bases(self, items: Any) -> list[Any]:
        return [self.lance.DatasetBasePath(b["path"], name=b.get("name"),
                                           is_dataset_root=bool(b.get("is_dataset_root")), id=b.get("id"))
                for b in items or []]

    def apply(self, message: Mapping[str, Any]) -> dict[str, Any]:
        handler: Callable[[Mapping[str, Any]], Any] | None = getattr(self, f"op_{message['op']}", None)
        if handler is None:
            raise WriterRefusal("invalid_input", f"operation {message['op']!r} is not supported by pylance")
        try:
            handler(message)
        except (OSError, ValueError, TypeError, RuntimeError) as exc:
            raise WriterRefusal(error_kind(str(exc)), _first_line(exc)) from exc
        return {}

    def _write(self, m: Mapping[str, Any], mode: str, **extra: Any) -> None:
        kwargs: dict[str, Any] = {"mode": mode, "storage_options": self.options or None, **extra}
        if m.get("max_rows_per_file"):
            kwargs["max_rows_per_file"] = m["max_rows_per_file"]
        if m.get("target_bases") is not None:
            kwargs["target_bases"] = m["target_bases"]
        if m.get("target_all_bases") is not None:
            kwargs["target_all_bases"] = m["target_all_bases"]
        if has_blobs(m["data"]) and mode == "create":
            kwargs["data_storage_version"] = "2.2"
        self.lance.write_dataset(table_from_message(m["data"]), m["uri"], **kwargs)

    def op_create(self, m: Mapping[str, Any]) -> None:
        extra: dict[str, Any] = {"enable_v2_manifest_paths": m.get("manifest_naming", "v2") != "v1"}
        if m.get("bases"):
            extra["initial_bases"] = self._bases(m["bases"])
        if m.get("data_storage_version"):
            extra["data_storage_version"] = m["data_storage_version"]
        self._write(m, "create", **extra)

    def op_append(self, m: Mapping[str, Any]) -> None:
        self._write(m, "append")

    def op_overwrite(self, m: Mapping[str, Any]) -> None:
        self._write(m, "overwrite")

    def op_delete(self, m: Mapping[str, Any]) -> None:
        self._ds(m["uri"]).delete(m["predicate"])

    def op_add_bases(self, m: Mapping[str, Any]) -> None:
        self._ds(m["uri"]).add_bases(self._bases(m.get("bases")))

    def op_tag_create(self, m: Mapping[str, Any]) -> None:
        self._ds(m["uri"]).tags.create(m["tag"], reference_tuple(m.get("reference")))

    def op_tag_update(self, m: Mapping[str, Any]) -> None:
        self._ds(m["uri"]).tags.update(m["tag"], reference_tuple(m.get("reference")))

    def op_tag_delete(self, m: Mapping[str, Any]) -> None:
        self._ds(m["main_uri"]).tags.delete(m["tag"])

    def op_branch_create(self, m: Mapping[str, Any]) -> None:
        self._ds(m["uri"]).create_branch(m["branch"], reference_tuple(m.get("reference")))

    def op_branch_delete(self, m: Mapping[str, Any]) -> None:
        self._ds(m["main_uri"]).branches.delete(m["branch"])

    def op_shallow_clone(self, m: Mapping[str, Any]) -> None:
        self._ds(m["uri"]).shallow_clone(m["target_uri"], reference_tuple(m.get("reference")),
                                         storage_options=self.options or None)

    def op_deep_clone(self, m: Mapping[str, Any]) -> None:
        self._ds(m["uri"]).deep_clone(m["target_uri"], reference_tuple(m.get("reference")),
                                      storage_options=self.options or None)

    def op_cleanup(self, m: Mapping[str, Any]) -> None:
        older = m.get("older_than_seconds")
        self._ds(m["uri"]).cleanup_old_versions(
            older_than=None if older is None else timedelta(seconds=older),
            retain_versions=m.get("retain_versions"),
            delete_unverified=bool(m.get("delete_unverified", False)),
            error_if_tagged_old_versions=bool(m.get("error_if_tagged_old_versions", True)))

    def close(self) -> None:
        pass


class PylanceWriter:
    name = "pylance"

    def __init__(self, capabilities: Capabilities | None = None) -> None:
        import lance

        caps = capabilities or builtin_capabilities("pylance")
        self.capabilities = dataclasses.replace(caps, version=str(lance.__version__))

    def version(self) -> str:
        import lance

        return f"pylance {lance.__version__}"

    def open(self, storage_options: Mapping[str, str]) -> PylanceSession:
        return PylanceSession(storage_options)
