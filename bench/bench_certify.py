"""Certification speed.

* ``certify-all-versions``: ``lancespec certify --all-versions`` on a 20-version dataset whose last version
  has 10,000 fragments (every file of every version checked: existence, size, footer, rows), against
  pylance opening every version and walking every fragment's data files.
* ``certify-manifest-100k``: certify's manifest checks alone on one 100,000-fragment manifest (10,000 with
  --quick), against pylance opening that version and listing its fragments. The figure that matters is
  lancespec's seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import lance
from bench_open import VersionsInputs, build_one_version, setup_versions, versions_pylance
from harness import CheckFailed, Context, benchmark

from conformance.certify import certify
from conformance.findings import Report


def certify_all(inputs: VersionsInputs) -> Report:
    return certify(inputs.uri, all_versions=True)


def conformant_and_complete(inputs: VersionsInputs, report: Report, counts: list[int]) -> str:
    if report.exit_code != 0:
        raise CheckFailed(f"certify found {len(report.must_findings)} MUST findings on a pylance dataset: "
                          f"{[f.requirement for f in report.must_findings][:5]}")
    if report.versions != list(range(1, inputs.versions + 1)):
        raise CheckFailed(f"certify checked versions {report.versions}")
    return f"{sum(counts):,} file references in {len(counts)} versions; {len(report.checks_run)} checks"


@benchmark(
    "certify-all-versions",
    measures="certify --all-versions, 20 versions up to 10,000 fragments (1,000 with --quick), vs pylance "
    "opening every version and walking its fragments",
    lancespec=certify_all,
    pylance=versions_pylance,
    check=conformant_and_complete,
)
def setup_certify_all(ctx: Context) -> VersionsInputs:
    return setup_versions(ctx)


@dataclass(frozen=True)
class ManifestInputs:
    uri: str
    fragments: int


def certify_manifest(inputs: ManifestInputs) -> Report:
    """As ``lancespec certify --only manifest`` runs with a text or JUnit report: without the evidence a later
    ``--since`` run reads from a JSON report (which lists and seals every file of the root; measured apart,
    ``bench_since.py``)."""
    return certify(inputs.uri, areas=["manifest"], with_evidence=False)


def list_fragments(inputs: ManifestInputs) -> int:
    return len(lance.dataset(inputs.uri).get_fragments())


def manifest_checked(inputs: ManifestInputs, report: Report, count: int) -> str:
    if report.exit_code != 0 or count != inputs.fragments:
        raise CheckFailed(f"exit {report.exit_code}, pylance saw {count} of {inputs.fragments} fragments")
    return f"{inputs.fragments:,} fragments; manifest checks only"


@benchmark(
    "certify-manifest-100k",
    measures="certify's manifest checks on one 100,000-fragment manifest (10,000 with --quick)",
    lancespec=certify_manifest,
    pylance=list_fragments,
    check=manifest_checked,
)
def setup_manifest(ctx: Context) -> ManifestInputs:
    fragments = ctx.size(100_000, 10_000)

    directory = ctx.cached(f"manifest-{fragments}-fragments", lambda d: build_one_version(d, fragments))
    return ManifestInputs(str(directory / "ds"), fragments)
