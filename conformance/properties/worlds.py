"""One *world*: a scratch folder one writer writes and any reader reads. Its locations are world-relative, as in
the operation language (``ds``, ``ds/tree/f1``, ``c2``, ``bases/b3``), so two worlds and the model compare root by
root."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import lance

from lancespec.conformance import operations as lang
from lancespec.conformance.model import BaseModel, Model, RootModel, VersionModel
from lancespec.conformance.payload import rows
from lancespec.reference import api as ref
from lancespec.reference.relocate import relocate
from lancespec.reference.table import Dataset

Reader = Literal["reference", "pylance"]

DRIVERS: dict[str, Any] = {"reference": ref, "pylance": lance}
"""The writers a world can be written by, each a pylance-shaped module (``write_dataset``, ``dataset``,
``DatasetBasePath``): the reference's ``lancespec.reference.api`` and pylance 14.0.2 itself."""


@dataclass(frozen=True)
class Layout:
    """A version's structure with locations made world-relative (comparable across worlds and to the model):
    bases ``(name, is_dataset_root, directory, file_uri)`` and fragments ``(id, rows, data-file directories,
    deleted rows, deletion-file root)``."""

    bases: tuple[tuple[str | None, bool, str, bool], ...]
    fragments: tuple[tuple[int, int, tuple[str, ...], int, str | None], ...]


def model_layout(root: RootModel, version: int) -> Layout:
    """The layout the model says ``version`` of ``root`` has."""
    v = root.versions[version]
    bases = tuple(sorted(((b.name, b.is_dataset_root, b.dir, b.file_uri) for b in v.bases), key=repr))
    frags = tuple((f.id, len(f.rows), (f.data_home,), len(f.deleted), f.deletion_home) for f in v.fragments)
    return Layout(bases, frags)


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


def head_before(model: Model, op: lang.ModelOperation) -> VersionModel:
    """The latest version of the root ``op`` writes, as ``model`` has it (empty: no such root yet)."""
    written = model.roots.get(op.root)
    return written.head if written is not None else VersionModel()


def _parent(uri: str) -> str:
    return uri.rsplit("/", 1)[0]


