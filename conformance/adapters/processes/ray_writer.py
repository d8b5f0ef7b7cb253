#!/usr/bin/env python3
"""Ray Data with lance-ray as a writer under certification, through its public API only
(``lance_ray.write_lance``), over lancespec's JSON-lines contract (docs/writer-contract.md). It runs in its own
environment (ray[data], lance-ray and the pylance they resolve, made by
``python tools/thirdparty_writers.py install lance-ray``) and imports nothing from lancespec. Ray is started
in-process with one CPU at the first write; whatever Ray prints goes to stderr (the answers keep the original stdout).

    lancespec certify-writer --writer "$(python tools/thirdparty_writers.py command lance-ray)" \\
        --capabilities conformance/adapters/processes/ray_writer.toml

``write_lance(ray.data.from_arrow(table), uri, mode=...)``: ``create``, ``append`` and ``overwrite``, with
``max_rows_per_file``, ``initial_bases``, ``target_bases``, ``data_storage_version`` and ``storage_options``.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version
from typing import Any

from contract import ModeWriter, Refused, serve

ANSWERS = os.fdopen(os.dup(1), "w", encoding="utf-8")  # the contract's stdout; fd 1 itself now goes to stderr
os.dup2(2, 1)
sys.stdout = sys.stderr

import lance  # noqa: E402  (after the stdout swap: nothing they print may reach the answers)
import lance_ray  # noqa: E402
import pyarrow as pa  # noqa: E402
import ray  # noqa: E402

TYPES = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}



def table(data: dict[str, Any]) -> pa.Table:
    fields, arrays = [], []
    for col in data["columns"]:
        if col["type"] not in TYPES:
            raise Refused("invalid_input", f"column type {col['type']} is not written by this adapter")
        fields.append(pa.field(col["name"], TYPES[col["type"]]))
        arrays.append(pa.array(col["values"], TYPES[col["type"]]))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


class Writer(ModeWriter):
    writer = "lance-ray"

    def version(self) -> str:
        return f"{version('lance-ray')} (ray {ray.__version__}, pylance {lance.__version__})"

    def write(self, m: dict[str, Any], mode: str) -> dict[str, Any]:
        if not ray.is_initialized():  # here, not at hello: a scenario whose steps are all skipped starts no Ray
            ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
        kwargs: dict[str, Any] = {"mode": mode, "storage_options": self.options or None, "min_rows_per_file": 1}
        if m.get("max_rows_per_file") is not None:
            kwargs["max_rows_per_file"] = m["max_rows_per_file"]
        if m.get("target_bases"):
            kwargs["target_bases"] = m["target_bases"]
        if mode == "create":
            if m.get("bases"):
                kwargs["initial_bases"] = [
                    lance.DatasetBasePath(b["path"], name=b.get("name"), is_dataset_root=bool(b.get("is_dataset_root")),
                                          id=b.get("id")) for b in m["bases"]]
            if m.get("data_storage_version"):
                kwargs["data_storage_version"] = m["data_storage_version"]
        lance_ray.write_lance(ray.data.from_arrow(table(m["data"])), m["uri"], **kwargs)
        return {}


def main() -> int:
    code = serve(Writer(), lambda op: f"lance-ray has no API for {op!r}", out=ANSWERS)
    if ray.is_initialized():
        ray.shutdown()
    return code

if __name__ == "__main__":
    sys.exit(main())
