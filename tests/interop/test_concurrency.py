"""Concurrent commits through the reference's real commit path (docs/lance-format.md §7), checked by pylance.

* Many writers: 8 processes ('spawn', each with its own store) append one-row fragments to one dataset
  the reference created; afterwards the history must be versions 1..N with no gap and no repeat (every
  manifest decoded, the version inside equal to its name), every append a worker saw succeed must be in
  the latest version, in the version the worker was told, exactly once, and pylance must read every
  version with the row count the model predicts.
* The conflict matrix (§7.3) driven through ``ops`` and ``commit.commit``: two handles opened at the same
  read_version, one lands first, the other commits a now-stale transaction.
* Mixed writers: reference and pylance processes append to one dataset at the same time; nothing is lost.

The helpers (workers, ``run_writers``, ``check_append_history``) are shared with the S3 variant in
``tests/s3/test_concurrency_s3.py``; worker functions live at module level so 'spawn' children can
import them.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_mod
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

from reference import commit as commit_mod
from reference import gc, ops
from reference.apply import apply_transaction
from reference.codec import decode_manifest_file
from reference.commit import commit
from reference.errors import CommitConflict, ObjectNotFound
from reference.layout import DELETIONS_DIR, VERSIONS_DIR, parse_manifest_name
from reference.store import Storage, open_store
from reference.store.local import LocalStore
from reference.store.uri import join
from reference.table import Dataset, Head

pytestmark = pytest.mark.interop

WORKERS = 8
APPENDS = 20
INITIAL_ROWS = 4  # two fragments of two rows
SCHEMA = pa.schema([("uid", pa.int64()), ("worker", pa.int64()), ("seq", pa.int64())])
WRITER_TIMEOUT_S = 240.0


# --- the writers (module level: 'spawn' children import them) --------------------------------------


def uid_of(worker: int, seq: int) -> int:
    """The unique value an append carries in its row: who wrote it and which of its appends it was."""
    return worker * 100_000 + seq


def row_table(worker: int, seq: int) -> pa.Table:
    return pa.table({"uid": [uid_of(worker, seq)], "worker": [worker], "seq": [seq]}, schema=SCHEMA)


def initial_table() -> pa.Table:
    return pa.table({"uid": [-1, -2, -3, -4], "worker": [-1] * 4, "seq": [0, 1, 2, 3]}, schema=SCHEMA)


def open_worker_store(storage_options: dict[str, str] | None) -> Storage:
    """The store a writer process opens for itself."""
    return open_store(storage_options)


def reference_append_worker(uri: str, storage_options: dict[str, str] | None, worker: int, appends: int,
                            start: Any, results: Any) -> None:
    """Append ``appends`` one-row fragments through ``ops.append`` on a store this process opens itself;
    report every outcome on ``results``: ("ok", worker, seq, uid, version, attempts) or
    ("error", worker, seq, uid, text), then ("done", worker)."""
    try:
        dataset = Dataset(uri, open_worker_store(storage_options))
        results.put(("ready", worker))
        start.wait(timeout=120)
        for seq in range(appends):
            uid = uid_of(worker, seq)
            try:
                result = ops.append(dataset, row_table(worker, seq))
            except Exception as exc:
                results.put(("error", worker, seq, uid, f"{type(exc).__name__}: {exc}"))
            else:
                results.put(("ok", worker, seq, uid, result.version, result.attempts))
    finally:
        results.put(("done", worker))


def pylance_append_worker(uri: str, storage_options: dict[str, str] | None, worker: int, appends: int,
                          start: Any, results: Any) -> None:
    """As :func:`reference_append_worker`, through ``lance.write_dataset(..., mode="append")``; pylance does
    not tell its attempts, so ``attempts`` is reported as 0."""
    try:
        results.put(("ready", worker))
        start.wait(timeout=120)
        for seq in range(appends):
            uid = uid_of(worker, seq)
            try:
                ds = lance.write_dataset(row_table(worker, seq), uri, mode="append",
                                         storage_options=storage_options)
            except Exception as exc:
                results.put(("error", worker, seq, uid, f"{type(exc).__name__}: {exc}"))
            else:
                results.put(("ok", worker, seq, uid, ds.version, 0))
    finally:
        results.put(("done", worker))


@dataclass
class WriterRun:
    """What the writers reported."""

    ok: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # worker, seq, uid, version, attempts
    errors: list[tuple[int, int, int, str]] = field(default_factory=list)  # worker, seq, uid, text
    seconds: float = 0.0

    def attempts(self, workers: Sequence[int] | None = None) -> Counter[int]:
        return Counter(a for w, _, _, _, a in self.ok if workers is None or w in workers)

    def describe(self, workers: Sequence[int] | None = None) -> str:
        dist = self.attempts(workers)
        return ", ".join(f"{n} attempt{'s' if n > 1 else ''}: {dist[n]}" for n in sorted(dist))


def run_writers(uri: str, storage_options: dict[str, str] | None,
                writers: Sequence[Callable[..., None]], appends: int,
                timeout: float = WRITER_TIMEOUT_S) -> WriterRun:
    """Start one 'spawn' process per entry of ``writers`` (worker number = position), release them
    together once every one has imported and opened its store, collect every report, and join them.
    ``WriterRun.seconds`` runs from the release to the last report."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    start = ctx.Event()
    procs = [ctx.Process(target=fn, args=(uri, storage_options, worker, appends, start, results),
                         name=f"writer-{worker}")
             for worker, fn in enumerate(writers)]
    for proc in procs:
        proc.start()
    run = WriterRun()
    ready: set[int] = set()
    done: set[int] = set()
    deadline = time.monotonic() + timeout
    begun = 0.0
    try:
        while len(done) < len(procs):
            try:
                message = results.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue_mod.Empty:
                raise AssertionError(
                    f"writers {sorted(set(range(len(procs))) - done)} did not finish within {timeout:g} s "
                    f"({len(ready)} were ready)"
                ) from None
            kind = message[0]
            if kind == "ready":
                ready.add(message[1])
                if len(ready) == len(procs):
                    begun = time.monotonic()
                    start.set()
            elif kind == "done":
                done.add(message[1])
                if message[1] not in ready:  # it died before it was ready: do not hold the others back
                    start.set()
            elif kind == "ok":
                run.ok.append(tuple(message[1:]))
            else:
                run.errors.append(tuple(message[1:]))
        run.seconds = time.monotonic() - begun
        for proc in procs:
            proc.join(timeout=30)
        bad = [(p.name, p.exitcode) for p in procs if p.exitcode != 0]
        assert not bad, f"writer processes exited abnormally: {bad}"
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
    return run


