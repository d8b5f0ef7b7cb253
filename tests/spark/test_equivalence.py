"""Spark certify and local certify give identical reports on every fixture.

The fixtures are every dataset shape pylance writes (``SHAPES``), the divergence shapes
(``DIVERGENCE_SHAPES``) and every case of the golden corpus (``fixtures/``, materialized with
``conformance.corpus.portable``). Each is certified clean (shapes: the latest version and
every version of every root; corpus cases: every version of every root), then damaged in place so the
per-file checks have something to find in the executors (a data file deleted, one truncated, a
fragment's physical_rows off by one, a deletion file and a blob sidecar garbled) and certified again,
with ``fragments_per_task=1``: every fragment its own Spark task, the finest split.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conformance_kit import latest_version, rewrite_manifest

from conformance.certify import certify
from conformance.checks.bases import unusable_base_ids
from conformance.findings import Report
from conformance.shapes import DIVERGENCE_SHAPES, SHAPES
from conformance.spark import certify_with_spark, fragment_checks
from conformance.spark.distributed import _partitions, _plan, _Runs, _VersionWork
from reference.layout import ManifestNaming
from reference.table import Dataset

pytestmark = pytest.mark.spark

ALL_SHAPES = {**SHAPES, **DIVERGENCE_SHAPES}


def same_report(local: Report, distributed: Report) -> None:
    assert distributed.findings == local.findings
    assert (distributed.versions, distributed.readable, distributed.exit_code) == (
        local.versions, local.readable, local.exit_code)
    assert distributed.checks_run == local.checks_run
    assert distributed.requirements_checked == local.requirements_checked


def damage(uri: str, roots: Sequence[str]) -> list[str]:
    """Break the files of the latest version of ``uri`` in place (and a blob sidecar under ``roots``);
    returns what was done."""
    snapshot = Dataset(uri).snapshot(strict=False)
    data = [f.uri for fragment in snapshot.fragments for f in fragment.files if f.uri is not None]
    done = []
    if data:
        Path(data[0]).unlink(missing_ok=True)
        done.append(f"deleted {data[0]}")
    if len(data) > 1 and Path(data[-1]).exists():
        content = Path(data[-1]).read_bytes()
        Path(data[-1]).write_bytes(content[:-8])
        done.append(f"truncated {data[-1]}")
    deletions = [fr.deletion.file.uri for fr in snapshot.fragments if fr.deletion and fr.deletion.file.uri]
    if deletions and Path(deletions[0]).exists():
        Path(deletions[0]).write_bytes(b"not a deletion file")
        done.append(f"garbled {deletions[0]}")
    for root in roots:
        for sidecar in sorted(Path(root).rglob("*.blob"))[:1]:
            sidecar.write_bytes(sidecar.read_bytes()[:10])
            done.append(f"truncated {sidecar}")
    if snapshot.fragments:
        def off_by_one(manifest: Any) -> None:
            manifest.fragments[len(manifest.fragments) // 2].physical_rows += 1

        rewrite_manifest(uri, latest_version(uri), off_by_one)
        done.append("physical_rows + 1")
    return done


@pytest.mark.parametrize("name", sorted(ALL_SHAPES))
def test_spark_certify_equals_certify(spark: Any, tmp_path: Path, name: str) -> None:
    shape = ALL_SHAPES[name](tmp_path / name)
    for kwargs in ({}, {"all_versions": True}):
        local = certify(shape.uri, **kwargs)
        result = certify_with_spark(spark, shape.uri, **kwargs)
        same_report(local, result.report)
        assert result.fragments == sum(len(Dataset(root).snapshot(v, strict=False).fragments) for root, v in [
            (shape.uri if branch == "main" else f"{shape.uri}/tree/{branch}", v) for branch, v in result.versions])
    damaged_equal(spark, shape.uri, shape.roots)


def follows_files(uri: str) -> bool:
    """Whether certify follows some data file of the latest version to storage (not when the version has
    no fragment, or when its files live only in an unusable base, BASE-001/002)."""
    snapshot = Dataset(uri).snapshot(strict=False)
    unusable = unusable_base_ids(snapshot)
    return any(f.uri is not None and f.base_id not in unusable for fr in snapshot.fragments for f in fr.files)


def damaged_equal(spark: Any, uri: str, roots: Sequence[str]) -> None:
    """Damage ``uri`` and compare again."""
    followed = follows_files(uri)
    clean = certify(uri, all_versions=True)
    done = damage(uri, roots)
    local = certify(uri, all_versions=True)
    result = certify_with_spark(spark, uri, all_versions=True, fragments_per_task=1)
    same_report(local, result.report)
    if followed:
        assert set(local.findings) != set(clean.findings), f"damage ({'; '.join(done)}) found nothing"
        from_executors = {f.requirement for f in local.findings} & {"BASE-004", "CLONE-001", "MAN-004", "DEL-001",
                                                                      "DEL-002", "BLOB-003"}
        assert from_executors, "the per-file checks found nothing to compare"


def _corpus_cases() -> list[Any]:
    try:
        from conformance.corpus.corpus import default_corpus
    except ImportError as exc:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no corpus loader: {exc}"))]
    index = default_corpus() / "corpus.json"
    if not index.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no golden corpus at {index}"))]
    return sorted(json.loads(index.read_text(encoding="utf-8"))["cases"])


@pytest.mark.parametrize("case", _corpus_cases())
def test_spark_certify_equals_certify_on_the_corpus(spark: Any, tmp_path: Path, case: str) -> None:
    from conformance.corpus.corpus import default_corpus
    from conformance.corpus.portable import materialize

    case_dir = default_corpus() / "cases" / case
    doc = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    base = materialize(case_dir / "data", tmp_path / case)
    uris = [str(base / root) for root in doc["roots"]]
    for uri in uris:
        same_report(certify(uri, all_versions=True), certify_with_spark(spark, uri, all_versions=True).report)
    if not case.startswith("breach-"):  # a breach case is damaged already (its reports compared above)
        damaged_equal(spark, uris[0], [str(base)])


def test_findings_dataframe_columns(spark: Any, tmp_path: Path) -> None:
    shape = SHAPES["deletions_arrow"](tmp_path / "shape")
    result = certify_with_spark(spark, shape.uri, all_versions=True)
    rows = result.findings_df.orderBy("requirement", "version", "path", "message").collect()
    assert [r.asDict() for r in rows] == [f.to_json() for f in result.findings]
    assert result.findings_df.filter("severity = 'MUST'").count() == len(result.report.must_findings)


def test_fragment_checks_are_version_checks() -> None:
    from conformance.checks import all_checks

    checks = all_checks()
    assert fragment_checks() and all(checks[name].scope == "version" for name in fragment_checks())


def test_plan_splits_versions_into_slices() -> None:
    def work(fragments: int) -> _VersionWork:
        return _VersionWork("r", "r", None, 1, ManifestNaming.V2, "m", b"", None, None, None, 0, (), fragments)

    works = {0: work(5), 1: work(0), 2: work(3)}
    # ordered by position, so that the same fragments of every version (which an append keeps) are adjacent
    assert _plan(works, 2, 2, 4) == [(0, 0, 2), (2, 0, 2), (0, 2, 4), (2, 2, 3), (0, 4, 5)]
    assert _plan(works, 2, None, 4) == [(0, 0, 1), (2, 0, 1), (0, 1, 2), (2, 1, 2), (0, 2, 3), (2, 2, 3),
                                        (0, 3, 4), (0, 4, 5)]
    assert len(_plan({0: work(20_000)}, 2, None, 4)) == 8
    with pytest.raises(ValueError):
        _plan(works, 2, 0, 4)


def test_partitions_never_split_a_position() -> None:
    def work(fragments: int, root: str = "r") -> _VersionWork:
        return _VersionWork(root, "r", None, 1, ManifestNaming.V2, "m", b"", None, None, None, 0, (), fragments)

    # appends: 200 fragments per version, five versions; four tasks of 250-fragment positions
    works = {v: work(200 * (v + 1)) for v in range(5)}
    plan = _plan(works, 1, None, 4)
    groups = _partitions(works, plan, 4)
    assert [sorted({start for _, start, _ in g}) for g in groups] == [[0], [250], [500], [750]]
    assert [len(g) for g in groups] == [5, 4, 3, 2]  # Spark's even cut of the 14 slices would split position 0
    assert [item for g in groups for item in g] == plan
    # fewer tasks than positions: whole positions in order, each in the task whose even share of the 14
    # slices holds its middle slice (5 + 4 | 3 + 2: the middles at 2.5, 7, 10.5 and 13)
    assert [sorted({start for _, start, _ in g}) for g in _partitions(works, plan, 2)] == [[0, 250], [500, 750]]
    # more tasks than positions: one position each; two roots never share a position
    two = {0: work(2, "a"), 1: work(2, "b")}
    assert _partitions(two, _plan(two, 1, 1, 4), 16) == [[(0, 0, 1)], [(0, 1, 2)], [(1, 0, 1)], [(1, 1, 2)]]
    assert _partitions({}, [], 4) == []


def test_a_history_of_many_runs_is_cut_into_whole_versions_between_runs() -> None:
    def work(fragments: int, run: int) -> _VersionWork:
        return _VersionWork("r", "r", None, 1, ManifestNaming.V2, "m", b"", None, None, None, 0, (), fragments, run)

    # 40 versions in 10 runs of 4 (appends of one fragment, each run started by a compaction to one fragment)
    works = {v: work(1 + v % 4, v // 4) for v in range(40)}
    plan = _plan(works, 2, None, 4)
    assert plan == [(v, 0, 1 + v % 4) for v in range(40)]  # 10 runs fill 8 tasks: versions are not cut
    groups = _partitions(works, plan, 8)
    assert [item for g in groups for item in g] == plan
    assert len(groups) == 8 and all(len(g) % 4 == 0 for g in groups)  # whole runs only: no carry is broken
    # one run: a version is cut into slices as before, whatever the number of versions
    assert len({start for _, start, _ in _plan({v: work(800, 0) for v in range(40)}, 2, None, 4)}) == 8


def _growing_history(root: Path, versions: int, compact_every: int) -> str:
    """``versions`` versions written by pylance: one-row appends, a ``compact_files`` every ``compact_every``
    versions (which starts a new run: the fragments before it are gone)."""
    import lance
    import pyarrow as pa

    uri = str(root)
    lance.write_dataset(pa.table({"id": [0]}), uri)
    for i in range(1, versions):
        if i % compact_every == 0:
            lance.dataset(uri).optimize.compact_files()
        else:
            lance.write_dataset(pa.table({"id": [i]}), uri, mode="append")
    return uri


def test_spark_certify_equals_certify_on_a_long_history(spark: Any, tmp_path: Path) -> None:
    """A history of many runs is certified in whole versions cut between runs (the default plan): the
    report equals certify's, clean and after a data file only old versions reference and one of the
    latest version are deleted."""
    uri = _growing_history(tmp_path / "ds", 48, 5)
    local = certify(uri, all_versions=True)
    runs = _Runs()
    numbered = [runs.of(uri, Dataset(uri).snapshot(v)) for v in local.versions]
    assert numbered == sorted(numbered) and numbered[-1] >= 8  # more runs than tasks: whole versions
    result = certify_with_spark(spark, uri, all_versions=True)
    same_report(local, result.report)
    assert result.tasks > 1 and result.fragments == sum(len(Dataset(uri).snapshot(v).fragments)
                                                        for v in local.versions)
    first = Dataset(uri).snapshot(1).fragments[0].files[0].uri
    latest = Dataset(uri).snapshot().fragments[-1].files[0].uri
    assert first is not None and latest is not None and first != latest
    Path(first).unlink()
    Path(latest).unlink()
    damaged = certify(uri, all_versions=True)
    assert {(f.requirement, f.version) for f in damaged.findings} - {(f.requirement, f.version) for f in local.findings}
    same_report(damaged, certify_with_spark(spark, uri, all_versions=True).report)


def test_a_bug_on_the_driver_while_the_job_runs_stops_the_job_and_is_reported(spark: Any, tmp_path: Path,
                                                                              monkeypatch: Any) -> None:
    """The job runs beside the driver's checks: a lancespec bug in a dataset-wide check (run after the job
    started) is certify's CertifyError with the report attached, the job's thread is waited for, and the
    session goes on working."""
    import dataclasses
    import threading

    from conformance.certify import CertifyError
    from conformance.checks import REGISTRY, all_checks

    def broken(ctx: Any) -> None:
        raise RuntimeError("a planted bug")

    all_checks()
    monkeypatch.setitem(REGISTRY, "blobs.orphans", dataclasses.replace(REGISTRY["blobs.orphans"], func=broken))
    uri = _growing_history(tmp_path / "ds", 12, 5)
    with pytest.raises(CertifyError, match="a planted bug") as raised:
        certify_with_spark(spark, uri, all_versions=True)
    assert raised.value.report is not None and raised.value.report.internal_error
    assert not [t for t in threading.enumerate() if t.name.startswith("lancespec-spark-")]
    assert spark.sparkContext.parallelize([1, 2], 2).sum() == 3
