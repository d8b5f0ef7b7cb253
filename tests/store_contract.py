"""The ObjectStore contract, as tests any backend must pass.

Subclass ``StoreContract`` in a test module (named ``Test...``) and provide two fixtures:

- ``store``: the ObjectStore under test;
- ``root``: the URI of an empty directory (no trailing slash) that this test alone uses.

``race_put_if_absent`` is also used on its own, to run conditional writes from many threads at once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from reference.errors import ObjectAlreadyExists, ObjectNotFound, StorageError
from reference.store.base import ObjectStore
from reference.store.uri import join


@dataclass
class RaceResult:
    """What each of the racing writers got: a win, an ObjectAlreadyExists, or another exception."""

    winners: list[int] = field(default_factory=list)
    losers: list[int] = field(default_factory=list)
    errors: dict[int, BaseException] = field(default_factory=dict)


def payload(writer: int) -> bytes:
    """The distinct content writer number ``writer`` tries to create."""
    return f"written by writer {writer}\n".encode() * (writer + 1)


def race_put_if_absent(stores: Sequence[ObjectStore], uri: str, timeout: float = 60.0) -> RaceResult:
    """One thread per store calls ``put_if_absent(uri, payload(i))``, all released at the same instant."""
    n = len(stores)
    barrier = threading.Barrier(n)
    outcome: list[str | BaseException | None] = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait(timeout)
            stores[i].put_if_absent(uri, payload(i))
            outcome[i] = "won"
        except ObjectAlreadyExists:
            outcome[i] = "lost"
        except BaseException as exc:
            outcome[i] = exc

    threads = [threading.Thread(target=run, args=(i,), name=f"race-{i}") for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    result = RaceResult()
    for i, got in enumerate(outcome):
        if got == "won":
            result.winners.append(i)
        elif got == "lost":
            result.losers.append(i)
        else:
            unfinished = TimeoutError("writer never finished")
            result.errors[i] = got if isinstance(got, BaseException) else unfinished
    return result


class StoreContract:
    """Every ObjectStore operation, as the interface in ``reference/store/base.py`` states it."""

    # --- get / put ------------------------------------------------------------------------------

    def test_round_trip(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "a/b/object.bin")
        data = bytes(range(256)) * 17
        store.put(uri, data)
        assert store.get(uri) == data
        assert store.exists(uri)

    def test_empty_object(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "empty")
        store.put(uri, b"")
        assert store.get(uri) == b""
        assert store.head(uri).size == 0
        assert store.get_range(uri, 0, 10) == b""

    def test_put_overwrites(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "obj")
        store.put(uri, b"first version, longer")
        store.put(uri, b"second")
        assert store.get(uri) == b"second"
        assert store.head(uri).size == len(b"second")

    # --- get_range ------------------------------------------------------------------------------

    def test_get_range(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "digits")
        store.put(uri, b"0123456789")
        assert store.get_range(uri, 0, 4) == b"0123"
        assert store.get_range(uri, 3, 3) == b"345"
        assert store.get_range(uri, 0, 10) == b"0123456789"
        assert store.get_range(uri, 9, 1) == b"9"

    def test_get_range_stops_at_end_of_object(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "digits")
        store.put(uri, b"0123456789")
        assert store.get_range(uri, 8, 5) == b"89"
        assert store.get_range(uri, 0, 1000) == b"0123456789"
        assert store.get_range(uri, 10, 5) == b""
        assert store.get_range(uri, 50, 5) == b""

    def test_get_range_empty(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "digits")
        store.put(uri, b"0123456789")
        assert store.get_range(uri, 4, 0) == b""
        assert store.get_range(uri, 10, 0) == b""

    def test_get_range_rejects_negative(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "digits")
        store.put(uri, b"0123456789")
        with pytest.raises(StorageError):
            store.get_range(uri, -1, 3)
        with pytest.raises(StorageError):
            store.get_range(uri, 0, -3)

    # --- head -----------------------------------------------------------------------------------

    def test_head(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "sized")
        before = datetime.now(UTC) - timedelta(minutes=2)
        store.put(uri, b"x" * 1234)
        info = store.head(uri)
        assert info.uri == uri
        assert info.size == 1234
        assert info.last_modified.tzinfo is not None
        assert info.last_modified.utcoffset() == timedelta(0)
        assert before <= info.last_modified <= datetime.now(UTC) + timedelta(minutes=2)

    # --- list -----------------------------------------------------------------------------------

    def _tree(self, store: ObjectStore, root: str) -> str:
        """Fill ``root/d`` with nested objects, plus siblings that share its name as a prefix."""
        d = join(root, "d")
        for rel, size in [
            ("d/x", 1),
            ("d/sub/y", 22),
            ("d/sub/deeper/z", 333),
            ("d/a", 4),
            ("dx/other", 5),
            ("d-sibling", 6),
            ("top", 7),
        ]:
            store.put(join(root, rel), b"." * size)
        return d

    def test_list_recursive(self, store: ObjectStore, root: str) -> None:
        d = self._tree(store, root)
        listed = list(store.list(d))
        expected = [join(d, "a"), join(d, "sub/deeper/z"), join(d, "sub/y"), join(d, "x")]
        assert [i.uri for i in listed] == expected
        assert [i.size for i in listed] == [4, 333, 22, 1]
        assert all(i.last_modified.utcoffset() == timedelta(0) for i in listed)

    def test_list_default_is_recursive(self, store: ObjectStore, root: str) -> None:
        d = self._tree(store, root)
        assert [i.uri for i in store.list(d)] == [i.uri for i in store.list(d, recursive=True)]

    def test_list_non_recursive(self, store: ObjectStore, root: str) -> None:
        d = self._tree(store, root)
        assert [i.uri for i in store.list(d, recursive=False)] == [join(d, "a"), join(d, "x")]
        assert [i.uri for i in store.list(join(d, "sub"), recursive=False)] == [join(d, "sub/y")]

    def test_list_root_non_recursive(self, store: ObjectStore, root: str) -> None:
        self._tree(store, root)
        expected = [join(root, "d-sibling"), join(root, "top")]
        assert [i.uri for i in store.list(root, recursive=False)] == expected

    def test_list_trailing_slash(self, store: ObjectStore, root: str) -> None:
        d = self._tree(store, root)
        assert [i.uri for i in store.list(d + "/")] == [i.uri for i in store.list(d)]
        assert [i.uri for i in store.list(d + "/", recursive=False)] == [join(d, "a"), join(d, "x")]

    def test_list_sorted(self, store: ObjectStore, root: str) -> None:
        names = ["m", "b", "z9", "a/2", "a/10", "z10", "B", "_v", "a-b", "a.b"]
        for name in names:
            store.put(join(root, "s", name), name.encode())
        listed = [i.uri for i in store.list(join(root, "s"))]
        assert listed == sorted(join(root, "s", n) for n in names)
        assert len(listed) == len(names)

    def test_list_missing_prefix_is_empty(self, store: ObjectStore, root: str) -> None:
        store.put(join(root, "present"), b"1")
        assert list(store.list(join(root, "absent"))) == []
        assert list(store.list(join(root, "absent"), recursive=False)) == []
        assert list(store.list(join(root, "pres"))) == []  # a key prefix is not a directory

    # --- put_if_absent --------------------------------------------------------------------------

    def test_put_if_absent_creates(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "new/object")
        store.put_if_absent(uri, b"content")
        assert store.get(uri) == b"content"

    def test_put_if_absent_twice(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "once")
        store.put_if_absent(uri, b"first")
        with pytest.raises(ObjectAlreadyExists) as caught:
            store.put_if_absent(uri, b"second")
        assert caught.value.where == uri
        assert store.get(uri) == b"first"

    def test_put_if_absent_after_put(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "plain")
        store.put(uri, b"plain")
        with pytest.raises(ObjectAlreadyExists):
            store.put_if_absent(uri, b"conditional")
        assert store.get(uri) == b"plain"

    def test_put_if_absent_after_delete(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "again")
        store.put_if_absent(uri, b"one")
        store.delete(uri)
        store.put_if_absent(uri, b"two")
        assert store.get(uri) == b"two"

    def test_put_if_absent_concurrent(self, store: ObjectStore, root: str) -> None:
        """16 threads race on one name, 20 times over: exactly one wins each time and its bytes stay."""
        for name in range(20):
            uri = join(root, "race", f"{name}.manifest")
            result = race_put_if_absent([store] * 16, uri)
            assert result.errors == {}, f"{uri}: unexpected errors {result.errors!r}"
            assert len(result.winners) == 1, f"{uri}: winners {result.winners}"
            assert len(result.losers) == 15
            assert store.get(uri) == payload(result.winners[0])

    # --- delete ---------------------------------------------------------------------------------

    def test_delete(self, store: ObjectStore, root: str) -> None:
        uri = join(root, "doomed")
        store.put(uri, b"x")
        store.delete(uri)
        assert not store.exists(uri)
        with pytest.raises(ObjectNotFound):
            store.get(uri)
        assert list(store.list(root)) == []

    def test_delete_missing_is_fine(self, store: ObjectStore, root: str) -> None:
        store.delete(join(root, "never-written"))
        store.delete(join(root, "no/such/dir/object"))

    # --- copy -----------------------------------------------------------------------------------

    def test_copy(self, store: ObjectStore, root: str) -> None:
        src, dst = join(root, "src/obj"), join(root, "elsewhere/deep/copy")
        store.put(src, b"copied bytes")
        store.copy(src, dst)
        assert store.get(dst) == b"copied bytes"
        assert store.get(src) == b"copied bytes"
        assert store.head(dst).size == len(b"copied bytes")

    def test_copy_overwrites(self, store: ObjectStore, root: str) -> None:
        src, dst = join(root, "src"), join(root, "dst")
        store.put(src, b"new")
        store.put(dst, b"old and longer")
        store.copy(src, dst)
        assert store.get(dst) == b"new"

    # --- missing objects ------------------------------------------------------------------------

    def test_missing_object_raises_not_found(self, store: ObjectStore, root: str) -> None:
        store.put(join(root, "present"), b"1")  # the directory exists; the object does not
        missing = join(root, "missing")
        for call in (
            lambda: store.get(missing),
            lambda: store.get_range(missing, 0, 4),
            lambda: store.get_range(missing, 0, 0),
            lambda: store.head(missing),
            lambda: store.copy(missing, join(root, "copy-target")),
        ):
            with pytest.raises(ObjectNotFound) as caught:
                call()
            assert caught.value.where == missing
            assert isinstance(caught.value, FileNotFoundError)
        assert not store.exists(missing)
        assert not store.exists(join(root, "copy-target"))

    def test_missing_directory_raises_not_found(self, store: ObjectStore, root: str) -> None:
        missing = join(root, "no/such/dir/object")
        with pytest.raises(ObjectNotFound):
            store.get(missing)
        with pytest.raises(ObjectNotFound):
            store.head(missing)
