"""The seeded mutational fuzzer (``python -m lancespec.fuzz``, docs/security.md): a bounded run in the
default suite, many cases in the ``slow`` tier (``LANCESPEC_FUZZ_CASES``, default 2000), and proof that
its audit and its crash detection see what they are meant to see."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from conformance_kit import build_reference_dataset

from lancespec.fuzz import copy_world, damage, fuzz, mutate, mutation_targets
from lancespec.fuzz_worker import PAUSE_FILE, Worker
from lancespec.fuzz_world import build_pristine


def test_a_bounded_fuzz_run_finds_nothing(tmp_path: Path) -> None:
    result = fuzz(12, seed=0, workdir=tmp_path)
    assert result.cases == 12
    assert result.failures == {}, result.failures


def test_the_fuzzer_runs_from_any_folder(tmp_path: Path) -> None:
    """Started outside the checkout (the current folder is not on the import path), lancespec's own
    modules and catalogue, read lazily during a case, are not reads outside the dataset."""
    done = subprocess.run([sys.executable, "-m", "lancespec.fuzz", "--cases", "3", "--seed", "100000"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "; 0 failed;" in done.stdout, done.stdout


@pytest.mark.parametrize("seed", [1106, 1241, 1559, 21034, 26174, 109596])
def test_seeds_that_once_failed(tmp_path: Path, seed: int) -> None:
    """1241, 1559: a blob field's metadata that is not UTF-8 was an internal error; 1106: a damaged base
    path names another directory, where reading is the dataset's right (the audit allows registered bases);
    21034: a damaged ``.bin`` bitmap made pyroaring raise IndexError, an internal error instead of DEL-002;
    26174: a data file with fewer column_indices than fields broke the blob reader's lookup (MAN-008's
    finding, not a crash); 109596: a damaged manifest names a directory as a data file, whose opening raised
    IsADirectoryError (an internal error) instead of the store's refusal of what is not a regular file."""
    assert fuzz(1, seed=seed, workdir=tmp_path, structured_share=0).failures == {}


def test_a_workdir_keeps_its_world_so_seeds_replay_exactly(tmp_path: Path) -> None:
    """File names of the pristine world are random; a second run in the same workdir meets the same world,
    so the seed a long run named damages the same bytes again."""
    fuzz(1, seed=7, workdir=tmp_path)
    world = sorted(p.relative_to(tmp_path) for p in (tmp_path / "pristine").rglob("*"))
    fuzz(1, seed=8, workdir=tmp_path)
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "pristine").rglob("*")) == world
    assert any(p.suffix == ".lance" for p in world)


@pytest.mark.slow
def test_many_fuzz_cases_find_nothing(tmp_path: Path) -> None:
    cases = int(os.environ.get("LANCESPEC_FUZZ_CASES", "2000"))
    seed = int(os.environ.get("LANCESPEC_FUZZ_SEED", "0"))
    result = fuzz(cases, seed=seed, workdir=tmp_path)
    assert result.failures == {}, result.summary()


def test_the_audit_sees_a_read_outside(tmp_path: Path) -> None:
    """The worker's audit reports the paths a run opens outside what it was allowed."""
    uri = build_reference_dataset(tmp_path / "elsewhere")
    worker = Worker()
    try:
        answer = worker.run(["inspect", uri, "--json"], [str(tmp_path / "allowed")])
        assert answer["code"] == 0
        assert any(str(p).startswith(uri) for p in answer["outside"]), answer
        clean = worker.run(["inspect", uri, "--json"], [str(tmp_path / "elsewhere")])
        assert clean["outside"] == [] and clean["verdict"] == answer["verdict"]
    finally:
        worker.stop()


def test_mutations_are_seeded() -> None:
    data = bytes(range(256)) * 4
    assert mutate(data, random.Random(7)) == mutate(data, random.Random(7))
    assert any(mutate(data, random.Random(s)) != data for s in range(10))


