"""``get_tails``: many data files' tails at once (a million-fragment version's file checks), with exactly the
answers and refusals ``get_tail`` gives file by file (the second source of truth), on local disk and
through the run's storage."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.fetch import Observed, RunStorage
from reference.errors import AccessDenied, NotARegularFile, ObjectNotFound, StorageError
from reference.store import Storage, Tail
from reference.store import local as local_store
from reference.store.local import LocalStore

NEEDS_OPENAT2 = pytest.mark.skipif(not local_store._openat2_works,
                                   reason="openat2 is not available here: get_tails reads file by file")


def _hostile_directory(tmp_path: Path) -> tuple[Path, list[str]]:
    """A data directory holding what a hostile dataset may put beside its files, and the URIs to read."""
    data = tmp_path / "ds" / "data"
    data.mkdir(parents=True)
    (data / "small.lance").write_bytes(b"0123456789")
    (data / "large.lance").write_bytes(bytes(range(256)) * 4)
    (data / "empty.lance").write_bytes(b"")
    (data / "dir.lance").mkdir()
    os.mkfifo(data / "fifo.lance")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.lance").write_bytes(b"not yours")
    (data / "link.lance").symlink_to(outside / "secret.lance")
    (tmp_path / "ds" / "linked").symlink_to(outside, target_is_directory=True)
    names = ["small.lance", "large.lance", "empty.lance", "dir.lance", "fifo.lance", "link.lance", "gone.lance"]
    uris = [str(data / n) for n in names]
    uris += [str(tmp_path / "ds" / "linked" / "secret.lance"), str(data / ".." / "data" / "small.lance"),
             (data / "small.lance").as_uri(), str(tmp_path / "ds" / "nowhere" / "x.lance"), str(data) + "/"]
    return data, uris


def _same(found: Tail | StorageError, expected: Tail | StorageError) -> bool:
    if isinstance(expected, Tail):
        return found == expected
    return type(found) is type(expected) and str(found) == str(expected)


def _one_by_one(store: LocalStore | Storage, uris: list[str], length: int) -> list[Tail | StorageError]:
    expected: list[Tail | StorageError] = []
    for uri in uris:
        try:
            expected.append(store.get_tail(uri, length))
        except StorageError as exc:
            expected.append(exc)
    return expected


@pytest.mark.parametrize("length", [4, 64, 4096])
def test_every_answer_is_get_tails_answer_file_by_file(tmp_path: Path, length: int) -> None:
    """Each URI's answer, a tail or the error, is the one ``get_tail`` gives it alone: regular files read,
    a final link, a FIFO, a directory, a missing file, a linked directory on the way and a ``..`` refused."""
    _, uris = _hostile_directory(tmp_path)
    store = LocalStore()
    found = store.get_tails(uris, length)
    expected = _one_by_one(store, uris, length)
    assert [type(f).__name__ for f in found] == [type(e).__name__ for e in expected]
    assert all(_same(f, e) for f, e in zip(found, expected, strict=True))
    by_name = dict(zip(uris, found, strict=True))
    assert by_name[uris[0]] == Tail(b"0123456789"[-length:], 10)
    assert by_name[uris[1]] == Tail((bytes(range(256)) * 4)[-length:], 1024)
    assert by_name[uris[2]] == Tail(b"", 0)
    assert isinstance(by_name[uris[3]], ObjectNotFound)
    assert isinstance(by_name[uris[4]], NotARegularFile)
    assert isinstance(by_name[uris[5]], NotARegularFile)  # the link is not followed
    assert isinstance(by_name[uris[6]], ObjectNotFound)
    assert isinstance(by_name[uris[7]], NotARegularFile)  # a linked directory on the way
    assert isinstance(by_name[uris[8]], StorageError) and "'..'" in str(by_name[uris[8]])
    assert by_name[uris[9]] == Tail(b"0123456789"[-length:], 10)  # file:// names the same file


@NEEDS_OPENAT2
def test_a_directory_swapped_for_a_link_is_not_followed(tmp_path: Path) -> None:
    """Containment by construction: once the run found a directory free of links (remembered), a link put in
    its place is refused by the kernel when the directory is opened for its files."""
    data = tmp_path / "ds" / "data"
    data.mkdir(parents=True)
    (data / "f.lance").write_bytes(b"mine")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "f.lance").write_bytes(b"theirs")
    store = LocalStore()
    uri = str(data / "f.lance")
    assert store.get_tails([uri], 64) == [Tail(b"mine", 4)]
    (data / "f.lance").unlink()
    data.rmdir()
    data.symlink_to(elsewhere, target_is_directory=True)
    [found] = store.get_tails([uri], 64)
    assert isinstance(found, NotARegularFile)


def test_the_run_notes_every_file_and_routes_each_scheme(tmp_path: Path) -> None:
    """Through the run's storage every URI asked about is noted as ``get_tail`` notes it (an incremental
    run's evidence), and the answers are the local store's."""
    _, uris = _hostile_directory(tmp_path)
    storage = RunStorage()
    storage.observed = observed = Observed()
    found = storage.get_tails(uris, 64)
    assert observed.objects == set(uris)
    expected = _one_by_one(LocalStore(), uris, 64)
    assert all(_same(f, e) for f, e in zip(found, expected, strict=True))


class _Refusing(LocalStore):
    """A local store whose reads of one name answer what a store answers a reader without the right."""

    def get_tails(self, uris: list[str], length: int) -> list[Tail | StorageError]:  # type: ignore[override]
        found = super().get_tails(uris, length)
        return [AccessDenied("cannot be read: Permission denied (EACCES)", uri) if uri.endswith("denied.lance")
                else tail for uri, tail in zip(uris, found, strict=True)]


def test_a_refusal_among_the_answers_stops_the_run(tmp_path: Path) -> None:
    """A ``CannotRead`` among the failures is noted on the storage as any operation's is (certify then stops
    with "cannot read"), the other answers kept."""
    (tmp_path / "ok.lance").write_bytes(b"fine")
    storage = Storage()
    storage._backends["file"] = _Refusing()
    found = storage.get_tails([str(tmp_path / "ok.lance"), str(tmp_path / "denied.lance")], 64)
    assert found[0] == Tail(b"fine", 4)
    assert isinstance(found[1], AccessDenied)
    assert storage.cannot_read is found[1]


def test_a_listing_after_the_tails_lists_what_a_fresh_listing_lists(tmp_path: Path) -> None:
    """A store that remembers what its tail reads found (a run's own) lists the root exactly as a store that
    reads nothing first: the same objects, sizes and times, the link, FIFO and grown file included; a name
    replaced by a link after its tail was read is listed as the link it now is."""
    data, uris = _hostile_directory(tmp_path)
    (data / "later.lance").write_bytes(b"read, then replaced by a link")
    remembering = LocalStore()
    remembering.remember_stats()
    remembering.get_tails([*uris, str(data / "later.lance")], 64)
    (data / "later.lance").unlink()
    (data / "later.lance").symlink_to(tmp_path / "outside" / "secret.lance")
    root = str(tmp_path / "ds")
    listed = list(remembering.list(root))
    assert listed == list(LocalStore().list(root))
    assert {info.uri.rsplit("/", 1)[1] for info in listed} >= {"small.lance", "fifo.lance", "link.lance", "later.lance"}
    small = next(info for info in listed if info.uri == uris[0])
    assert small.uri is uris[0]  # the tail read's answer was taken (a walk makes its own string)
    assert list(remembering.list(root)) == listed  # what the tails found is taken once; a second walk is a walk
