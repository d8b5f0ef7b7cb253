"""``lancespec inspect``: what one version of a dataset holds, as a stable JSON document or as text.

The JSON document (schema in docs/inspect-json.md, version 1) has the keys ``format``, ``uri``,
``version``, ``branch``, ``naming``, ``versions``, ``bases``, ``fragments``, ``index_files``, ``tags``,
``tag_branches``, ``branches``, ``branch_forks`` and ``clone``, and since issue 14 ``data_format``,
``schema``, ``indices`` and ``blob_sidecars``. Keys are only ever added, never renamed or removed. The
text (``render_text``) is meant for an 80-column terminal: paths are shown relative to the dataset root
(or their base), one per line.
"""

from __future__ import annotations

from typing import Any

from pyroaring import BitMap
from rich.console import Console

from conformance.fetch import RunStorage
from conformance.locate import what_is_there
from conformance.report import version_ranges
from reference.blob.columns import blob_field_ids, has_blob_column, is_blob_field
from reference.commit import load_transaction
from reference.errors import DatasetNotFound, LanceSpecError
from reference.layout import BRANCHES_DIR, DELETION_EXTENSIONS, TAGS_DIR, branch_root, index_directory_name
from reference.printable import printable
from reference.store import Storage
from reference.store.uri import join, relative_to
from reference.table import Dataset, ResolvedFile, Snapshot

INSPECT_FORMAT = "lancespec.inspect/1"


def _file_json(f: ResolvedFile) -> dict[str, Any]:
    return {"path": f.path, "base_id": f.base_id, "uri": f.uri, "size": f.size}


def _latest_of_branch(main: Dataset, name: str) -> int | None:
    """The latest version of branch ``name`` (a name ``main.branches()`` listed: its ref files are not read
    again for each branch, issue 32); None when its root holds no readable version or its name would leave
    ``tree/`` (then nothing of it is listed: docs/security.md)."""
    try:
        return Dataset(branch_root(main.main_root, name), main.storage, main_root=main.main_root,
                       branch=name).latest_version()
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


def open_dataset(uri: str, storage: Storage) -> Dataset:
    """``Dataset.open``, answering a URI that holds no dataset with what it holds instead (nothing, a
    LanceDB database folder and its tables: ``conformance.locate``)."""
    try:
        return Dataset.open(uri, storage=storage)
    except DatasetNotFound:
        raise what_is_there(storage, uri) from None


def _schema_json(snapshot: Snapshot) -> list[dict[str, Any]]:
    return [{"id": f.id, "parent_id": f.parent_id, "name": f.name, "logical_type": f.logical_type,
             "nullable": f.nullable, "blob": is_blob_field(f)} for f in snapshot.manifest.fields]


def _index_kind(type_url: str) -> str:
    """``/lance.table.BTreeIndexDetails`` -> ``BTree``: the kind an index's details name."""
    return type_url.rsplit(".", 1)[-1].removesuffix("IndexDetails") or "unknown"


def _indices_json(snapshot: Snapshot) -> list[dict[str, Any]]:
    section = snapshot.manifest_file.index_section
    names = {f.id: f.name for f in snapshot.manifest.fields}
    out = []
    for index in section.indices if section is not None else ():
        try:
            fragments: int | None = len(BitMap.deserialize(index.fragment_bitmap)) if index.fragment_bitmap else 0
        except (ValueError, OverflowError):
            fragments = None
        out.append({
            "name": index.name, "uuid": index_directory_name(index.uuid.uuid),
            "kind": _index_kind(index.index_details.type_url) if index.HasField("index_details") else "unknown",
            "columns": [names.get(i, f"field {i}") for i in index.fields],
            "base_id": index.base_id if index.HasField("base_id") else None,
            "fragments": fragments, "files": len(index.files),
        })
    return out


def _blob_sidecars(snapshot: Snapshot, storage: Storage) -> list[dict[str, Any]]:
    """The sidecar files next to the data files that hold a blob column: ``{data file less .lance}/*.blob``
    (Blob v2 post, "Packed" and "Dedicated"), found by listing each such directory."""
    fields = list(snapshot.manifest.fields)
    out: list[dict[str, Any]] = []
    if not blob_field_ids(fields):  # no data file can hold a blob column
        return out
    for fragment in snapshot.each_fragment():
        for resolved, proto in zip(fragment.files, fragment.proto.files, strict=True):
            if resolved.uri is None or not has_blob_column(fields, proto.fields):
                continue
            directory = resolved.uri.removesuffix(".lance")
            out += [{"uri": info.uri, "size": info.size, "data_file": resolved.uri}
                    for info in storage.list(directory + "/", recursive=False) if info.uri.endswith(".blob")]
    return out


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
            for frag in snapshot.each_fragment()
        ],
        "index_files": [_file_json(f) for f in snapshot.index_files],
        "data_format": snapshot.manifest.data_format.version,
        "schema": _schema_json(snapshot),
        "indices": _indices_json(snapshot),
        "blob_sidecars": _blob_sidecars(snapshot, dataset.storage),
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
    """A value of the dataset as it is printed: escaped and cut (docs/security.md)."""
    return printable(value)


