"""Relocation: move bases by rewriting only their paths (the multi-base post "change 5 strings, not 10 million";
Storage Layout spec "Dataset Portability": copy bases to a new place and update the manifest's base_paths, no
other metadata or data file changes).

A relocation is one commit whose manifest differs from the latest only in ``base_paths`` entries' paths.
Its transaction is an UpdateBases carrying the rewritten entries under their existing ids, marked with
the transaction property ``lancespec.operation = relocate`` (Lance has no operation of its own for it).
Adoption covers a copied dataset root: bases that point into the root's *old* location (a branch's or a
clone chain's reference to itself, say) are rewritten to the same place under the new root.
The files come first: a relocation whose new location does not hold every file the latest version resolves
through the moved base, with its recorded size, is refused before anything is written (BaseNotCopied).
"""

from __future__ import annotations

from collections.abc import Mapping

from .commit import CommitResult, commit, new_transaction
from .errors import BaseNotCopied, DuplicateBase, EmptyOperation, InvalidBasePath, ObjectNotFound, ValidationError
from .proto import table_pb2, transaction_pb2
from .store.uri import is_absolute, join, normalize, relative_to, same_location
from .table import Dataset, Snapshot

RELOCATE_PROPERTY = "lancespec.operation"


def _find_base(bases: list[table_pb2.BasePath], key: int | str, where: str) -> table_pb2.BasePath:
    for base in bases:
        if key == base.id if isinstance(key, int) else key in (base.name if base.HasField("name") else None,
                                                                  base.path):
            return base
    raise ValidationError(f"no base with id, name or path {key!r}", where)


def relocation_plan(dataset: Dataset, moves: Mapping[int | str, str] | None = None,
                    adopt_from: str | None = None) -> dict[int, str]:
    """Base id -> new path. ``moves`` names bases by id, name or current path; ``adopt_from`` is the
    location the dataset root was copied from: every base at or under it moves under the new root.
    For a branch the root that was copied is the main root holding its ``tree/`` (the branch's bases
    point at the main root and at parent branches' roots), so those move under ``dataset.main_root``."""
    snapshot = dataset.snapshot()
    bases = list(snapshot.manifest.base_paths)
    plan: dict[int, str] = {}
    for key, new_path in (moves or {}).items():
        plan[_find_base(bases, key, dataset.uri).id] = new_path
    if adopt_from is not None:
        old_root = normalize(adopt_from)
        new_root = dataset.main_root
        for base in bases:
            if base.id in plan:
                continue
            if same_location(base.path, old_root):
                plan[base.id] = new_root
            else:
                below = relative_to(normalize(base.path), old_root)
                if below is not None:
                    plan[base.id] = join(new_root, below)
    for base_id, new_path in plan.items():
        if not is_absolute(new_path):
            raise InvalidBasePath(f"new path {new_path!r} for base {base_id} is not absolute", dataset.uri)
    final = {b.id: plan.get(b.id, b.path) for b in bases}
    paths = list(final.values())
    for base_id, path in final.items():
        if sum(same_location(path, other) for other in paths) > 1:
            raise DuplicateBase(f"relocation gives base {base_id} the path {path!r} of another base", dataset.uri)
    if not plan:
        raise EmptyOperation("nothing to relocate: no base matches", dataset.uri)
    return plan


def check_copied(dataset: Dataset, snapshot: Snapshot, plan: Mapping[int, str]) -> None:
    """Refuse (BaseNotCopied, naming the base and the new location) a move to a location that lacks a file
    ``snapshot`` resolves through the moved base, or holds it with another size than the manifest records
    (a size of 0 or none: present is enough). The Storage Layout spec's "Dataset Portability" copies the
    bases first and then rewrites their paths (PORT-003); a version whose base names an empty location
    breaks BASE-004 for every file in it. A base the version holds no file in may move anywhere."""
    bases = {b.id: b for b in snapshot.manifest.base_paths}
    missing: dict[int, list[str]] = {}
    held: dict[int, int] = {}
    for file in snapshot.files():
        base_id = file.base_id
        if base_id is None or base_id not in plan or file.uri is None:
            continue
        below = relative_to(file.uri, bases[base_id].path)
        assert below is not None, (file.uri, bases[base_id].path)  # resolved through that base
        target = join(plan[base_id], below)
        held[base_id] = held.get(base_id, 0) + 1
        try:
            size = dataset.storage.head(target).size
        except ObjectNotFound:
            missing.setdefault(base_id, []).append(f"{target} (absent)")
            continue
        if file.size and size != file.size:
            missing.setdefault(base_id, []).append(f"{target} ({size} bytes, the manifest records {file.size})")
    for base_id, problems in sorted(missing.items()):
        base = bases[base_id]
        name = f" ({base.name!r})" if base.HasField("name") else ""
        raise BaseNotCopied(
            f"base {base_id}{name} cannot move to {plan[base_id]!r}: {len(problems)} of the {held[base_id]} files "
            f"version {snapshot.version} holds in it are not there, first {problems[0]}; copy the base's files to "
            "the new location before relocating", dataset.uri)


def relocate(dataset: Dataset, moves: Mapping[int | str, str] | None = None,
             adopt_from: str | None = None) -> CommitResult:
    """Commit a version whose bases are moved as ``relocation_plan`` says, once ``check_copied`` finds the
    files at the new locations; nothing else changes."""
    plan = relocation_plan(dataset, moves, adopt_from)
    snapshot = dataset.snapshot()
    check_copied(dataset, snapshot, plan)
    txn = new_transaction(snapshot.version)
    txn.transaction_properties[RELOCATE_PROPERTY] = "relocate"
    for base in snapshot.manifest.base_paths:
        if base.id in plan:
            moved = txn.update_bases.new_bases.add()
            moved.CopyFrom(base)
            moved.path = plan[base.id]

    def build(previous: table_pb2.Manifest | None, pending: transaction_pb2.Transaction) -> table_pb2.Manifest:
        assert previous is not None
        manifest = table_pb2.Manifest()
        manifest.CopyFrom(previous)
        manifest.ClearField("transaction_section")
        manifest.ClearField("index_section")
        new_paths = {b.id: b.path for b in pending.update_bases.new_bases}
        for base in manifest.base_paths:
            if base.id in new_paths:
                base.path = new_paths[base.id]
        return manifest

    return commit(dataset, txn, build)
