"""A pylance-shaped face on the reference writer, so a scenario can swap one writer for the other.

    import reference.api as ref
    ds = ref.write_dataset(table, "/tmp/ds", initial_bases=[ref.DatasetBasePath("/tmp/b", name="b")],
                           target_bases=["b"])
    ds.delete("id < 3"); ds.tags.create("v2"); clone = ds.shallow_clone("/tmp/c", "v2")

Names and signatures follow pylance 14.0.2 (docs/lance-format.md §16) where the concept is the same;
``relocate`` and ``cleanup_old_versions`` return lancespec's own result types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc

from . import clone as clone_ops
from . import ops, refs
from .blob.read import BlobFile, BlobReader
from .codec import BranchRecord, TagRecord
from .commit import CommitResult
from .errors import DatasetAlreadyExists, ValidationError
from .gc import CleanupPolicy, CleanupStats, cleanup
from .layout import Base
from .ops import DatasetBasePath
from .read import read_snapshot
from .refs import Reference
from .relocate import relocate
from .store import open_store
from .table import Dataset, Snapshot

__all__ = ["DatasetBasePath", "LanceDataset", "dataset", "write_dataset"]


class Tags:
    """``ds.tags``: create, update, delete, list, get_version."""

    def __init__(self, owner: LanceDataset) -> None:
        self._owner = owner

    def create(self, tag: str, reference: Reference = None) -> None:
        refs.create_tag(self._owner._root, tag, reference)

    def update(self, tag: str, reference: Reference = None) -> None:
        refs.update_tag(self._owner._root, tag, reference)

    def delete(self, tag: str) -> None:
        refs.delete_tag(self._owner._root, tag)

    def list(self) -> dict[str, TagRecord]:
        return self._owner._root.tags()

    def get_version(self, tag: str) -> int:
        return self._owner._root.main().tag(tag).version


class Branches:
    """``ds.branches``: list and delete (creation is ``LanceDataset.create_branch``)."""

    def __init__(self, owner: LanceDataset) -> None:
        self._owner = owner

    def list(self) -> dict[str, BranchRecord]:
        return self._owner._root.main().branches()

    def delete(self, branch: str) -> None:
        refs.delete_branch(self._owner._root, branch)


class LanceDataset:
    """A dataset root checked out at a version (the latest unless one was asked for)."""

    def __init__(self, root: Dataset, version: int | None = None,
                 storage_options: Mapping[str, str] | None = None) -> None:
        self._root = root
        self._pinned = version
        self._storage_options = dict(storage_options or {})
        self.tags = Tags(self)
        self.branches = Branches(self)

    # --- reading --------------------------------------------------------------------------------

    @property
    def uri(self) -> str:
        return self._root.uri

    @property
    def version(self) -> int:
        return self._pinned if self._pinned is not None else self._root.latest_version()

    @property
    def latest_version(self) -> int:
        return self._root.latest_version()

    def snapshot(self) -> Snapshot:
        return self._root.snapshot(self.version)

    def versions(self) -> list[int]:
        return self._root.versions()

    def to_table(self) -> pa.Table:
        return read_snapshot(self.snapshot(), self._root.storage, self._storage_options)

    def count_rows(self) -> int:
        return self.snapshot().num_rows

    def take_blobs(self, blob_column: str, indices: Sequence[int]) -> list[BlobFile | None]:
        """File-like readers of ``blob_column`` at live row positions ``indices`` (None for null blobs),
        as pylance's ``take_blobs(blob_column, indices=...)`` (see ``reference.blob``)."""
        return BlobReader(self.snapshot(), self._root.storage).take_blobs(blob_column, indices)

    def base_paths(self) -> dict[int, Base]:
        return {b.id: b for b in self.snapshot().bases}

    def checkout_version(self, reference: Reference) -> LanceDataset:
        root, version = refs.resolve_reference(self._root, reference)
        return LanceDataset(root, version, self._storage_options)

    # --- writing --------------------------------------------------------------------------------

    def _after(self, _result: CommitResult | None) -> LanceDataset:
        """After a write the handle follows the latest version again."""
        self._pinned = None
        return self

    def delete(self, predicate: str | pc.Expression) -> LanceDataset:
        return self._after(ops.delete(self._root, predicate, storage_options=self._storage_options))

    def add_bases(self, new_bases: Sequence[DatasetBasePath]) -> LanceDataset:
        return self._after(ops.add_bases(self._root, new_bases))

    def create_branch(self, branch: str, reference: Reference = None) -> LanceDataset:
        return LanceDataset(refs.create_branch(self._root, branch, reference), None, self._storage_options)

    def shallow_clone(self, target_path: str, reference: Reference = None) -> LanceDataset:
        root, version = refs.resolve_reference(self._root, reference)
        return LanceDataset(clone_ops.shallow_clone(root, version, target_path), None, self._storage_options)

    def deep_clone(self, target_path: str, reference: Reference = None) -> LanceDataset:
        root, version = refs.resolve_reference(self._root, reference)
        return LanceDataset(clone_ops.deep_clone(root, version, target_path), None, self._storage_options)

    def relocate(self, moves: Mapping[int | str, str] | None = None, adopt_from: str | None = None) -> LanceDataset:
        """Move bases by rewriting their paths only (see ``reference.relocate``)."""
        return self._after(relocate(self._root, moves, adopt_from))

    def cleanup_old_versions(self, older_than: timedelta | None = None, retain_versions: int | None = None, *,
                             delete_unverified: bool = False,
                             error_if_tagged_old_versions: bool = True) -> CleanupStats:
        return cleanup(self._root, CleanupPolicy(older_than, retain_versions, delete_unverified,
                                                 error_if_tagged_old_versions))