# --- checking a history of one-row appends ----------------------------------------------------------


def manifests_by_version(storage: Storage, root: str) -> dict[int, Any]:
    """Every manifest of ``_versions/``, decoded, by the version its *name* denotes; asserts that no
    name repeats a version and that the version inside each manifest equals its name."""
    out: dict[int, Any] = {}
    for info in storage.list(join(root, VERSIONS_DIR), recursive=False):
        parsed = parse_manifest_name(info.uri.rsplit("/", 1)[-1])
        if parsed is None:
            continue
        assert not parsed.detached, f"unexpected detached manifest {info.uri}"
        assert parsed.version not in out, f"two manifests for version {parsed.version}"
        manifest_file = decode_manifest_file(storage.get(info.uri), info.uri)
        assert manifest_file.manifest.version == parsed.version, (
            f"{info.uri} is named version {parsed.version} but records {manifest_file.manifest.version}"
        )
        out[parsed.version] = manifest_file
    return out


def check_append_history(uri: str, storage_options: dict[str, str] | None, run: WriterRun, *,
                         initial_rows: int = INITIAL_ROWS, initial_fragments: int = 2,
                         read_every_version: bool = True) -> int:
    """Check the dataset at ``uri`` after ``run``: versions 1..N, one one-row append per version after the
    first, every reported success present (in the version reported), nothing else; return N."""
    storage = open_store(storage_options)
    root = Dataset(uri, storage).uri
    manifests = manifests_by_version(storage, root)
    versions = sorted(manifests)
    expected_versions = 1 + len(run.ok)
    assert versions == list(range(1, expected_versions + 1)), (
        f"versions on storage {versions[:3]}..{versions[-3:]} ({len(versions)}), expected 1..{expected_versions}"
    )
    reported = Counter(version for _, _, _, version, _ in run.ok)
    repeated = {v: n for v, n in reported.items() if n > 1}
    assert not repeated, f"several successful appends were told the same version: {repeated}"

    # Every version after the first is one Append of one fragment, on top of its predecessor's fragments.
    txn_uuids: set[str] = set()
    previous_ids: set[int] = set()
    added_in: dict[int, int] = {}  # version -> the fragment id it added
    for version in versions:
        manifest_file = manifests[version]
        ids = [f.id for f in manifest_file.manifest.fragments]
        assert len(ids) == len(set(ids)), f"version {version} repeats fragment ids"
        txn = manifest_file.transaction
        assert txn is not None, f"version {version} has no inline transaction"
        assert txn.uuid not in txn_uuids, f"transaction {txn.uuid} was committed twice (version {version})"
        txn_uuids.add(txn.uuid)
        if version == 1:
            assert len(ids) == initial_fragments
        else:
            assert txn.WhichOneof("operation") == "append", f"version {version}: {txn.WhichOneof('operation')}"
            assert txn.read_version < version
            new = set(ids) - previous_ids
            assert previous_ids <= set(ids), f"version {version} lost fragments {sorted(previous_ids - set(ids))}"
            assert len(new) == 1 and len(ids) == len(previous_ids) + 1, f"version {version} added {sorted(new)}"
            added_in[version] = new.pop()
        previous_ids = set(ids)
    assert len(previous_ids) == initial_fragments + len(run.ok)

    # pylance: the latest version holds exactly the initial rows and every reported success, once each.
    latest = versions[-1]
    ds = lance.dataset(uri, storage_options=storage_options)
    assert ds.version == latest
    uids = ds.to_table(columns=["uid"]).column("uid").to_pylist()
    expected_uids = sorted([-1 - i for i in range(initial_rows)] + [uid for _, _, uid, _, _ in run.ok])
    lost, unexpected = sorted(set(expected_uids) - set(uids)), sorted(set(uids) - set(expected_uids))
    assert sorted(uids) == expected_uids, f"lost: {lost[:10]}, unexpected: {unexpected[:10]}, or duplicates"
    # ... and each success sits in the fragment the version it was told added.
    by_fragment = {
        frag.fragment_id: frag.to_table(columns=["uid"]).column("uid").to_pylist() for frag in ds.get_fragments()
    }
    for worker, seq, uid, version, _ in run.ok:
        assert by_fragment[added_in[version]] == [uid], (
            f"worker {worker} append {seq} was told version {version}, whose fragment holds "
            f"{by_fragment[added_in[version]]}"
        )
    # Every version opens in pylance with the model's row count (one row per append).
    for version in versions:
        at = lance.dataset(uri, version=version, storage_options=storage_options)
        expected = initial_rows + version - 1
        if read_every_version:
            assert at.to_table(columns=["uid"]).num_rows == expected, f"version {version}"
        else:
            assert at.count_rows() == expected, f"version {version}"
    return latest