def _short(uri: str | None, root: str, bases: list[dict[str, Any]], directory: str = "") -> str:
    """``uri`` relative to ``{root}/{directory}``, else to the base holding it (``base ID/...``, less
    ``directory`` in a dataset-root base), else whole: a path that fits a line."""
    if uri is None:
        return "(unresolvable)"
    prefix = f"{directory}/" if directory else ""
    inside = relative_to(uri, root)
    if inside is not None:
        return _shown(inside.removeprefix(prefix))
    holding = [b for b in bases if relative_to(uri, b["path"]) is not None]
    if not holding:
        return _shown(uri)
    b = max(holding, key=lambda b: len(b["path"]))  # the innermost: a branch root lies inside the main root
    below = relative_to(uri, b["path"]) or ""
    return f"base {b['id']}/{_shown(below.removeprefix(prefix) if b['is_dataset_root'] else below)}"


def _size(size: int | None) -> str:
    """``size`` bytes in at most 9 characters (``1,517 B``, ``4.0 MiB``)."""
    if size is None:
        return ""
    if size < 10_000:
        return f"{size:,} B"
    value, unit = float(size), "B"
    for larger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1000 and unit != "B":
            break
        value, unit = value / 1024, larger
    return f"{value:.1f} {unit}"


#: Nesting levels shown by indentation; deeper fields show their level as a number, so the text stays
#: linear in the number of fields however deep a schema nests (docs/security.md).
INDENTED_LEVELS = 16


def _schema_lines(report: dict[str, Any]) -> list[str]:
    fields = report["schema"]
    depth: dict[int, int] = {}
    lines = []
    for f in fields:
        depth[f["id"]] = 0 if f["parent_id"] == -1 else depth.get(f["parent_id"], 0) + 1
        level = depth[f["id"]]
        indent = "  " * level if level <= INDENTED_LEVELS else "  " * INDENTED_LEVELS + f"[level {level}] "
        name = indent + _shown(f["name"])
        kind = "blob" if f["blob"] else _shown(f["logical_type"])
        lines.append(f"  {name:<24} {kind}{'' if f['nullable'] else ' not null'}")
    return lines


def _index_lines(report: dict[str, Any], root: str) -> list[str]:
    lines = []
    total = len(report["fragments"])
    for i in report["indices"]:
        columns = ", ".join(_shown(c) for c in i["columns"]) or "no column"
        covered = "" if i["fragments"] is None else f", {i['fragments']} of {total} fragments"
        lines.append(f"  {_shown(i['name'] or '(unnamed)')}: {_shown(i['kind'])} on {columns}{covered}")
        files = [f for f in report["index_files"] if f["path"].startswith(i["uuid"] + "/")]
        if files:
            directory = _short(files[0]["uri"], root, report["bases"]).rsplit("/", 1)[0]
            lines.append(f"    {directory}/ ({len(files)} file(s), {_size(sum(f['size'] or 0 for f in files))})")
    return lines


def _fragment_lines(report: dict[str, Any], root: str) -> list[str]:
    lines = []
    for frag in report["fragments"]:
        lines.append(f"  {frag['id']}: {frag['num_rows']:,} of {frag['physical_rows']:,} rows")
        for f in frag["files"]:
            lines.append(f"    {_short(f['uri'], root, report['bases'], 'data')}  {_size(f['size'])}".rstrip())
        deletion = frag["deletion"]
        if deletion is not None:
            lines.append(f"    deletes {deletion['num_deleted_rows']:,}: "
                         f"{_short(deletion['uri'], root, report['bases'])}")
    return lines


def _sidecar_lines(report: dict[str, Any], root: str) -> list[str]:
    lines = []
    last_directory = None
    for sidecar in report["blob_sidecars"]:
        directory, _, name = _short(sidecar["uri"], root, report["bases"]).rpartition("/")
        if directory != last_directory:
            lines.append(f"  {directory}/")
            last_directory = directory
        lines.append(f"    {name}  {_size(sidecar['size'])}")
    return lines


def render_text(report: dict[str, Any], console: Console) -> None:
    """Print the report for a person, for an 80-column terminal: the version line, the schema, the
    indices, the fragments with their files (relative to the root or their base), the blob sidecars, the
    bases and the refs. Every name the dataset controls goes through ``_shown``; nothing is markup."""
    root = report["uri"]
    branch = f", branch {_shown(report['branch'])}" if report["branch"] else ""
    lines = [
        _shown(root),
        f"version {report['version']}{branch} (versions {version_ranges(report['versions'])}), "
        f"{report['num_rows']:,} rows in {len(report['fragments'])} fragment(s)",
        f"data format {_shown(report['data_format'])}, {report['naming'].upper()} manifest names",
        "",
        f"schema ({sum(f['parent_id'] == -1 for f in report['schema'])} columns)",
        *_schema_lines(report),
    ]
    if report["indices"]:
        lines += [f"indices ({len(report['indices'])})", *_index_lines(report, root)]
    lines += ["fragments (data files in data/ of the root, or in base ID)", *_fragment_lines(report, root)]
    if report["blob_sidecars"]:
        lines += [f"blob sidecars ({len(report['blob_sidecars'])})", *_sidecar_lines(report, root)]
    if report["bases"]:
        lines.append("bases")
        for b in report["bases"]:
            kind = "dataset root" if b["is_dataset_root"] else "plain"
            lines.append(f"  {b['id']} {_shown(b['name'] or '(unnamed)')} ({kind}): {_shown(b['path'])}")
    for kind in ("tags", "branches"):
        if report[kind]:
            lines.append(f"{kind}: " + ", ".join(f"{_shown(k)} -> v{'?' if v is None else v}"
                                                 for k, v in report[kind].items()))
    console.out("\n".join(lines), highlight=False)