def dataset(uri: str, version: int | str | None = None,
            storage_options: Mapping[str, str] | None = None) -> LanceDataset:
    """Open a dataset, at a version number or a tag name (as ``lance.dataset``)."""
    root = Dataset.open(uri, storage_options)
    handle = LanceDataset(root, None, storage_options)
    return handle if version is None else handle.checkout_version(version)


def write_dataset(data: pa.Table, uri: str | LanceDataset,
                  mode: Literal["create", "append", "overwrite"] = "create", *,
                  max_rows_per_file: int = 1024 * 1024, storage_options: Mapping[str, str] | None = None,
                  data_storage_version: str | None = None, enable_v2_manifest_paths: bool = True,
                  initial_bases: Sequence[DatasetBasePath] | None = None,
                  target_bases: Sequence[str] | None = None,
                  target_all_bases: bool | None = None,
                  allow_external_blob_outside_bases: bool = False) -> LanceDataset:
    """Create, append to or overwrite a dataset (as ``lance.write_dataset``). ``append`` and
    ``overwrite`` on a location without a dataset create one."""
    target = uri.uri if isinstance(uri, LanceDataset) else uri
    storage = open_store(storage_options)
    root = Dataset(target, storage)
    exists = bool(root.version_entries())
    if mode == "create" or not exists:
        if exists:
            raise DatasetAlreadyExists("a dataset already exists here (mode='create')", root.uri)
        ops.create(target, data, storage=storage, initial_bases=initial_bases or (), target_bases=target_bases,
                   target_all_bases=target_all_bases, max_rows_per_file=max_rows_per_file,
                   data_storage_version=data_storage_version, enable_v2_manifest_paths=enable_v2_manifest_paths,
                   allow_external_blob_outside_bases=allow_external_blob_outside_bases)
    elif initial_bases:
        raise ValidationError(f"initial_bases can only be given when creating a dataset, not in {mode} mode",
                              root.uri)
    elif mode in ("append", "overwrite"):
        write = ops.append if mode == "append" else ops.overwrite
        write(root, data, target_bases=target_bases, target_all_bases=target_all_bases,
              max_rows_per_file=max_rows_per_file, allow_external_blob_outside_bases=allow_external_blob_outside_bases)
    else:
        raise ValidationError(f"unknown mode {mode!r}: use create, append or overwrite", root.uri)
    return LanceDataset(root, None, storage_options)
