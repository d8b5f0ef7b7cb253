"""The reference writer (``lancespec.reference.api``) behind the writer contract."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from lancespec.reference import __version__, ops
from lancespec.reference import api as ref
from lancespec.reference.errors import DatasetNotFound, LanceSpecError, WriterRefusal
from lancespec.reference.store import open_store
from lancespec.reference.table import Dataset

from .base import Capabilities, builtin_capabilities, has_blobs, reference_tuple, table_from_message


def _bases(items: Any) -> list[ref.DatasetBasePath]:
    return [ref.DatasetBasePath(b["path"], name=b.get("name"), is_dataset_root=bool(b.get("is_dataset_root")),
                                id=b.get("id")) for b in items or []]


class ReferenceSession:
    """One store (one S3 client) for the whole session; handles opened on it."""

    def __init__(self, storage_options: Mapping[str, str]) -> None:
        self.options = dict(storage_options)
        self.storage = open_store(self.options)

    def _root(self, uri: str) -> Dataset:
        root = Dataset(uri, self.storage)
        if not root.version_entries():
            raise DatasetNotFound("no dataset here: _versions/ holds no manifest", root.uri)
        return root

    def _open(self, message: Mapping[str, Any]) -> ref.LanceDataset:
        root = self._root(message["main_uri"])
        if message.get("on_branch"):
            root = root.branch(message["on_branch"])
        elif message["uri"] != message["main_uri"]:
            root = self._root(message["uri"])
        return ref.LanceDataset(root, None, self.options)

    def _main(self, message: Mapping[str, Any]) -> ref.LanceDataset:
        return ref.LanceDataset(self._root(message["main_uri"]), None, self.options)

    def apply(self, message: Mapping[str, Any]) -> dict[str, Any]:
        handler: Callable[[Mapping[str, Any]], Any] | None = getattr(self, f"op_{message['op']}", None)
        if handler is None:
            raise WriterRefusal("invalid_input", f"operation {message['op']!r} is not supported")
        try:
            handler(message)
        except LanceSpecError as exc:  # every refusal carries its contract error kind (reference.errors)
            raise WriterRefusal(exc.kind, str(exc)) from exc
        return {}

    def _write_kwargs(self, m: Mapping[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"storage_options": self.options}
        if m.get("max_rows_per_file"):
            kwargs["max_rows_per_file"] = m["max_rows_per_file"]
        if m.get("target_bases") is not None:
            kwargs["target_bases"] = m["target_bases"]
        if m.get("target_all_bases") is not None:
            kwargs["target_all_bases"] = m["target_all_bases"]
        return kwargs

    def op_create(self, m: Mapping[str, Any]) -> None:
        version = m.get("data_storage_version") or ("2.2" if has_blobs(m["data"]) else None)
        kwargs = self._write_kwargs(m)
        del kwargs["storage_options"]
        ops.create(m["uri"], table_from_message(m["data"]), storage=self.storage, initial_bases=_bases(m.get("bases")),
                   enable_v2_manifest_paths=m.get("manifest_naming", "v2") != "v1", data_storage_version=version,
                   **kwargs)

    def op_append(self, m: Mapping[str, Any]) -> None:
        kwargs = self._write_kwargs(m)
        del kwargs["storage_options"]
        ops.append(self._open(m)._root, table_from_message(m["data"]), **kwargs)

    def op_overwrite(self, m: Mapping[str, Any]) -> None:
        kwargs = self._write_kwargs(m)
        del kwargs["storage_options"]
        ops.overwrite(self._open(m)._root, table_from_message(m["data"]), **kwargs)

    def op_delete(self, m: Mapping[str, Any]) -> None:
        self._open(m).delete(m["predicate"])

    def op_add_bases(self, m: Mapping[str, Any]) -> None:
        self._open(m).add_bases(_bases(m.get("bases")))

    def op_tag_create(self, m: Mapping[str, Any]) -> None:
        self._open(m).tags.create(m["tag"], reference_tuple(m.get("reference")))

    def op_tag_update(self, m: Mapping[str, Any]) -> None:
        self._open(m).tags.update(m["tag"], reference_tuple(m.get("reference")))

    def op_tag_delete(self, m: Mapping[str, Any]) -> None:
        self._main(m).tags.delete(m["tag"])

    def op_branch_create(self, m: Mapping[str, Any]) -> None:
        self._open(m).create_branch(m["branch"], reference_tuple(m.get("reference")))

    def op_branch_delete(self, m: Mapping[str, Any]) -> None:
        self._main(m).branches.delete(m["branch"])

    def op_shallow_clone(self, m: Mapping[str, Any]) -> None:
        self._open(m).shallow_clone(m["target_uri"], reference_tuple(m.get("reference")))

    def op_deep_clone(self, m: Mapping[str, Any]) -> None:
        self._open(m).deep_clone(m["target_uri"], reference_tuple(m.get("reference")))

    def op_relocate(self, m: Mapping[str, Any]) -> None:
        self._open(m).relocate(dict(m.get("moves") or {}), m.get("adopt_from"))

    def op_cleanup(self, m: Mapping[str, Any]) -> None:
        older = m.get("older_than_seconds")
        self._open(m).cleanup_old_versions(
            older_than=None if older is None else timedelta(seconds=older),
            retain_versions=m.get("retain_versions"),
            delete_unverified=bool(m.get("delete_unverified", False)),
            error_if_tagged_old_versions=bool(m.get("error_if_tagged_old_versions", True)))

    def close(self) -> None:
        pass


class ReferenceWriter:
    name = "reference"

    def __init__(self, capabilities: Capabilities | None = None) -> None:
        self.capabilities = capabilities or builtin_capabilities("reference")

    def version(self) -> str:
        return f"lancespec {__version__}"

    def open(self, storage_options: Mapping[str, str]) -> ReferenceSession:
        return ReferenceSession(storage_options)
