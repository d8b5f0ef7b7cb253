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
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from conformance.certify import certify
from conformance.corpus.clean import (
    PLAIN_BASE,
    ROOT_BASE,
    latest_version,
    manifest_uri,
    rewrite_manifest,
    rows,
    snapshot,
)
from conformance.corpus.clean import build_clean_dataset as build_reference_dataset
from conformance.findings import Finding, Report
from reference.codec import ManifestFile, decode_manifest_file
from reference.proto import table_pb2

__all__ = [
    "PLAIN_BASE",
    "ROOT_BASE",
    "assert_clean",
    "assert_only",
    "assert_reported",
    "build_reference_dataset",
    "certify_findings",
    "latest_version",
    "manifest_uri",
    "rewrite_manifest",
    "rows",
    "snapshot",
]

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