def test_structure_aware_damage_keeps_files_decodable_and_the_world_intact(tmp_path: Path) -> None:
    """Structure-aware damage (lancespec/fuzz_structure.py) reaches repeated fields of manifests and
    transactions, both deletion-file encodings and refs; a damaged manifest still decodes (so the checks,
    not the decoder, meet the damage); and damage never writes through the hard links a case shares with
    the pristine world."""
    from reference.codec import decode_manifest_file

    world = build_pristine(tmp_path / "pristine")
    targets = mutation_targets(world)
    before = {t: (world / t).read_bytes() for t in targets}
    (tmp_path / "outside.txt").write_text("x")
    kinds: set[str] = set()
    for seed in range(300):
        case = tmp_path / f"case{seed % 2}"
        if case.exists():
            import shutil

            shutil.rmtree(case)
        copy_world(world, case)
        what = damage(case, targets, seed, tmp_path / "outside.txt")
        assert what == damage_again(world, targets, seed, tmp_path)
        if " in " in what:
            kinds.add(what.split(" in ")[1].split("/")[1])
            if what.endswith(".manifest") and "inline transaction" not in what:
                path = case / what.split(" in ")[1]
                decode_manifest_file(path.read_bytes(), str(path))
    assert {"_versions", "_transactions", "_deletions", "_refs"} <= kinds, kinds
    assert {t: (world / t).read_bytes() for t in targets} == before


def damage_again(world: Path, targets: list[Path], seed: int, tmp_path: Path) -> str:
    """The same seed's damage on a fresh copy: a seed names one damage."""
    import shutil

    again = tmp_path / "again"
    if again.exists():
        shutil.rmtree(again)
    copy_world(world, again)
    return damage(again, targets, seed, tmp_path / "outside.txt")


@pytest.mark.parametrize("seed", [700829, 701443, 3006148, 10546325])
def test_structured_seeds_that_once_failed(tmp_path: Path, seed: int) -> None:
    """Found by structure-aware damage on its first run: 700829, a fragment's physical_rows set to 2^64 - 1
    made Arrow's comparison of deletion offsets raise TypeError (exit 3); 701443, a clone's ref_path set to
    ``a/../../b`` was normalised to ``/b`` and listed (a read outside); 3006148 (the final code of 2026-11-28), a
    branch's data file path set to ``../../outside`` through a base that is not a dataset root: the resolver
    joined it unchecked, and the shallow-clone rule listed its directory, which the run's listing normalised to
    the folder above the world (a read outside; the run then ended in exit 2 instead of PORT-001). Its read outside
    needed the world it was found in (a fresh world draws other names); the two tests below hold each rule."""
    assert fuzz(1, seed=seed, workdir=tmp_path).failures == {}


def test_a_clone_source_that_names_no_place_is_never_read() -> None:
    from conformance.checks.clones import readable_source
    from reference.proto import transaction_pb2

    for path, readable in [("a/../../b", ""), ("../../outside", ""), ("/tmp/x/../y", ""), ("", ""),
                           ("/data/source", "/data/source"), ("s3://bucket/source", "s3://bucket/source")]:
        assert readable_source(transaction_pb2.Transaction.Clone(ref_path=path)) == readable, path


def test_deletion_offsets_are_compared_whatever_physical_rows_says() -> None:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    from conformance.checks.files import _decode_arrow

    def arrow_file(values: pa.Array) -> bytes:
        sink, table = pa.BufferOutputStream(), pa.table({"row_id": values})
        with ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue().to_pybytes())

    assert _decode_arrow(arrow_file(pa.array([1, 2, 7], pa.uint32())), 2**64 - 1).outside == 0
    assert _decode_arrow(arrow_file(pa.array([1, 2, 7], pa.uint32())), 4).first_outside == (7,)
    assert _decode_arrow(arrow_file(pa.array([2**64 - 1, 3], pa.uint64())), 4).first_outside == (2**64 - 1,)


