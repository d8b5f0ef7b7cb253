"""Read the final storage of a run into the checker's ``FinalState``, straight from the endpoint (never
through the proxy: no faults, no personality).

One listing of the whole bucket gives every key; every dataset root is a top-level prefix with a
``_versions/`` directory. For each retained version: the manifest's MD5 and transaction read_version, the
files it references that no longer exist, and, when none is missing, its rows read end to end by the
reference reader (``reference.read``: resolution, every data file decoded, deletion files applied). Data
files are immutable, so a fragment's rows are read once per (data files, deletion file) and reused by
every version that shares it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reference.codec import decode_manifest_file
from reference.errors import FormatError
from reference.layout import parse_manifest_name
from reference.read import read_fragment
from reference.store import Storage, open_store
from reference.store.uri import split_bucket
from reference.table import build_snapshot

from .attribution import Breach, FinalState, VersionState, manifest_where
from .proxy import WireWrite

__all__ = ["judge_format", "observe", "read_versions_of"]


def _key(uri: str) -> str:
    return split_bucket(uri)[1]


def observe(root: str, storage_options: Mapping[str, str], initial: Iterable[str],
            progress: Callable[[int, int], None] | None = None) -> FinalState:
    """Everything the checker needs from the final storage of the bucket ``root`` (``s3://B``, ``az://C``)."""
    storage = open_store(storage_options)
    keys = {_key(info.uri) for info in storage.list(root)}
    manifests = sorted((where, key) for key in keys
                       if (where := manifest_where(key)) is not None and "/" not in where.dataset)
    final = FinalState(initial=tuple(initial))
    cache: dict[tuple[Any, ...], tuple[int, ...]] = {}
    for done, ((dataset, version), key) in enumerate(manifests, 1):
        state = _read_version(storage, storage_options, f"{root}/{dataset}", root, key, version, keys, cache)
        final.versions.setdefault(dataset, {})[version] = state
        if progress is not None:
            progress(done, len(manifests))
    return final


def judge_format(root: str, storage_options: Mapping[str, str], datasets: Iterable[str]) -> dict[str, list[Breach]]:
    """Per dataset root of the bucket ``root``: certify's MUST findings on every retained version of it and of its
    branches that no documented divergence of a real writer explains (spec/divergences.toml). A root certify
    cannot read at all is one breach of HIST-001 saying why."""
    from conformance.certify import certify  # the judge, only once the run is over
    from reference.errors import LanceSpecError

    out: dict[str, list[Breach]] = {}
    for dataset in sorted(datasets):
        try:
            report = certify(f"{root}/{dataset}", all_versions=True, storage_options=storage_options)
        except LanceSpecError as exc:
            out[dataset] = [Breach("HIST-001", None, None, exc.message)]
            continue
        found = [Breach(f.requirement, f.version, f.branch, f.message)
                 for f in report.findings if f.severity == "MUST" and f.known is None]
        if found:
            out[dataset] = found
    return out


def _read_version(storage: Storage, options: Mapping[str, str], root: str, bucket_uri: str, key: str,
                  version: int, keys: set[str], cache: dict[tuple[Any, ...], tuple[int, ...]]) -> VersionState:
    """Version ``version`` of the dataset ``root``, its manifest at ``key`` of the bucket ``bucket_uri``."""
    uri = f"{bucket_uri}/{key}"
    try:
        data = storage.get(uri)
    except Exception as exc:
        return VersionState("", None, f"manifest unreadable: {type(exc).__name__}: {exc}")
    md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
    try:
        manifest_file = decode_manifest_file(data, uri)
        if manifest_file.manifest.version != version:
            raise FormatError(f"the manifest records version {manifest_file.manifest.version}", uri)
        parsed = parse_manifest_name(key.rsplit("/", 1)[-1])
        assert parsed is not None
        snapshot = build_snapshot(root, version, parsed.naming, uri, manifest_file)
    except Exception as exc:
        return VersionState(md5, None, f"{type(exc).__name__}: {exc}")
    read_version = manifest_file.transaction.read_version if manifest_file.transaction is not None else None
    problems = snapshot.problems()
    if problems:
        return VersionState(md5, None, f"unresolvable file: {problems[0]}", read_version=read_version)
    missing = tuple(sorted({_key(f.uri) for f in snapshot.files() if f.uri is not None and f.uri.startswith(
        f"{bucket_uri}/") and _key(f.uri) not in keys}))
    if missing:
        return VersionState(md5, None, None, missing, read_version)
    rows: list[int] = []
    try:
        for fragment in snapshot.fragments:
            cache_key = (tuple(f.uri for f in fragment.files),
                         fragment.deletion.file.uri if fragment.deletion is not None else None)
            ids = cache.get(cache_key)
            if ids is None:
                table = read_fragment(snapshot, fragment, storage, options)
                ids = tuple(int(x) for x in table.column("id").to_pylist())
                cache[cache_key] = ids
            rows.extend(ids)
    except Exception as exc:
        return VersionState(md5, None, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
                            read_version=read_version)
    return VersionState(md5, tuple(rows), None, (), read_version)


def read_versions_of(writes: Iterable[WireWrite]) -> dict[str, int]:
    """A transaction's read_version by manifest MD5, for every accepted manifest the wire log holds."""
    out: dict[str, int] = {}
    for write in writes:
        if write.kind != "manifest-put" or write.body is None or write.md5 is None:
            continue
        try:
            manifest_file = decode_manifest_file(write.body, write.key)
        except Exception:
            continue
        if manifest_file.transaction is not None:
            out[write.md5] = manifest_file.transaction.read_version
    return out
