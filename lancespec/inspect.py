"""``lancespec inspect``: what one version of a dataset holds, as a stable JSON document or as text.

The JSON document (schema in docs/inspect-json.md, version 1) has the keys ``format``, ``uri``,
``version``, ``branch``, ``naming``, ``versions``, ``bases``, ``fragments``, ``index_files``, ``tags``,
``tag_branches``, ``branches``, ``branch_forks`` and ``clone``. Keys are only ever added, never renamed or
removed.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .conformance.fetch import RunStorage
from .reference.commit import load_transaction
from .reference.errors import LanceSpecError
from .reference.layout import BRANCHES_DIR, DELETION_EXTENSIONS, TAGS_DIR
from .reference.printable import printable
from .reference.store.uri import join
from .reference.table import Dataset, ResolvedFile, Snapshot

INSPECT_FORMAT = "lancespec.inspect/1"


def _file_json(f: ResolvedFile) -> dict[str, Any]:
    return {"path": f.path, "base_id": f.base_id, "uri": f.uri, "size": f.size}


def _latest_of_branch(main: Dataset, name: str) -> int | None:
    """The latest version of branch ``name``; None when its root holds no readable version or its name
    would leave ``tree/`` (then nothing of it is listed: docs/security.md)."""
    try:
        return main.branch(name).latest_version()
    except LanceSpecError:
        return None


def _clone_of(root: Dataset, versions: list[int]) -> dict[str, Any] | None:
    """The Clone operation that committed the root's first attached version (the clone-primitives post
    "shallow_clone", "deep_clone"), or None: no clone, cleaned up, or unreadable (history's finding)."""
    if not versions:
        return None
    try:
        txn = load_transaction(root, versions[0])
    except LanceSpecError:
        return None
    if txn is None or txn.WhichOneof("operation") != "clone":
        return None
    clone = txn.clone
    return {"shallow": clone.is_shallow, "source": clone.ref_path, "source_branch": clone.ref_name or None,
            "source_version": clone.ref_version}


def inspect_report(dataset: Dataset, snapshot: Snapshot) -> dict[str, Any]:
    """The inspect document for ``snapshot`` of ``dataset``."""
    main = dataset.main()
    if isinstance(main.storage, RunStorage):  # every ref file at once, rather than one after another
        for directory in (TAGS_DIR, BRANCHES_DIR):
            main.storage.prefetch_directory(join(main.uri, directory))
    branches = main.branches()
    tags = sorted(main.tags().items())
    root = dataset if snapshot.root == dataset.uri else Dataset(snapshot.root, dataset.storage)
    versions = root.versions()
    return {
        "format": INSPECT_FORMAT,
        "uri": snapshot.root,
        "version": snapshot.version,
        "branch": snapshot.branch,
        "naming": snapshot.naming.value,
        "versions": versions,
        "num_rows": snapshot.num_rows,
        "bases": [
            {"id": b.id, "name": b.name, "path": b.path, "is_dataset_root": b.is_dataset_root}
            for b in snapshot.bases
        ],
        "fragments": [
            {
                "id": frag.id,
                "physical_rows": frag.physical_rows,
                "num_rows": frag.num_rows,
                "files": [_file_json(f) for f in frag.files],
                "deletion": None
                if frag.deletion is None
                else {
                    "uri": frag.deletion.file.uri,
                    "base_id": frag.deletion.file.base_id,
                    "file_type": DELETION_EXTENSIONS.get(frag.deletion.file_type, "unknown"),
                    "num_deleted_rows": frag.deletion.num_deleted_rows,
                },
            }
            for frag in snapshot.fragments
        ],
        "index_files": [_file_json(f) for f in snapshot.index_files],
        "tags": {name: tag.version for name, tag in tags},
        "tag_branches": {name: tag.branch for name, tag in tags},
        "branches": {name: _latest_of_branch(main, name) for name in sorted(branches)},
        "branch_forks": {
            name: {"parent_branch": rec.parent_branch, "parent_version": rec.parent_version}
            for name, rec in sorted(branches.items())
        },
        "clone": _clone_of(root, versions),
    }


def _shown(value: object) -> str:
    """A value of the dataset as rich prints it literally: escaped, cut, no markup (docs/security.md)."""
    return escape(printable(value))


def render_text(report: dict[str, Any], console: Console) -> None:
    """Print the report for a person; every name the dataset controls goes through ``_shown``."""
    branch = f" (branch {_shown(report['branch'])})" if report["branch"] else ""
    console.print(f"[bold]{_shown(report['uri'])}[/bold] version {report['version']}{branch}, "
                  f"{report['num_rows']} rows, {report['naming'].upper()} manifest names")
    console.print(f"versions: {', '.join(map(str, report['versions']))}")
    if report["bases"]:
        bases = Table("id", "name", "path", "dataset root", title="bases")
        bases.columns[2].overflow = "fold"
        for b in report["bases"]:
            bases.add_row(str(b["id"]), _shown(b["name"] or ""), _shown(b["path"]),
                          "yes" if b["is_dataset_root"] else "no")
        console.print(bases)
    frags = Table("fragment", "rows", "file", "base", "size", "deletion", title="fragments")
    for column in (frags.columns[2], frags.columns[5]):
        column.overflow = "fold"
    for frag in report["fragments"]:
        deletion = frag["deletion"]
        deleted = "" if deletion is None else f"{deletion['num_deleted_rows']} rows: {_shown(deletion['uri'])}"
        for i, f in enumerate(frag["files"]):
            frags.add_row(
                str(frag["id"]) if i == 0 else "",
                f"{frag['num_rows']}/{frag['physical_rows']}" if i == 0 else "",
                _shown(f["uri"] or f["path"]),
                "root" if f["base_id"] is None else str(f["base_id"]),
                "" if f["size"] is None else str(f["size"]),
                deleted if i == 0 else "",
            )
    console.print(frags)
    for kind in ("tags", "branches"):
        if report[kind]:
            console.print(f"{kind}: " + ", ".join(f"{_shown(k)} -> v{'?' if v is None else v}"
                                                  for k, v in report[kind].items()))
