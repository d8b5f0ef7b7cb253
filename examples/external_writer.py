#!/usr/bin/env python3
"""A writer (and reader) in a separate process, speaking lancespec's JSON-lines contract over stdin/stdout.

It drives pylance, but it only needs what any language has: read a line, parse JSON, do the operation,
print one JSON line. It imports nothing from lancespec on purpose: it is the template for a writer in
another engine or language (docs/writer-contract.md).

    lancespec certify-writer --writer "cmd:python examples/external_writer.py" \
        --capabilities examples/external_writer.capabilities.toml
    lancespec fixtures verify --reader "cmd:python examples/external_writer.py"

Each input line is ``{"id": n, "op": ..., ...}``; each answer is ``{"id": n, "ok": true, "result": {...}}`` or
``{"id": n, "ok": false, "error": {"kind": ..., "message": ...}}``. Diagnostics go to stderr only.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from datetime import timedelta
from typing import Any

import lance
import pyarrow as pa

CONTRACT = "lancespec.writer/1"
TYPES = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}

# pylance reports refusals as OSError/ValueError messages; the contract wants a kind.
KINDS = [
    (r"Duplicate base path ID|Conflict detected: Base path", "duplicate_base"),
    (r"Base reference .* not found in available bases", "unknown_target_base"),
    (r"Ref is invalid|invalid characters|is reserved for the default branch", "invalid_ref_name"),
    (r"Dataset already exists", "dataset_exists"),
    (r"already exists", "ref_exists"),
    (r"Ref not found|Version not found|was not found|does not exist", "ref_not_found"),
]


class Refused(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def kind_of(message: str) -> str:
    for pattern, kind in KINDS:
        if re.search(pattern, message):
            return kind
    return "invalid_input"


class Writer:
    def __init__(self) -> None:
        self.options: dict[str, str] = {}

    # --- helpers ---------------------------------------------------------------------------------

    def opts(self) -> dict[str, str] | None:
        return self.options or None

    def table(self, data: dict[str, Any]) -> pa.Table:
        fields, arrays = [], []
        for col in data["columns"]:
            if col["type"] == "blob":
                fields.append(lance.blob_field(col["name"], **col.get("thresholds", {})))
                arrays.append(lance.blob_array([self.blob(v) for v in col["values"]]))
            else:
                fields.append(pa.field(col["name"], TYPES[col["type"]]))
                arrays.append(pa.array(col["values"], TYPES[col["type"]]))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    @staticmethod
    def blob(value: dict[str, Any] | None) -> Any:
        if value is None:
            return None
        if "base64" in value:
            raw = base64.b64decode(value["base64"])
            return raw if raw else lance.Blob.empty()
        if value.get("position") is not None:
            return lance.Blob.from_uri(value["uri"], position=value["position"], size=value["size"])
        return value["uri"]

    @staticmethod
    def ref(reference: Any) -> Any:
        if isinstance(reference, dict):
            branch = reference.get("branch")
            return (None if branch in (None, "main") else branch, reference.get("version"))
        return reference

    def bases(self, items: list[dict[str, Any]] | None) -> list[Any]:
        return [lance.DatasetBasePath(b["path"], name=b.get("name"), is_dataset_root=bool(b.get("is_dataset_root")),
                                      id=b.get("id")) for b in items or []]

    def ds(self, uri: str, version: Any = None) -> Any:
        return lance.dataset(uri, version=version, storage_options=self.opts())

    def write(self, m: dict[str, Any], mode: str, **extra: Any) -> None:
        kwargs: dict[str, Any] = {"mode": mode, "storage_options": self.opts(), **extra}
        for key in ("max_rows_per_file", "target_bases", "target_all_bases"):
            if m.get(key) is not None:
                kwargs[key] = m[key]
        if mode == "create" and any(c["type"] == "blob" for c in m["data"]["columns"]):
            kwargs["data_storage_version"] = "2.2"
        lance.write_dataset(self.table(m["data"]), m["uri"], **kwargs)

    # --- writer operations -----------------------------------------------------------------------

    def op_hello(self, m: dict[str, Any]) -> dict[str, Any]:
        if m.get("contract") != CONTRACT:
            raise Refused("invalid_input", f"this writer speaks {CONTRACT}, not {m.get('contract')}")
        self.options = dict(m.get("storage_options") or {})
        return {"writer": "external-pylance-example", "version": lance.__version__}

    def op_bye(self, m: dict[str, Any]) -> dict[str, Any]:
        return {}

    def op_create(self, m: dict[str, Any]) -> dict[str, Any]:
        extra: dict[str, Any] = {"enable_v2_manifest_paths": m.get("manifest_naming", "v2") != "v1"}
        if m.get("bases"):
            extra["initial_bases"] = self.bases(m["bases"])
        self.write(m, "create", **extra)
        return {}

    def op_append(self, m: dict[str, Any]) -> dict[str, Any]:
        self.write(m, "append")
        return {}

    def op_overwrite(self, m: dict[str, Any]) -> dict[str, Any]:
        self.write(m, "overwrite")
        return {}

    def op_delete(self, m: dict[str, Any]) -> dict[str, Any]:
        self.ds(m["uri"]).delete(m["predicate"])
        return {}

    def op_add_bases(self, m: dict[str, Any]) -> dict[str, Any]:
        self.ds(m["uri"]).add_bases(self.bases(m.get("bases")))
        return {}

    def op_tag_create(self, m: dict[str, Any]) -> dict[str, Any]:
        self.ds(m["uri"]).tags.create(m["tag"], self.ref(m.get("reference")))
        return {}

    def op_tag_update(self, m: dict[str, Any]) -> dict[str, Any]:
        self.ds(m["uri"]).tags.update(m["tag"], self.ref(m.get("reference")))
        return {}

    def op_tag_delete(self, m: dict[str, Any]) -> dict[str, Any]:
        self.ds(m["main_uri"]).tags.delete(m["tag"])
        return {}

    def op_branch_create(self, m: dict[str, Any]) -> dict[str, Any]:
        self.ds(m["uri"]).create_branch(m["branch"], self.ref(m.get("reference")))
        return {}

    def op_branch_delete(self, m: dict[str, Any]) -> dict[str, Any]:
        self.ds(m["main_uri"]).branches.delete(m["branch"])
        return {}

    def op_shallow_clone(self, m: dict[str, Any]) -> dict[str, Any]:
        self.ds(m["uri"]).shallow_clone(m["target_uri"], self.ref(m.get("reference")), storage_options=self.opts())
        return {}

    def op_deep_clone(self, m: dict[str, Any]) -> dict[str, Any]:
        self.ds(m["uri"]).deep_clone(m["target_uri"], self.ref(m.get("reference")), storage_options=self.opts())
        return {}

    def op_cleanup(self, m: dict[str, Any]) -> dict[str, Any]:
        older = m.get("older_than_seconds")
        stats = self.ds(m["uri"]).cleanup_old_versions(
            older_than=None if older is None else timedelta(seconds=older), retain_versions=m.get("retain_versions"),
            delete_unverified=bool(m.get("delete_unverified")),
            error_if_tagged_old_versions=bool(m.get("error_if_tagged_old_versions", True)))
        return {"old_versions": stats.old_versions}

    # --- reader operations -----------------------------------------------------------------------

    def _selected(self, m: dict[str, Any]) -> Any:
        uri = f"{m['uri'].rstrip('/')}/tree/{m['branch']}" if m.get("branch") else m["uri"]
        return self.ds(uri, m.get("tag") or m.get("version"))

    def op_read(self, m: dict[str, Any]) -> dict[str, Any]:
        ds = self._selected(m)
        blob_columns = list(m.get("blob_columns") or [])
        names = [n for n in ds.schema.names if n not in blob_columns]
        table = ds.to_table(columns=names, with_row_id=False)
        columns = []
        for name in names:
            values = table.column(name).to_pylist()
            if pa.types.is_binary(table.schema.field(name).type):
                values = [None if v is None else {"base64": base64.b64encode(v).decode()} for v in values]
            columns.append({"name": name, "values": values})
        blobs = {}
        for name in blob_columns:
            files = ds.take_blobs(name, indices=list(range(ds.count_rows())))
            blobs[name] = [None if f is None else base64.b64encode(f.readall()).decode() for f in files]
        return {"num_rows": ds.count_rows(), "columns": columns, "blobs": blobs}

    def op_files(self, m: dict[str, Any]) -> dict[str, Any]:
        ds = self._selected(m)
        bases = ds.base_paths()
        branch = ds.tags.list()[m["tag"]].get("branch") if m.get("tag") else m.get("branch")
        root = f"{m['uri'].rstrip('/')}/tree/{branch}" if branch else m["uri"].rstrip("/")
        out = []

        def where(base_id: Any, sub: str) -> str:
            if base_id is None:
                return f"{root}/{sub}"
            base = bases[base_id]
            return f"{base.path.rstrip('/')}/{sub}" if base.is_dataset_root else base.path.rstrip("/")

        for fragment in ds.get_fragments():
            meta = fragment.metadata
            for f in meta.files:
                out.append(f"{where(f.base_id, 'data')}/{f.path}")
            d = meta.deletion_file
            if d is not None:
                ext = "arrow" if str(d.file_type).lower().endswith("array") or d.file_type == 0 else "bin"
                out.append(f"{where(d.base_id, '_deletions')}/{meta.id}-{d.read_version}-{d.id}.{ext}")
        return {"files": sorted(out)}


def main() -> int:
    writer = Writer()
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        op = message.get("op")
        handler = getattr(writer, f"op_{op}", None)
        try:
            if handler is None:
                raise Refused("unsupported", f"operation {op!r} is not supported by this writer")
            answer = {"id": message.get("id"), "ok": True, "result": handler(message)}
        except Refused as exc:
            answer = {"id": message.get("id"), "ok": False, "error": {"kind": exc.kind, "message": str(exc)}}
        except (OSError, ValueError, TypeError, RuntimeError) as exc:
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            answer = {"id": message.get("id"), "ok": False, "error": {"kind": kind_of(text), "message": text}}
        print(json.dumps(answer, ensure_ascii=False), flush=True)
        if op == "bye":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
