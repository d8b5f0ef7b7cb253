"""A program of the writer machine as a regression scenario: ``lancespec.scenario/1`` (docs/scenario-format.md),
each step expecting what the model says a correct writer leaves, the program kept in ``origin.trace`` so that the
scenario also replays side by side (``scenario_trace``). The ``machine-*`` scenarios of the writer-certification
corpus (conformance/scenarios/data/) were made this way.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from conformance import operations as lang
from conformance.model import BaseModel, Model, VersionModel
from conformance.scenarios import FORMAT as SCENARIO_FORMAT
from conformance.scenarios import parse_scenario

EXPORT_KNOWN = frozenset({"F-027"})
"""The findings the exported expectations keep: a correct writer never writes into a clone's source (F-027);
for the others the expectations say what the reference (and the seeds) do, so pylance's divergent step
fails there and is listed in its capability file."""


class ExportError(ValueError):
    """A program the scenario format cannot express."""


def _location(directory: str) -> str:
    """World-relative directory -> scenario location: roots in ``main``, bases in ``cold``, relocation
    copies in ``warm`` (docs/scenario-format.md "Locations")."""
    if directory.startswith("bases/"):
        name = directory[len("bases/"):]
        return f"{'warm' if name.startswith('m') else 'cold'}:{name}"
    return f"main:{directory}"


def _reference(branch: str | None, version: int | None) -> dict[str, Any]:
    return {"branch": branch, "version": version}


def _base_entry(directory: str, name: str | None, is_root: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"at": _location(directory), "is_dataset_root": is_root}
    if name is not None:
        entry["name"] = name
    return entry


def target_arguments(version: VersionModel, targets: lang.Targets,
                     unnamed: Callable[[BaseModel], str]) -> dict[str, Any]:
    """``targets`` as write options: ``target_all_bases`` for ``"all"`` and ``"bases"``, else ``target_bases`` by
    name (``unnamed(base)`` for a base that has none)."""
    if targets is None:
        return {}
    if targets in ("all", "bases"):
        return {"target_all_bases": targets == "all"}
    bases = [version.base_by_dir(directory) for directory in targets]
    return {"target_bases": [b.name if b.name is not None else unnamed(b) for b in bases]}


def _unnamed(base: BaseModel) -> str:
    raise ExportError(f"target {base.dir} is an unnamed base: scenarios name targets by name")


def _step(op: lang.ModelOperation, before: Model) -> tuple[dict[str, Any], str]:
    """The scenario step that does ``op`` (``before``: the model before it), and the root it leaves to check."""
    step, checked = _arguments(op, before)
    return {"op": op.wire, "dataset": op.root, **step}, checked


def _arguments(op: lang.ModelOperation, before: Model) -> tuple[dict[str, Any], str]:
    """The keys of ``op``'s step besides its name and dataset, and the root it leaves to check."""
    if isinstance(op, lang.Create):
        step: dict[str, Any] = {"at": _location(op.root), "data": {"rows": [op.start, op.count]},
                                "max_rows_per_file": op.max_rows_per_file}
        if op.bases:
            step["bases"] = [_base_entry(b.dir, b.name, b.is_dataset_root) for b in op.bases]
        return {**step, **target_arguments(Model.initial_version(op), op.targets, _unnamed)}, op.root
    if isinstance(op, lang.Append):
        targets = target_arguments(before.roots[op.root].head, op.targets, _unnamed)
        return {"data": {"rows": [op.start, op.count]}, "max_rows_per_file": op.max_rows_per_file,
                **targets}, op.root
    if isinstance(op, lang.Delete):
        return {"predicate": op.predicate}, op.root
    if isinstance(op, lang.AddBase):
        return {"bases": [_base_entry(op.base.dir, op.base.name, op.base.is_dataset_root)]}, op.root
    if isinstance(op, lang.Tag):
        return {"tag": op.name, "reference": _reference(op.branch, op.version)}, op.family
    if isinstance(op, lang.Branch):
        key = lang.root_dir(op.family, op.name)
        return {"branch": op.name, "reference": _reference(op.parent, op.version), "as": key}, key
    if isinstance(op, lang.ShallowClone):
        return {"target": _location(op.target), "reference": op.tag, "as": op.target}, op.target
    if isinstance(op, lang.DeepClone):
        return {"target": _location(op.target), "reference": _reference(op.branch, op.version),
                "as": op.target}, op.target
    if isinstance(op, lang.Relocate):
        head = before.roots[op.root].head
        moves = {}
        for old, new in op.moves:
            base = head.base_by_dir(old)
            moves[base.name if base.name is not None else _location(old)] = _location(new)
        return {"moves": moves, "copy": True}, op.root
    assert isinstance(op, lang.Cleanup)
    step = {"retain_versions": op.retain_versions, "delete_unverified": op.delete_unverified,
            "error_if_tagged_old_versions": op.error_if_tagged, "older_than_seconds": 0 if op.older_than_zero else None}
    return {k: v for k, v in step.items() if v is not None}, op.root


