"""Certify's I/O plan (``conformance.fetch``): the run's store answers from what it fetched, and the plan
changes how objects are read, never what certify finds.

The second source of truth for every report here is certify's lazy path (``certify(..., lazy=True)``):
each check reading what it needs when it needs it, one request at a time, through an uncached store.
The negative tests and the pylance shapes compare the two as well (``conformance_kit.certify_both_ways``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conformance_kit import build_reference_dataset, certify_both_ways

from conformance.corpus.corpus import default_corpus
from conformance.corpus.portable import materialize
from conformance.fetch import RunStorage, io_parallelism_of
from reference.errors import ObjectNotFound

CORPUS = default_corpus()
CASES = sorted(json.loads((CORPUS / "corpus.json").read_text())["cases"])


@pytest.mark.parametrize("case", CASES)
def test_every_corpus_case_gets_the_same_report_through_the_plan(case: str, tmp_path: Path) -> None:
    doc = json.loads((CORPUS / "cases" / case / "case.json").read_text())
    base = materialize(CORPUS / "cases" / case / "data", tmp_path / case)
    for root in doc["roots"]:
        certify_both_ways(str(base / root), all_versions=True)


def test_the_plan_agrees_on_a_damaged_dataset(tmp_path: Path) -> None:
    """Missing, truncated and foreign files: the findings the lazy path reports, and nothing else."""
    uri = build_reference_dataset(tmp_path, bases=True, deletions=["arrow", "bin"], tags=True, branch=True)
    data = sorted(tmp_path.rglob("*.lance"))
    data[0].unlink()
    data[1].write_bytes(data[1].read_bytes()[:-7])
    sorted(tmp_path.rglob("_deletions/*"))[0].write_bytes(b"not a deletion file")
    report = certify_both_ways(uri, all_versions=True)
    assert {f.requirement for f in report.must_findings} >= {"BASE-004", "DEL-002"}


# --- the run's store -------------------------------------------------------------------------------


def _files(tmp_path: Path) -> tuple[str, list[Path]]:
    directory = tmp_path / "d"
    (directory / "sub").mkdir(parents=True)
    paths = [directory / "a", directory / "b", directory / "sub" / "c"]
    for i, p in enumerate(paths):
        p.write_bytes(b"x" * (i + 1))
    return str(directory), paths


def test_listings_below_a_recursive_one_are_cut_out_of_it(tmp_path: Path) -> None:
    directory, (_, _, c) = _files(tmp_path)
    storage = RunStorage()
    whole = list(storage.list(directory, recursive=True))
    assert len(whole) == 3
    c.unlink()  # the cut-out listing still shows it: no second walk was made
    assert [i.uri for i in storage.list(f"{directory}/sub", recursive=True)] == [str(c)]
    assert [i.uri for i in storage.list(f"{directory}/sub", recursive=False)] == [str(c)]


def test_small_objects_and_absences_are_remembered(tmp_path: Path) -> None:
    _, (a, _, _) = _files(tmp_path)
    storage = RunStorage()
    assert storage.get(str(a)) == b"x"
    a.write_bytes(b"changed")
    assert storage.get(str(a)) == b"x"
    missing = tmp_path / "elsewhere" / "m"
    with pytest.raises(ObjectNotFound):
        storage.get(str(missing))
    missing.parent.mkdir()
    missing.write_bytes(b"now here")
    with pytest.raises(ObjectNotFound):
        storage.get(str(missing))


def test_fetch_all_keeps_order_and_raises_after_the_rest_finished() -> None:
    storage = RunStorage(io_parallelism=4)
    assert storage.fetch_all([lambda i=i: i * i for i in range(50)]) == [i * i for i in range(50)]
    ran: list[int] = []

    def job(i: int) -> int:
        ran.append(i)
        if i == 3:
            raise ObjectNotFound("gone", f"/x/{i}")
        return i

    with pytest.raises(ObjectNotFound):
        storage.fetch_all([lambda i=i: job(i) for i in range(10)])
    assert sorted(ran) == list(range(10))


def test_io_parallelism_comes_from_the_flag_then_the_option() -> None:
    assert io_parallelism_of(None) == 32
    assert io_parallelism_of({"lancespec_io_parallelism": "4"}) == 4
    assert io_parallelism_of({"LANCESPEC_IO_PARALLELISM": "4"}, requested=9) == 9
    for bad in ("0", "-2", "many"):
        with pytest.raises(ValueError, match="integer from 1 to"):
            io_parallelism_of({"lancespec_io_parallelism": bad})


def test_the_io_parallelism_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lancespec.cli import main

    uri = build_reference_dataset(tmp_path, deletions=["arrow"])
    assert main(["certify", uri, "--all-versions", "--io-parallelism", "3"]) == 0
    assert main(["inspect", uri, "--io-parallelism", "1", "--format", "json"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        main(["certify", uri, "--io-parallelism", "0"])
    assert refused.value.code == 2 and "integer from 1 to" in capsys.readouterr().err