def test_bitmap_offsets_are_compared_whatever_physical_rows_says() -> None:
    """A roaring bitmap holds u32 offsets; a physical_rows past 2^32 (seed 10546325 set one) leaves none outside
    (pyroaring's rank took it for a u32: an internal error, exit 3)."""
    from pyroaring import BitMap

    from conformance.checks.files import _decode_bitmap

    data = BitMap([1, 2, 7, 2**32 - 1]).serialize()
    assert _decode_bitmap(data, 2**64 - 1, "d.bin").outside == 0
    assert _decode_bitmap(data, 2**32, "d.bin").outside == 0
    assert _decode_bitmap(data, 2**32 - 1, "d.bin").first_outside == (2**32 - 1,)
    assert _decode_bitmap(data, 4, "d.bin").first_outside == (7, 2**32 - 1)


def test_a_recorded_path_that_climbs_resolves_to_nothing_through_any_base(tmp_path: Path) -> None:
    """``layout.resolve``'s rule holds in the resolver every snapshot uses: a data file path with a ``..``
    segment, through a base that is not a dataset root, resolves to no URI and says why."""
    from reference.layout import Base, FileKind
    from reference.table import _Resolver

    bases = (Base(1, None, str(tmp_path / "base"), False),)
    resolver = _Resolver(str(tmp_path / "ds"), bases, None)
    climbing = resolver.file(1, FileKind.DATA, "../../outside", None, "m", "fragment 0")
    assert climbing.uri is None and climbing.problem is not None and "'..'" in climbing.problem.message
    plain = resolver.file(1, FileKind.DATA, "x.lance", None, "m", "fragment 1")
    assert plain.uri == f"{tmp_path}/base/x.lance" and plain.problem is None


def test_the_run_s_listing_refuses_a_climbing_prefix_before_normalising_it(tmp_path: Path) -> None:
    from conformance.fetch import RunStorage
    from reference.errors import StorageError

    (tmp_path / "inside").mkdir()
    storage = RunStorage(None)
    with pytest.raises(StorageError, match=r"'\.\.' segment"):
        list(storage.list(f"{tmp_path}/inside/../..", recursive=False))
    assert list(storage.list(f"{tmp_path}/inside", recursive=False)) == []


def test_an_unstable_verdict_says_which_findings_differ() -> None:
    from lancespec.fuzz_worker import problem

    def answer(verdict: str, findings: list[list[object]]) -> dict[str, object]:
        return {"code": 1, "outside": [], "traceback": False, "stderr": "", "verdict": verdict, "findings": findings}

    shared = ["FILE-001", 2, "ROOT/data/a.lance", "missing"]
    first = answer("aa", [shared, ["FILE-004", 2, "ROOT/data/b.lance", "unreadable: 412"]])
    second = answer("bb", [shared, ["FILE-004", 2, "ROOT/data/b.lance", "unreadable: timed out"]])
    said = problem(first, second)
    assert said is not None and said.startswith("unstable verdict: exit 1 then 1; ")
    assert "only in the first" in said and "412" in said and "only in the second" in said and "timed out" in said
    assert problem(first, answer("aa", first["findings"])) is None  # type: ignore[arg-type]


def test_a_pause_file_holds_the_run_between_cases(tmp_path: Path) -> None:
    """``pause`` in the workdir: the run builds its world, then starts no case until the file is removed; then it
    runs its cases as any run does (a long run yields the machine to a measurement this way)."""
    import time

    (tmp_path / PAUSE_FILE).touch()
    proc = subprocess.Popen([sys.executable, "-m", "lancespec.fuzz", "--cases", "2", "--seed", "5",
                             "--workdir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "pristine.complete").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
        time.sleep(2)
        assert proc.poll() is None and not (tmp_path / "case").exists()  # held before its first case
        (tmp_path / PAUSE_FILE).unlink()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out.strip().splitlines()[-1].startswith("2 cases in "), out