class World:
    """One scratch folder written by the writer ``writer`` (a key of ``DRIVERS``)."""

    def __init__(self, directory: Path, writer: str) -> None:
        self.dir = directory
        self.writer = writer
        self.api = DRIVERS[writer]
        self.reader: Reader = "pylance" if writer == "pylance" else "reference"
        """The reader of this world's own writer (the reference reads for a writer that is no reader)."""
        self.dir.mkdir(parents=True, exist_ok=True)

    def uri(self, key: str) -> str:
        return str(self.dir / key)

    def relative(self, uri: str) -> str:
        """A path or ``file://`` URI below this world, made world-relative."""
        path = uri[len("file://"):] if uri.startswith("file://") else uri
        prefix = str(self.dir) + "/"
        return path[len(prefix):] if path.startswith(prefix) else path

    # --- writing --------------------------------------------------------------------------------

    def registered(self, directory: str, file_uri: bool) -> str:
        """The path string a base at ``directory`` is registered with."""
        return f"file://{self.uri(directory)}" if file_uri else self.uri(directory)

    def _registered(self, base: BaseModel) -> str:
        return self.registered(base.dir, base.file_uri)

    def _base(self, spec: lang.BaseSpec) -> Any:
        return self.api.DatasetBasePath(self.registered(spec.dir, spec.file_uri), name=spec.name,
                                        is_dataset_root=spec.is_dataset_root)

    def apply(self, op: lang.ModelOperation, head: VersionModel, target: str | None = None) -> None:
        """Apply ``op`` as this world's writer does it; ``head`` is the model's latest version of the root ``op``
        writes, before ``op`` (``head_before``). ``target`` redirects the root a create, append, delete or
        add_base writes, or the directory a deep clone creates (a scratch probe)."""
        api = self.api
        uri = target or self.uri(getattr(op, "root", ""))
        if isinstance(op, lang.Create):
            api.write_dataset(rows(op.start, op.count), uri,
                              initial_bases=[self._base(b) for b in op.bases] or None,
                              max_rows_per_file=op.max_rows_per_file,
                              **target_arguments(Model.initial_version(op), op.targets, self._registered))
        elif isinstance(op, lang.Append):
            api.write_dataset(rows(op.start, op.count), uri, mode="append", max_rows_per_file=op.max_rows_per_file,
                              **target_arguments(head, op.targets, self._registered))
        elif isinstance(op, lang.Delete):
            api.dataset(uri).delete(op.predicate)
        elif isinstance(op, lang.AddBase):
            api.dataset(uri).add_bases([self._base(op.base)])
        elif isinstance(op, lang.Tag):
            api.dataset(self.uri(op.family)).tags.create(op.name, (op.branch, op.version))
        elif isinstance(op, lang.Branch):
            api.dataset(self.uri(op.family)).create_branch(op.name, (op.parent, op.version))
        elif isinstance(op, lang.ShallowClone):
            api.dataset(self.uri(op.family)).shallow_clone(self.uri(op.target), op.tag)
        elif isinstance(op, lang.DeepClone):
            api.dataset(self.uri(op.family)).deep_clone(target or self.uri(op.target), (op.branch, op.version))
        elif isinstance(op, lang.Relocate):
            self._relocate(op, head)
        elif isinstance(op, lang.Cleanup):
            api.dataset(self.uri(op.root)).cleanup_old_versions(
                older_than=timedelta(0) if op.older_than_zero else None, retain_versions=op.retain_versions,
                delete_unverified=op.delete_unverified, error_if_tagged_old_versions=op.error_if_tagged)
        else:  # pragma: no cover - the operation language is closed
            raise TypeError(f"unknown operation {op!r}")

    def _relocate(self, op: lang.Relocate, head: VersionModel) -> None:
        """Copy the base directories, then rewrite the base paths with the reference: pylance 14.0.2 cannot
        (docs/lance-format.md §10.4), so the reference relocates whatever dataset this world's writer wrote,
        as an operator would."""
        for old, new in op.moves:
            if os.path.isdir(self.uri(old)):
                shutil.copytree(self.uri(old), self.uri(new))
            else:  # nothing was ever written to the base
                os.makedirs(self.uri(new))
        relocate(Dataset(self.uri(op.root)),
                 {self.registered(old, head.base_by_dir(old).file_uri): self.uri(new) for old, new in op.moves})

    # --- reading --------------------------------------------------------------------------------

    def versions(self, root: str, reader: Reader) -> list[int]:
        if reader == "reference":
            return Dataset(self.uri(root)).versions()
        return [int(v["version"]) for v in lance.dataset(self.uri(root)).versions()]

    def rows(self, root: str, version: int, reader: Reader) -> list[dict[str, Any]]:
        module = ref if reader == "reference" else lance
        return list(module.dataset(self.uri(root), version=version).to_table().to_pylist())

    def layout(self, root: str, version: int) -> Layout:
        """The version's structure, read through the reference's resolution (which the resolution laws
        hold to the Storage Layout spec)."""
        snap = Dataset(self.uri(root)).snapshot(version)
        bases = tuple(sorted(((b.name, b.is_dataset_root, self.relative(b.path), b.path.startswith("file://"))
                              for b in snap.bases), key=repr))
        frags = []
        for f in snap.fragments:
            homes = tuple(self.relative(_parent(file.uri or "?")) for file in f.files)
            deletion = self.relative(_parent(_parent(f.deletion.file.uri or "?/?"))) if f.deletion is not None else None
            frags.append((f.id, f.physical_rows, homes, f.deletion.num_deleted_rows if f.deletion else 0, deletion))
        return Layout(bases, tuple(frags))

    def census(self, root: str) -> dict[str, int]:
        """How many manifests, transaction, deletion and data files ``root`` holds."""
        found = {"_versions": ".manifest", "_transactions": ".txn", "_deletions": "", "data": ".lance"}
        return {sub: sum(1 for p in (self.dir / root / sub).rglob(f"*{suffix}") if p.is_file())
                for sub, suffix in found.items()}

    def refs(self, family: str) -> dict[str, dict[str, tuple[str | None, int]]]:
        """Tags and branches as the reference's reader lists them (for either writer's world)."""
        dataset = Dataset(self.uri(family))
        return {"tags": {n: (t.branch, t.version) for n, t in dataset.tags().items()},
                "branches": {n: (b.parent_branch, b.parent_version) for n, b in dataset.branches().items()}}