def create_initial(uri: str, storage_options: dict[str, str] | None = None) -> None:
    result = ops.create(uri, initial_table(), storage=open_store(storage_options), max_rows_per_file=2)
    assert result.version == 1


# --- many reference writers on local disk -----------------------------------------------------------


def test_local_listing_tolerates_vanishing_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic reproduction of the race the 8-writer run hits: ``_versions/`` holds a manifest and
    a staging file that its writer unlinks right after ``scandir`` reported it (as ``put_if_absent``
    does). Listing must report the manifest and skip the vanished file, not fail."""
    versions = tmp_path / "_versions"
    versions.mkdir()
    (versions / "1.manifest").write_bytes(b"m")
    (versions / ".tmp-0123").write_bytes(b"t")
    real_scandir = os.scandir

    class VanishingScandir:
        def __init__(self, path: str | int) -> None:  # the store lists a directory it opened (a descriptor)
            self.inner = real_scandir(path)

        def __enter__(self) -> VanishingScandir:
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

        def __iter__(self) -> Iterator[os.DirEntry[str]]:
            for entry in self.inner:
                if entry.name.startswith(".tmp-"):
                    os.unlink(versions / entry.name)  # the concurrent writer finishes its put_if_absent
                yield entry

    monkeypatch.setattr(os, "scandir", VanishingScandir)
    names = [info.uri.rsplit("/", 1)[-1] for info in LocalStore().list(str(versions), recursive=False)]
    assert names == ["1.manifest"]


def test_eight_reference_writers_local(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    create_initial(uri)
    run = run_writers(uri, None, [reference_append_worker] * WORKERS, APPENDS)
    print(f"\n8x{APPENDS} reference appends on local disk in {run.seconds:.1f} s; attempts: {run.describe()}")
    assert not run.errors, f"{len(run.errors)} appends failed: {run.errors[:5]}"
    assert len(run.ok) == WORKERS * APPENDS
    assert check_append_history(uri, None, run) == 1 + WORKERS * APPENDS


def test_reference_and_pylance_writers_local(tmp_path: Path) -> None:
    """4 reference and 4 pylance processes append to one dataset at once: nothing a writer saw succeed
    is lost, and both read every version the other wrote."""
    uri = str(tmp_path / "ds")
    create_initial(uri)
    writers = [reference_append_worker] * 4 + [pylance_append_worker] * 4
    run = run_writers(uri, None, writers, APPENDS)
    print(f"\n4+4 reference/pylance x{APPENDS} appends on local disk in {run.seconds:.1f} s; "
          f"reference attempts: {run.describe(range(4))}; errors: {run.errors[:3]}")
    # pylance may give up under contention ("Too many concurrent writers"): an error, not a loss. Every
    # success must be there and nothing else; the reference side must not fail at all.
    assert not [e for e in run.errors if e[0] < 4], f"reference appends failed: {run.errors}"
    assert len(run.ok) + len(run.errors) == 8 * APPENDS
    assert len(run.errors) <= 2, f"too many pylance appends failed: {run.errors}"
    check_append_history(uri, None, run)
    # The reference read every version pylance committed, and the other way round.
    dataset = Dataset(uri)
    for version in dataset.versions():
        assert dataset.snapshot(version).num_rows == INITIAL_ROWS + version - 1


# --- the conflict matrix through the real commit path -----------------------------------------------


class PinnedHandle(Dataset):
    """A dataset handle opened at ``read_version``: its first look at "the latest version" returns that
    version however many versions landed since, as a writer that loaded the dataset earlier would see it.
    Later looks (e.g. ``ops.delete`` recomputing after a retryable conflict) see the real latest."""

    def __init__(self, uri: str, read_version: int) -> None:
        super().__init__(uri, open_store())
        self._pinned: int | None = read_version

    def head(self, version: int | None = None, *, strict: bool = True) -> Head:
        if version is None and self._pinned is not None:
            version, self._pinned = self._pinned, None
        return super().head(version, strict=strict)


def ten_rows(start: int = 0, n: int = 10) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())})


@pytest.fixture
def base_dataset(tmp_path: Path) -> str:
    uri = str(tmp_path / "ds")
    ops.create(uri, ten_rows())
    return uri


def pylance_ids(uri: str, version: int | None = None) -> list[int]:
    return sorted(lance.dataset(uri, version=version).to_table().column("id").to_pylist())


def test_append_vs_append_both_land(base_dataset: str) -> None:
    a, b = PinnedHandle(base_dataset, 1), PinnedHandle(base_dataset, 1)
    first = ops.append(b, ten_rows(100, 2))
    second = ops.append(a, ten_rows(200, 2))
    assert (first.version, second.version) == (2, 3)
    assert second.attempts == 1  # compatible: judged, then committed on top of v2 at the first try
    assert pylance_ids(base_dataset) == [*range(10), 100, 101, 200, 201]
    assert [f.id for f in Dataset(base_dataset).snapshot().fragments] == [0, 1, 2]


class HeldHandle(Dataset):
    """A dataset handle that read its version earlier: ``head()`` answers that decoded manifest, even if
    cleanup has removed it since, as a writer holding it in memory would."""

    def __init__(self, uri: str) -> None:
        super().__init__(uri, open_store())
        self.held = Dataset(uri).head()

    def head(self, version: int | None = None, *, strict: bool = True) -> Head:
        return self.held if version is None else super().head(version, strict=strict)


def test_a_stale_writer_never_fills_a_version_cleanup_removed(base_dataset: str) -> None:
    """A free name for the version after the one in hand does not mean nothing newer exists: cleanup removes
    old manifests. A writer that read v2, while others reached v5 and a cleanup removed v1 to v3, must not
    re-create v3 (the simulator caught a commit loop that skipped its first listing doing so; HIST-001).
    The reference refuses: v3's transaction is gone, so the append cannot be judged against it."""
    ops.append(Dataset(base_dataset), ten_rows(100, 1))
    stale = HeldHandle(base_dataset)
    assert stale.held.version == 2
    for start in (200, 300, 400):
        ops.append(Dataset(base_dataset), ten_rows(start, 1))
    gc.cleanup(Dataset(base_dataset), gc.CleanupPolicy(older_than=timedelta(0), retain_versions=2))
    assert Dataset(base_dataset).versions() == [4, 5]
    with pytest.raises(CommitConflict, match="version 3 has no readable transaction"):
        ops.append(stale, ten_rows(900, 1))
    assert Dataset(base_dataset).versions() == [4, 5]
    assert 900 not in pylance_ids(base_dataset)


