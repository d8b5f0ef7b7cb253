"""Shallow and deep clones (the clone-primitives post "shallow_clone", "deep_clone"; Storage Layout spec "Shallow
Clone"; docs/lance-format.md §12 for pylance 14.0.2's exact algorithm).

A shallow clone is metadata only: the target's first manifest copies the source version's (same version
number, schema, fragments, indices) and registers the source root as a dataset-root base; every file that
lived in the source's own root now points at that base, files already in a base keep theirs. Writes to
the clone go to the clone's own root; the source is never modified. A deep clone copies every file the
version references into the target root under the same names (server-side where the store can) and
references them from there: the result shares nothing with the source.
"""

from __future__ import annotations

from collections.abc import Sequence

from .commit import CommitResult, commit, new_transaction
from .errors import DatasetAlreadyExists
from .layout import DATA_DIR, FileKind, resolve
from .proto import table_pb2, transaction_pb2
from .store.uri import join, normalize
from .table import Dataset, Snapshot
from .writer import discarded_on_failure


def smallest_unused_id(bases: Sequence[table_pb2.BasePath]) -> int:
    """The id a clone gives its source: the smallest id >= 0 no base uses (pylance 14.0.2)."""
    used = {b.id for b in bases}
    candidate = 0
    while candidate in used:
        candidate += 1
    return candidate


def _shallow_manifest(snapshot: Snapshot, source_root: str,
                      branch_name: str | None) -> tuple[table_pb2.Manifest, table_pb2.IndexSection | None]:
    manifest = table_pb2.Manifest()
    manifest.CopyFrom(snapshot.manifest)
    new_id = smallest_unused_id(manifest.base_paths)
    manifest.base_paths.add(id=new_id, name=snapshot.branch, is_dataset_root=True, path=source_root)
    for fragment in manifest.fragments:
        for data_file in fragment.files:
            if not data_file.HasField("base_id"):
                data_file.base_id = new_id
        if fragment.HasField("deletion_file") and not fragment.deletion_file.HasField("base_id"):
            fragment.deletion_file.base_id = new_id
    if branch_name is None:
        manifest.ClearField("branch")
    else:
        manifest.branch = branch_name
    indices = None
    if snapshot.manifest_file.index_section is not None:
        indices = table_pb2.IndexSection()
        indices.CopyFrom(snapshot.manifest_file.index_section)
        for index in indices.indices:
            if not index.HasField("base_id"):
                index.base_id = new_id
    return manifest, indices


def shallow_clone_into(source: Dataset, version: int, target: Dataset,
                       branch_name: str | None = None) -> CommitResult:
    """Commit a shallow clone of ``source`` at ``version`` as the first version of ``target``."""
    if target.version_entries():
        raise DatasetAlreadyExists("the clone target already holds a dataset", target.uri)
    snapshot = source.snapshot(version)
    manifest, indices = _shallow_manifest(snapshot, source.uri, branch_name)
    txn = _clone_transaction(source, version, True)
    if branch_name is not None:
        txn.clone.branch_name = branch_name
    return commit(target, txn, lambda _prev, _txn: manifest, new_dataset=True, naming=snapshot.naming,
                  first_version=version, index_section=indices)


def _clone_transaction(source: Dataset, version: int, shallow: bool) -> transaction_pb2.Transaction:
    """The Clone transaction of a clone of ``source`` at ``version``: the source's branch, version and path."""
    txn = new_transaction(version)
    txn.clone.is_shallow = shallow
    if source.branch_name is not None:
        txn.clone.ref_name = source.branch_name
    txn.clone.ref_version = version
    txn.clone.ref_path = source.uri
    return txn


def _target(source: Dataset, target_uri: str) -> Dataset:
    target = Dataset(normalize(target_uri), source.storage)
    if target.uri == source.uri or target.uri == source.main_root:
        raise DatasetAlreadyExists("a dataset cannot be cloned onto itself", target.uri)
    if target.version_entries():
        raise DatasetAlreadyExists("the clone target already holds a dataset", target.uri)
    return target


def shallow_clone(source: Dataset, version: int, target_uri: str) -> Dataset:
    """A new dataset at ``target_uri`` referencing ``source``'s files at ``version``."""
    target = _target(source, target_uri)
    shallow_clone_into(source, version, target)
    return target


def deep_clone(source: Dataset, version: int, target_uri: str) -> Dataset:
    """A new dataset at ``target_uri`` holding copies of every file ``source`` references at ``version``
    (data files with their blob sidecars, deletion files, index files), all in the target's own root."""
    target = _target(source, target_uri)
    snapshot = source.snapshot(version)
    storage = source.storage
    copies: list[tuple[str, str]] = []
    manifest = table_pb2.Manifest()
    manifest.CopyFrom(snapshot.manifest)
    # Dataset-root bases (clone sources, parents of branches) go: every file they held is copied. Non-root
    # bases stay registered: external blobs are stored relative to them (the Blob v2 post "External"), and the
    # objects there are the user's, not the dataset's, so "sharing nothing" never meant copying them.
    kept = [b for b in manifest.base_paths if not b.is_dataset_root]
    del manifest.base_paths[:]
    manifest.base_paths.extend(kept)
    manifest.ClearField("branch")
    for view, fragment in zip(snapshot.fragments, manifest.fragments, strict=True):
        for resolved, data_file in zip(view.files, fragment.files, strict=True):
            assert resolved.uri is not None
            destination = resolve(target.uri, {}, None, FileKind.DATA, data_file.path)
            copies.append((resolved.uri, destination))
            sidecar_dir = resolved.uri[: -len(".lance")]
            for sidecar in storage.list(sidecar_dir):
                copies.append((sidecar.uri, join(target.uri, DATA_DIR, data_file.path[: -len(".lance")],
                                                  sidecar.uri[len(sidecar_dir) + 1:])))
            data_file.ClearField("base_id")
        if view.deletion is not None:
            assert view.deletion.file.uri is not None
            copies.append((view.deletion.file.uri,
                           resolve(target.uri, {}, None, FileKind.DELETION, view.deletion.file.path)))
            fragment.deletion_file.ClearField("base_id")
    indices = None
    if snapshot.manifest_file.index_section is not None:
        indices = table_pb2.IndexSection()
        indices.CopyFrom(snapshot.manifest_file.index_section)
        for index in indices.indices:
            index.ClearField("base_id")
        for index_file in snapshot.index_files:
            assert index_file.uri is not None
            copies.append((index_file.uri, resolve(target.uri, {}, None, FileKind.INDEX, index_file.path)))
    written: list[str] = []
    with discarded_on_failure(storage, written):
        for src, dst in copies:
            storage.copy(src, dst)
            written.append(dst)
        commit(target, _clone_transaction(source, version, False), lambda _prev, _txn: manifest,
               new_dataset=True, naming=snapshot.naming,
               first_version=version, index_section=indices)
    return target
