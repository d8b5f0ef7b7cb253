"""One *world*: a scratch folder one writer writes and any reader reads. Its locations are world-relative, as in
the operation language (``ds``, ``ds/tree/f1``, ``c2``, ``bases/b3``), so two worlds and the model compare root by
root. A world's writer is an implementation of the registry (``adapters.registry.get``), driven through its
``Session.apply`` as every other runner drives it: a refusal is a ``WriterRefusal``, anything else a crash."""

from __future__ import annotations

import dataclasses
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import lance

from conformance import operations as lang
from conformance.adapters import registry
from conformance.adapters.base import Folder, Session
from conformance.model import RootModel
from reference import api as ref
from reference.table import Dataset

Reader = Literal["reference", "pylance"]


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


def _parent(uri: str) -> str:
    return uri.rsplit("/", 1)[0]


class World:
    """One scratch folder written by the writer ``writer`` (a name of the registry: ``reference``, ``pylance``)."""

    def __init__(self, directory: Path, writer: str) -> None:
        self.dir = directory
        self.writer = writer
        self._sessions: dict[str, Session] = {}
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

    def session(self, writer: str | None = None) -> Session:
        """A session of ``writer`` (default: this world's) on this world's folder, opened once."""
        name = writer or self.writer
        if name not in self._sessions:
            self._sessions[name] = registry.get(name).open(_WorldSite(str(self.dir)))
        return self._sessions[name]

    def apply(self, op: lang.ModelOperation, target: str | None = None) -> None:
        """Apply ``op`` through this world's writer (``Session.apply``; a refusal raises ``WriterRefusal``).
        ``target`` (an absolute path: a scratch probe) redirects the root a create, append, delete or add_base
        writes, or the directory a deep clone creates."""
        if isinstance(op, lang.Relocate):
            self._relocate(op)
            return
        if target is not None and isinstance(op, lang.Create | lang.Append | lang.Delete | lang.AddBase):
            op = dataclasses.replace(op, root=target)
        elif target is not None and isinstance(op, lang.DeepClone):
            op = dataclasses.replace(op, target=target)
        self.session().apply(op)

    def _relocate(self, op: lang.Relocate) -> None:
        """Copy the base directories, then rewrite the base paths with the reference's relocation: pylance
        14.0.2 cannot (docs/lance-format.md §10.4), so the reference relocates whatever dataset this world's
        writer wrote, as an operator would."""
        for old, new in op.moves:
            if os.path.isdir(self.uri(old)):
                shutil.copytree(self.uri(old), self.uri(new))
            else:  # nothing was ever written to the base
                os.makedirs(self.uri(new))
        self.session("reference").apply(op)

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


class _WorldSite(Folder):
    """A world's folder as a site: world-relative locations below it, and absolute paths (a probe's scratch
    directory beside the worlds) as they are."""

    def locate(self, text: str) -> str:
        return text if text.startswith("/") else super().locate(text)
