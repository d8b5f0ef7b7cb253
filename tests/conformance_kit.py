"""Helpers for conformance tests: build a clean dataset with the reference writer, damage one thing, and
certify it.

    uri = build_reference_dataset(tmp_path, bases=True, deletions=("arrow",))
    assert_clean(certify_findings(uri))
    rewrite_manifest(uri, latest_version(uri), lambda m: setattr(m.fragments[0], "physical_rows", 99))
    assert_only(certify_findings(uri), "MAN-004")

Importable as ``conformance_kit`` (tests/ is on the pythonpath).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from lancespec.conformance.certify import certify
from lancespec.conformance.findings import Finding, Report
from lancespec.reference import clone as clone_ops
from lancespec.reference import ops, refs
from lancespec.reference.codec import ManifestFile, decode_manifest_file, encode_manifest_file
from lancespec.reference.proto import table_pb2
from lancespec.reference.store import open_store
from lancespec.reference.table import Dataset, Snapshot

__all__ = [
    "assert_clean",
    "assert_only",
    "assert_reported",
    "build_reference_dataset",
    "certify_findings",
    "latest_version",
    "rewrite_manifest",
    "rows",
    "snapshot",
]

#: Names of the bases ``build_reference_dataset(bases=True)`` registers, and their directories.
PLAIN_BASE = "plain"
ROOT_BASE = "rootlike"


def rows(start: int, count: int) -> pa.Table:
    """Deterministic rows ``id = start .. start+count-1`` with a string column."""
    ids = list(range(start, start + count))
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})


def build_reference_dataset(tmp_path: Path, *, bases: bool = False, deletions: Sequence[str] = (),
                            tags: bool = False, branch: bool = False, clone: bool = False,
                            v1_names: bool = False) -> str:
    """A clean dataset written by the reference writer under ``tmp_path``; returns the URI to certify.

    Always: version 1 creates three 4-row fragments, version 2 appends a fragment. ``bases``: a non-root
    base (``{tmp}/plain``, named "plain") and a dataset-root base (``{tmp}/rootlike``, "rootlike") are
    registered at create and the three first files are spread over the root and both bases.
    ``deletions``: ``"arrow"`` deletes two rows of fragment 0 (an ``.arrow`` file); ``"bin"`` appends a
    5002-row fragment and deletes 5000 of its rows (a ``.bin`` bitmap). ``tags``: tags ``first`` (v1)
    and ``latest``. ``branch``: branch ``feat`` forked from the latest version, with one append of its
    own. ``clone``: a shallow clone at ``{tmp}/clone`` of the latest version (tagged ``cloned`` so the
    source is protected), with one append; the clone's URI is returned instead of the root's.
    ``v1_names``: V1 manifest names.
    """
    root = str(tmp_path / "ds")
    storage = open_store()
    initial = ([ops.DatasetBasePath(str(tmp_path / PLAIN_BASE), name=PLAIN_BASE),
                ops.DatasetBasePath(str(tmp_path / ROOT_BASE), name=ROOT_BASE, is_dataset_root=True)]
               if bases else [])
    ops.create(root, rows(0, 12), storage=storage, initial_bases=initial,
               target_all_bases=True if bases else None, max_rows_per_file=4,
               enable_v2_manifest_paths=not v1_names)
    dataset = Dataset(root, storage)
    ops.append(dataset, rows(12, 4))
    for kind in deletions:
        if kind == "arrow":
            ops.delete(dataset, rows={0: [1, 2]})
        elif kind == "bin":
            result = ops.append(dataset, rows(100, 5002), max_rows_per_file=10_000)
            fragment = dataset.snapshot(result.version).fragments[-1]
            ops.delete(dataset, rows={fragment.id: range(5000)})
        else:
            raise ValueError(f"unknown deletion kind {kind!r}: use 'arrow' or 'bin'")
    if tags:
        refs.create_tag(dataset, "first", 1)
        refs.create_tag(dataset, "latest")
    if branch:
        feat = refs.create_branch(dataset, "feat")
        ops.append(feat, rows(200, 3))
    if clone:
        refs.create_tag(dataset, "cloned")
        target = clone_ops.shallow_clone(dataset, dataset.latest_version(), str(tmp_path / "clone"))
        ops.append(target, rows(300, 2))
        return target.uri
    return dataset.uri


def latest_version(uri: str) -> int:
    return Dataset(uri).latest_version()


def snapshot(uri: str, version: int | None = None) -> Snapshot:
    """The snapshot of ``uri`` (latest by default), with unresolvable files allowed."""
    return Dataset(uri).snapshot(version, strict=False)


def manifest_uri(uri: str, version: int) -> str:
    """The URI of the manifest file of ``version`` (either naming scheme)."""
    for entry in Dataset(uri).version_entries(allow_mixed=True):
        if entry.version == version:
            return entry.uri
    raise AssertionError(f"{uri} has no manifest for version {version}")


def rewrite_manifest(uri: str, version: int, edit: Callable[[table_pb2.Manifest], None], *,
                     edit_indices: Callable[[table_pb2.IndexSection], None] | None = None) -> None:
    """Decode the manifest of ``version``, let ``edit`` change it in place (and ``edit_indices`` its index
    section, created empty when the version has none), re-encode it with the same inline transaction
    bytes and write it back under the same name."""
    where = manifest_uri(uri, version)
    storage = open_store()
    decoded = decode_manifest_file(storage.get(where), where)
    manifest = table_pb2.Manifest()
    manifest.CopyFrom(decoded.manifest)
    edit(manifest)
    indices = decoded.index_section
    if edit_indices is not None:
        indices = table_pb2.IndexSection()
        if decoded.index_section is not None:
            indices.CopyFrom(decoded.index_section)
        edit_indices(indices)
    storage.put(where, encode_manifest_file(manifest, decoded.transaction_bytes, indices))


def certify_findings(uri: str, **kwargs: Any) -> list[Finding]:
    """The findings of certifying ``uri``; every version of every root unless told otherwise. Certifies
    twice, through the I/O plan and lazily (each check reading as it goes), and insists on one report."""
    kwargs.setdefault("all_versions", True)
    return certify_both_ways(uri, **kwargs).findings


def certify_both_ways(uri: str, **kwargs: Any) -> Report:
    """``certify(uri, **kwargs)``, after checking that the lazy path (no I/O plan, no cache, one request at
    a time, every fragment of every version judged anew) gives the same report: the plan and the carry change
    how objects are read and how often a fragment is judged, never what is found."""
    planned = certify(uri, **kwargs)
    lazy = certify(uri, lazy=True, **kwargs)
    assert planned == lazy, f"the I/O plan changed the report of {uri}"
    return planned


def _show(findings: Iterable[Finding]) -> str:
    return "\n".join(f"  {f.requirement} {f.severity} v{f.version} {f.path}: {f.message}" for f in findings) or "  none"


def assert_clean(findings: Sequence[Finding]) -> None:
    """No MUST requirement is breached."""
    must = [f for f in findings if f.severity == "MUST"]
    assert not must, "MUST findings on a dataset expected to be clean:\n" + _show(must)


def assert_reported(findings: Sequence[Finding], requirement: str) -> list[Finding]:
    """``requirement`` is reported; returns its findings."""
    found = [f for f in findings if f.requirement == requirement]
    assert found, f"{requirement} was not reported; findings:\n" + _show(findings)
    return found


def assert_only(findings: Sequence[Finding], requirement: str) -> list[Finding]:
    """``requirement`` is reported and no other MUST requirement is; returns its findings."""
    found = assert_reported(findings, requirement)
    others = [f for f in findings if f.severity == "MUST" and f.requirement != requirement]
    assert not others, f"besides {requirement}, other MUST requirements fired:\n" + _show(others)
    return found


def local_manifest_file(uri: str) -> ManifestFile:
    """The decoded manifest file at a local path."""
    with open(uri, "rb") as fh:
        return decode_manifest_file(fh.read(), uri)


def without_stamps_and_base_paths(manifest: table_pb2.Manifest) -> table_pb2.Manifest:
    """A copy of ``manifest`` without what every commit stamps (version, timestamp, transaction file, writer)
    and with every base path's ``path`` blanked: two manifests equal under it differ only where relocation may
    change them (PORT-003)."""
    out = table_pb2.Manifest()
    out.CopyFrom(manifest)
    for stamped in ("version", "timestamp", "transaction_file", "writer_version"):
        out.ClearField(stamped)  # type: ignore[arg-type]
    for base in out.base_paths:
        base.path = ""
    return out


def file_digests(*dirs: str | Path, skip: Iterable[str] = ()) -> dict[str, str]:
    """Every file below ``dirs``: path -> sha256 of its bytes (paths starting with a ``skip`` entry left out)."""
    skipped = tuple(str(s) for s in skip)
    out = {}
    for top in dirs:
        for dirpath, _dirs, files in os.walk(top):
            for name in files:
                path = os.path.join(dirpath, name)
                if skipped and path.startswith(skipped):
                    continue
                with open(path, "rb") as fh:
                    out[path] = hashlib.sha256(fh.read()).hexdigest()
    return out
