"""LocalStore: the store contract on plain paths and on file:// URIs, plus its own promises."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from store_contract import StoreContract, race_put_if_absent

from reference.errors import NotARegularFile, ObjectAlreadyExists, ObjectNotFound
from reference.store import open_store
from reference.store.base import ObjectStore
from reference.store.local import LocalStore
from reference.store.uri import join


def _temp_files(top: Path) -> list[str]:
    return [os.path.join(d, f) for d, _, files in os.walk(top) for f in files if f.startswith(".tmp-")]


class TestLocalStoreContract(StoreContract):
    """Locations as plain absolute paths."""

    @pytest.fixture
    def store(self) -> ObjectStore:
        return LocalStore()

    @pytest.fixture
    def root(self, tmp_path: Path) -> str:
        return str(tmp_path / "root")


class TestLocalStoreFileURIContract(StoreContract):
    """The same contract with ``file://`` URIs."""

    @pytest.fixture
    def store(self) -> ObjectStore:
        return LocalStore()

    @pytest.fixture
    def root(self, tmp_path: Path) -> str:
        return (tmp_path / "root").as_uri()


class TestRoutedLocalStoreContract(StoreContract):
    """The same contract through the scheme router that callers use."""

    @pytest.fixture
    def store(self) -> ObjectStore:
        return open_store()

    @pytest.fixture
    def root(self, tmp_path: Path) -> str:
        return str(tmp_path / "root")


def test_no_temporary_files_left(tmp_path: Path) -> None:
    store = LocalStore()
    root = str(tmp_path)
    for i in range(5):
        store.put(join(root, "d", f"obj{i}"), b"x" * i)
    store.put(join(root, "d", "obj0"), b"overwritten")
    store.put_if_absent(join(root, "d", "cond"), b"first")
    for _ in range(3):
        with pytest.raises(ObjectAlreadyExists):
            store.put_if_absent(join(root, "d", "cond"), b"again")
    race = race_put_if_absent([store] * 8, join(root, "race", "1.manifest"))
    assert len(race.winners) == 1 and not race.errors
    store.copy(join(root, "d", "obj1"), join(root, "e", "copy"))
    assert _temp_files(tmp_path) == []
    assert sorted(os.listdir(tmp_path / "d")) == ["cond", "obj0", "obj1", "obj2", "obj3", "obj4"]


def test_file_uri_and_path_name_the_same_object(tmp_path: Path) -> None:
    store = LocalStore()
    path = str(tmp_path / "dir" / "obj")
    uri = (tmp_path / "dir" / "obj").as_uri()
    assert uri.startswith("file:///")
    store.put(uri, b"via uri")
    assert store.get(path) == b"via uri"
    store.put(path, b"via path")
    assert store.get(uri) == b"via path"
    assert store.head(uri).size == store.head(path).size == len(b"via path")
    with pytest.raises(ObjectAlreadyExists):
        store.put_if_absent(uri, b"taken")
    assert [i.uri for i in store.list((tmp_path / "dir").as_uri())] == [uri]
    assert [i.uri for i in store.list(str(tmp_path / "dir"))] == [path]
    store.delete(uri)
    assert not store.exists(path)


def test_file_uri_with_escaped_characters(tmp_path: Path) -> None:
    store = LocalStore()
    target = tmp_path / "with space" / "obj"
    store.put(target.as_uri(), b"escaped")  # as_uri() writes the space as %20
    assert "%20" in target.as_uri()
    assert target.read_bytes() == b"escaped"


@pytest.mark.parametrize("read", ["get", "get_range", "get_tail"])
def test_a_directory_is_no_object_for_any_read(tmp_path: Path, read: str) -> None:
    """A name that holds a directory reads as absent (ObjectNotFound), never as the IsADirectoryError of
    opening it (the fuzzer's seed 109596: a damaged manifest naming a directory as a data file)."""
    (tmp_path / "dir.lance").mkdir()
    store = LocalStore()
    uri = str(tmp_path / "dir.lance")
    call = {"get": lambda: store.get(uri), "get_range": lambda: store.get_range(uri, 0, 4),
            "get_tail": lambda: store.get_tail(uri, 4)}[read]
    with pytest.raises(ObjectNotFound, match="directory"):
        call()


def test_a_link_swapped_in_after_the_check_is_not_followed(tmp_path: Path) -> None:
    """Containment by construction (issue 32): the kernel refuses a symbolic link at any component of the
    path (openat2 RESOLVE_NO_SYMLINKS), so a directory replaced by a link after the run found it free of
    links (the checks remember such directories) is still not followed."""
    from reference.store import local

    if not local._openat2_works:
        pytest.skip("openat2 is not available on this kernel: containment is by checking only")
    ds = tmp_path / "ds" / "data"
    ds.mkdir(parents=True)
    (ds / "f.lance").write_bytes(b"mine")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "f.lance").write_bytes(b"theirs")
    store = LocalStore()
    assert store.get(str(ds / "f.lance")) == b"mine"
    (ds / "f.lance").unlink()
    ds.rmdir()
    ds.symlink_to(elsewhere, target_is_directory=True)
    for read in (store.get, store.head, lambda uri: list(store.list(uri.rsplit("/", 1)[0]))):
        with pytest.raises(NotARegularFile):
            read(str(ds / "f.lance"))