def _expect(model: Model, root_key: str, op: lang.ModelOperation) -> dict[str, Any]:
    if isinstance(op, lang.Tag):
        return {"tags": {op.name: op.version}}
    root = model.roots[root_key]
    head = root.head
    expect: dict[str, Any] = {"version": root.latest, "rows": len(head.live_ids()), "ids": sorted(head.live_ids())}
    if isinstance(op, lang.Cleanup):
        expect["versions"] = sorted(root.versions)
    expect["files"] = dict(Counter(_location(f.data_home) for f in head.fragments))
    if not root.reference_only_bases:  # F-019: a deep clone's bases differ between correct writers' choices
        expect["bases"] = {b.name: _location(b.dir) for b in head.bases if b.name is not None}
        expect["unnamed_bases"] = sorted(_location(b.dir) for b in head.bases if b.name is None)
    if isinstance(op, lang.Branch):
        expect["branches"] = [op.name]
    return expect


def to_scenario(ops: Sequence[lang.ModelOperation], name: str, description: str, *, finding: str | None = None,
                requirements: Sequence[str] = (), error: str = "") -> dict[str, Any]:
    """The scenario document for ``ops``: each step expects the state the model (with ``EXPORT_KNOWN``) says
    a correct writer leaves, or refuses, naming the words the model says the refusal must mention."""
    model = Model(EXPORT_KNOWN)
    steps: list[dict[str, Any]] = []
    for op in ops:
        step, root_key = _step(op, model)
        outcome = model.apply(op)
        if outcome.kind == "divergent":
            raise ExportError(f"{op}: the exported model has no reference behaviour for {outcome.finding}")
        if outcome.kind == "refused":
            step["refuse"] = {"kind": outcome.refusal, "mentions": list(outcome.mentions)}
        else:
            step["expect"] = _expect(model, root_key, op)
        steps.append(step)
    return {
        "format": SCENARIO_FORMAT,
        "name": name,
        "description": description,
        "requirements": list(requirements),
        "steps": steps,
        "origin": {"source": "property-test", "machine": "conformance.properties.machine",
                   "finding": finding, "error": error, "trace": [lang.operation_to_dict(op) for op in ops]},
    }


def export(ops: Sequence[lang.ModelOperation], name: str, directory: Path, description: str, *,
           finding: str | None = None, requirements: Sequence[str] = (), error: str = "") -> Path:
    """Write ``{directory}/{name}.json``, validated against the scenario format first; an existing file is
    never overwritten (scenario names are unique in the corpus)."""
    path = directory / f"{name}.json"
    if path.exists():
        raise ExportError(f"{path} exists: choose another name")
    document = to_scenario(ops, name, description, finding=finding, requirements=requirements, error=error)
    parse_scenario(document, f"{name}.json")
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1) + "\n")
    return path


def scenario_trace(document: Mapping[str, Any]) -> tuple[list[lang.ModelOperation], str | None]:
    """The program an exported scenario carries, and the finding it records."""
    origin = document.get("origin") or {}
    if "trace" not in origin:
        raise ValueError("the scenario carries no machine program (origin.trace)")
    return [cast(lang.ModelOperation, lang.operation_from_dict(o)) for o in origin["trace"]], origin.get("finding")