def test_a_version_removed_between_listing_and_reading_cannot_be_judged(base_dataset: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The names a commit judges come from its listing; a manifest a cleanup removes after that listing and
    before the read is refused as one the listing never showed, never an unexplained ObjectNotFound."""
    ops.append(Dataset(base_dataset), ten_rows(100, 1))
    stale = PinnedHandle(base_dataset, 1)
    real_get = stale.storage.get
    removed = f"/{VERSIONS_DIR}/{Dataset(base_dataset).version_entries()[-1].uri.rsplit('/', 1)[-1]}"

    def get(uri: str) -> bytes:
        if uri.endswith(removed):
            raise ObjectNotFound("no such object", uri)
        return real_get(uri)

    monkeypatch.setattr(stale.storage, "get", get)
    with pytest.raises(CommitConflict, match="version 2 has no readable transaction"):
        ops.append(stale, ten_rows(900, 1))
    assert Dataset(base_dataset).versions() == [1, 2]


def test_overwrite_after_append_succeeds(base_dataset: str) -> None:
    """Overwrite row, Append column: nothing listed, compatible (pylance: Overwrite at 1 after two appends -> v4)."""
    overwriter, appender = PinnedHandle(base_dataset, 1), PinnedHandle(base_dataset, 1)
    assert ops.append(appender, ten_rows(100, 1)).version == 2
    result = ops.overwrite(overwriter, ten_rows(500, 3))
    assert result.version == 3
    assert pylance_ids(base_dataset) == [500, 501, 502]
    assert pylance_ids(base_dataset, 2) == [*range(10), 100]
    txn = Dataset(base_dataset).snapshot().manifest_file.transaction
    assert txn is not None and txn.read_version == 1 and txn.WhichOneof("operation") == "overwrite"


def test_overwrite_after_overwrite_is_retryable(base_dataset: str) -> None:
    a, b = PinnedHandle(base_dataset, 1), PinnedHandle(base_dataset, 1)
    assert ops.overwrite(b, ten_rows(300, 1)).version == 2
    with pytest.raises(CommitConflict, match="retried") as caught:
        ops.overwrite(a, ten_rows(400, 1))
    assert caught.value.retryable is True
    assert Dataset(base_dataset).versions() == [1, 2]
    # The refused attempt removed the data file it had written.
    assert len(lance.dataset(base_dataset).get_fragments()) == 1
    assert len(list((Path(base_dataset) / "data").iterdir())) == 2  # v1's and v2's


def test_append_after_overwrite_is_incompatible(base_dataset: str) -> None:
    appender, overwriter = PinnedHandle(base_dataset, 1), PinnedHandle(base_dataset, 1)
    assert ops.overwrite(overwriter, ten_rows(500, 3)).version == 2
    with pytest.raises(CommitConflict, match="incompatible") as caught:
        ops.append(appender, ten_rows(100, 1))
    assert caught.value.retryable is False
    assert "Overwrite" in str(caught.value)
    assert Dataset(base_dataset).versions() == [1, 2]
    assert pylance_ids(base_dataset) == [500, 501, 502]


def test_add_bases_same_name_is_incompatible(base_dataset: str, tmp_path: Path) -> None:
    a, b = PinnedHandle(base_dataset, 1), PinnedHandle(base_dataset, 1)
    assert ops.add_bases(b, [ops.DatasetBasePath(str(tmp_path / "b1"), name="extra")]).version == 2
    with pytest.raises(CommitConflict, match="incompatible") as caught:
        ops.add_bases(a, [ops.DatasetBasePath(str(tmp_path / "b2"), name="extra")])
    assert caught.value.retryable is False
    assert "extra" in str(caught.value)
    snap = Dataset(base_dataset).snapshot()
    assert snap.version == 2
    assert [(b.name, b.path.rstrip("/").rsplit("/", 1)[-1]) for b in snap.bases] == [("extra", "b1")]
    lance.dataset(base_dataset).to_table()


def test_add_bases_different_names_both_land(base_dataset: str, tmp_path: Path) -> None:
    a, b = PinnedHandle(base_dataset, 1), PinnedHandle(base_dataset, 1)
    assert ops.add_bases(b, [ops.DatasetBasePath(str(tmp_path / "b1"), name="one")]).version == 2
    assert ops.add_bases(a, [ops.DatasetBasePath(str(tmp_path / "b2"), name="two")]).version == 3
    snap = Dataset(base_dataset).snapshot()
    assert sorted(b.name or "" for b in snap.bases) == ["one", "two"]
    assert len({b.id for b in snap.bases}) == 2
    assert pylance_ids(base_dataset) == list(range(10))


def test_delete_vs_delete_same_fragment_both_applied(base_dataset: str) -> None:
    """Delete row, Delete column on fragment 0: REBASE, which ``commit`` leaves to the caller as a
    retryable conflict; ``ops.delete`` recomputes on the new latest version and both deletions stand."""
    a, b = PinnedHandle(base_dataset, 1), PinnedHandle(base_dataset, 1)
    first = ops.delete(b, "id = 2")
    assert first is not None and first.version == 2
    second = ops.delete(a, "id = 5")
    assert second is not None and second.version == 3
    snap = Dataset(base_dataset).snapshot()
    (fragment,) = snap.fragments
    assert fragment.deletion is not None and fragment.deletion.num_deleted_rows == 2
    assert pylance_ids(base_dataset) == [0, 1, 3, 4, 6, 7, 8, 9]
    assert pylance_ids(base_dataset, 2) == [0, 1, 3, 4, 5, 6, 7, 8, 9]
    # The stale first attempt's deletion file was removed; v2's and v3's remain.
    assert len(list((Path(base_dataset) / DELETIONS_DIR).iterdir())) == 2


def test_stale_delete_commit_raises_retryable(base_dataset: str) -> None:
    """The same pair one level down: a Delete transaction built at v1, committed after another Delete of
    fragment 0 landed, gets CommitConflict(retryable=True) from ``commit.commit`` itself."""
    b = PinnedHandle(base_dataset, 1)
    assert ops.delete(b, "id = 2") is not None
    dataset = Dataset(base_dataset)
    stale = dataset.snapshot(1)
    txn, written = ops._deletion_transaction(dataset, stale, {0: {5}}, "id = 5")
    assert txn.read_version == 1 and written
    with pytest.raises(CommitConflict) as caught:
        commit(dataset, txn, apply_transaction)
    assert caught.value.retryable is True
    assert dataset.versions() == [1, 2]


def test_delete_vs_append_both_land(base_dataset: str) -> None:
    deleter, appender = PinnedHandle(base_dataset, 1), PinnedHandle(base_dataset, 1)
    assert ops.append(appender, ten_rows(100, 2)).version == 2
    result = ops.delete(deleter, "id = 3")
    assert result is not None and result.version == 3 and result.attempts == 1
    assert pylance_ids(base_dataset) == [0, 1, 2, 4, 5, 6, 7, 8, 9, 100, 101]
    assert [f.id for f in Dataset(base_dataset).snapshot().fragments] == [0, 1]


def test_append_vs_delete_both_land(base_dataset: str) -> None:
    appender, deleter = PinnedHandle(base_dataset, 1), PinnedHandle(base_dataset, 1)
    assert ops.delete(deleter, "id < 3") is not None
    assert ops.append(appender, ten_rows(100, 2)).version == 3
    assert pylance_ids(base_dataset) == [3, 4, 5, 6, 7, 8, 9, 100, 101]



# --- the retry loop itself ----------------------------------------------------------------------------


def test_lost_race_retry_judges_only_new_versions(base_dataset: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer at read_version 1 judges v2 once; a competitor takes v3 between its judgement and its
    put_if_absent; the retry judges v3 only (docs/lance-format.md §7.2 step 3: manifests newer than the one in
    hand), then lands as v4."""
    assert ops.append(Dataset(base_dataset), ten_rows(100, 1)).version == 2
    loaded: list[int] = []
    real_load = commit_mod.load_transaction

    def counting_load(dataset: Dataset, version: int, *args: Any) -> Any:
        loaded.append(version)
        return real_load(dataset, version, *args)

    monkeypatch.setattr(commit_mod, "load_transaction", counting_load)
    handle = PinnedHandle(base_dataset, 1)
    real_put = handle.storage.put_if_absent
    raced: list[str] = []

    def racing_put(uri: str, data: bytes, *, resend: bool = True) -> None:
        if f"/{VERSIONS_DIR}/" in uri and not raced:
            raced.append(uri)
            assert ops.append(Dataset(base_dataset), ten_rows(200, 1)).version == 3  # takes our name first
        real_put(uri, data, resend=resend)

    monkeypatch.setattr(handle.storage, "put_if_absent", racing_put)
    result = ops.append(handle, ten_rows(300, 1))
    assert (result.version, result.attempts) == (4, 2)
    assert loaded == [2, 3]
    assert pylance_ids(base_dataset) == [*range(10), 100, 200, 300]


def test_lost_race_reads_each_manifest_once(base_dataset: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The versions a commit judges are read once each and never probed: their names come from the listing,
    and the manifest that took our name, read back to tell whether it is ours, is what the retry judges and
    builds on. The transaction file is written once per attempt, the same bytes each time."""
    assert ops.append(Dataset(base_dataset), ten_rows(100, 1)).version == 2
    handle = PinnedHandle(base_dataset, 1)
    storage = handle.storage
    gets: Counter[str] = Counter()
    probes: Counter[str] = Counter()
    puts: list[tuple[str, bytes]] = []
    real_get, real_head, real_put, real_put_if_absent = storage.get, storage.head, storage.put, storage.put_if_absent

    def counting_get(uri: str) -> bytes:
        gets[uri] += 1
        return real_get(uri)

    def counting_head(uri: str) -> Any:
        probes[uri] += 1
        return real_head(uri)

    def recording_put(uri: str, data: bytes) -> None:
        puts.append((uri, data))
        real_put(uri, data)

    def racing_put(uri: str, data: bytes, *, resend: bool = True) -> None:
        if not any(f"/{VERSIONS_DIR}/" in u for u, _ in puts):
            puts.append((uri, data))
            assert ops.append(Dataset(base_dataset), ten_rows(200, 1)).version == 3  # takes our name first
        real_put_if_absent(uri, data, resend=resend)

    monkeypatch.setattr(storage, "get", counting_get)
    monkeypatch.setattr(storage, "head", counting_head)
    monkeypatch.setattr(storage, "put", recording_put)
    monkeypatch.setattr(storage, "put_if_absent", racing_put)
    result = ops.append(handle, ten_rows(300, 1))
    assert (result.version, result.attempts) == (4, 2)
    judged = {v: f"{base_dataset}/{VERSIONS_DIR}/{name}" for v, name in
              ((e.version, e.uri.rsplit("/", 1)[-1]) for e in Dataset(base_dataset).version_entries())}
    assert [gets[judged[v]] for v in (2, 3)] == [1, 1]
    assert [probes[judged[v]] for v in (2, 3)] == [0, 0]
    transaction_puts = [(u, d) for u, d in puts if "/_transactions/" in u]
    assert len(transaction_puts) == 2 and len(set(transaction_puts)) == 1
    assert pylance_ids(base_dataset) == [*range(10), 100, 200, 300]


def test_versions_landed_since_are_read_at_once(base_dataset: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three versions landed since the writer's read_version: their manifests are read side by side, once
    each, then judged in order."""
    for start in (100, 200, 300):
        ops.append(Dataset(base_dataset), ten_rows(start, 1))
    handle = PinnedHandle(base_dataset, 1)
    real_get = handle.storage.get
    readers: dict[str, list[str]] = {}

    def get(uri: str) -> bytes:
        readers.setdefault(uri.rsplit("/", 1)[-1], []).append(threading.current_thread().name)
        return real_get(uri)

    monkeypatch.setattr(handle.storage, "get", get)
    assert ops.append(handle, ten_rows(900, 1)).version == 5
    judged = [e.uri.rsplit("/", 1)[-1] for e in Dataset(base_dataset).version_entries() if 2 <= e.version <= 4]
    assert [len(readers[name]) for name in judged] == [1, 1, 1]
    assert all(readers[name][0] != threading.main_thread().name for name in judged)
    assert pylance_ids(base_dataset) == [*range(10), 100, 200, 300, 900]


def test_backoff_is_slotted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slot backoff (§7.2 step 5, Lance's ``SlotBackoff``): after the n-th lost race, a whole number of slots
    out of 2**(n+1) (4, 8, 16, ..., without a bound), each slot ``unit`` long."""
    slept: list[float] = []
    drawn: list[int] = []

    def last_slot(n: int) -> int:
        drawn.append(n)
        return n - 1

    monkeypatch.setattr(commit_mod.time, "sleep", slept.append)
    monkeypatch.setattr(commit_mod.random, "randrange", last_slot)
    for attempt in (1, 2, 3, 6, 7, 20):
        commit_mod._backoff(attempt, 0.01)
    assert drawn == [4, 8, 16, 128, 256, 2**21]
    assert slept == pytest.approx([0.03, 0.07, 0.15, 1.27, 2.55, (2**21 - 1) / 100])


def test_a_writer_that_judged_many_versions_lists_again_before_it_writes(base_dataset: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """More than ``CATCH_UP_VERSIONS`` versions landed since the writer's read_version, and another commit lands
    while it reads them: the writer lists again within the same attempt, judges the newcomer too, and takes the
    next free name at its first attempt, the transaction file written once, after the last listing."""
    for start in (100, 200, 300):
        ops.append(Dataset(base_dataset), ten_rows(start, 1))
    handle = PinnedHandle(base_dataset, 1)
    real_list, real_get, real_put = handle.storage.list, handle.storage.get, handle.storage.put
    events: list[str] = []

    def listing(prefix: str, recursive: bool = True) -> Iterator[Any]:
        if prefix.endswith(VERSIONS_DIR):
            events.append("list")
        return real_list(prefix, recursive)

    def get(uri: str) -> bytes:
        if f"/{VERSIONS_DIR}/" in uri and "put data" in events and "landed" not in events:  # the commit reads
            events.append("landed")
            assert ops.append(Dataset(base_dataset), ten_rows(400, 1)).version == 5
        return real_get(uri)

    def put(uri: str, data: bytes, how: Callable[[str, bytes], None] = real_put, name: str = "put") -> None:
        events.append(f"{name} {uri.split('/')[-2]}")
        how(uri, data)

    monkeypatch.setattr(handle.storage, "list", listing)
    monkeypatch.setattr(handle.storage, "get", get)
    monkeypatch.setattr(handle.storage, "put", put)
    real_create = handle.storage.put_if_absent
    monkeypatch.setattr(handle.storage, "put_if_absent",
                        lambda uri, data, resend=True: put(uri, data, real_create, "create"))
    result = ops.append(handle, ten_rows(900, 1))
    assert (result.version, result.attempts) == (6, 1)
    # the commit's listing, the reads (another commit lands), the listing again, then the writes; the last is the
    # version hint, written on a local store
    assert events == ["put data", "list", "landed", "list", "put _transactions", "create _versions", "put _versions"]
    assert pylance_ids(base_dataset) == [*range(10), 100, 200, 300, 400, 900]
