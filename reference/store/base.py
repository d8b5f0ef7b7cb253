"""The object-store interface every backend implements, and the facts it returns.

Locations are absolute URIs throughout (``/abs/path``, ``file:///abs/path``, ``s3://bucket/key``):
a multi-base dataset spans several roots, so a store serves any location of its scheme rather than one
prefix. ``put_if_absent`` is the single atomic primitive the Lance commit protocol rests on.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import NamedTuple

from ..errors import StorageError
from ..limits import DEFAULT_LIMITS, Limits

DEFAULT_IO_PARALLELISM = 32
"""Requests a reader keeps in flight at once: enough to hide 20-50 ms of object-store latency behind each
other, far below the request rates S3 throttles at (thousands per second per prefix)."""
MAX_IO_PARALLELISM = 1024
"""The most requests in flight (and connections kept) a run accepts: pools and threads are sized by it."""


class ObjectInfo(NamedTuple):
    """One stored object: its absolute URI, size in bytes, last-modified time (UTC) and, where the store gives
    one (S3), its ETag (an incremental certification's proof that the object is unchanged: conformance.since).
    A named tuple: a listing of a million files makes a million of them, and a tuple is made in a fraction of
    the time a frozen dataclass takes."""

    uri: str
    size: int
    last_modified: datetime
    etag: str | None = None


class Tail(NamedTuple):
    """The last bytes of an object and the object's whole size, as one suffix read returns them (a named tuple:
    a million-fragment version's file checks make a million)."""

    data: bytes
    size: int


class ObjectStore(abc.ABC):
    """Byte-level access to one kind of storage. Errors are ``reference.errors`` classes."""

    #: The sizes its readers trust (``reference.limits``); a backend or a ``Storage`` is given its run's.
    limits: Limits = DEFAULT_LIMITS
    #: Whether the storage's own listing comes back in lexical key order (S3 yes, a directory no): where it
    #: does, the newest V2 manifest is listed first and Lance writes no version hint (docs/lance-format.md §6).
    lexically_ordered = False
    #: Whether ``get_tail`` takes one request without knowing the size (an HTTP suffix range). Azure has none:
    #: a reader that knows the size from a listing passes it, else the store asks with a HEAD first.
    suffix_ranges = True

    @abc.abstractmethod
    def get(self, uri: str) -> bytes:
        """The whole object. Raises ObjectNotFound."""

    @abc.abstractmethod
    def get_range(self, uri: str, start: int, length: int) -> bytes:
        """``length`` bytes from ``start`` (fewer only at the end of the object). Raises ObjectNotFound."""

    def get_tail(self, uri: str, length: int, size: int | None = None) -> Tail:
        """The last ``length`` bytes (all of a shorter object) and the object's size. Backends answer in
        one request where they can (an HTTP suffix range); this default takes two. ``size``: the object's size
        as the caller already knows it (a listing of this run), which spares a store without suffix ranges its
        HEAD. Raises ObjectNotFound."""
        size = self.head(uri).size if size is None else size
        return Tail(self.get_range(uri, max(0, size - length), min(size, length)), size)

    def get_tails(self, uris: Sequence[str], length: int) -> list[Tail | StorageError]:
        """``get_tail(uri, length)`` of each of ``uris``, in their order, a read that failed with a
        StorageError as that error (any other exception is raised). This default reads them one by one; a
        backend may share work between them (``LocalStore`` walks each directory's path once)."""
        found: list[Tail | StorageError] = []
        for uri in uris:
            try:
                found.append(self.get_tail(uri, length))
            except StorageError as exc:
                found.append(exc)
        return found

    @abc.abstractmethod
    def head(self, uri: str) -> ObjectInfo:
        """Size and time without the content. Raises ObjectNotFound."""

    @abc.abstractmethod
    def list(self, prefix: str, recursive: bool = True) -> Iterator[ObjectInfo]:
        """Objects under the directory ``prefix``; non-recursive lists only its direct children.

        Order is by URI, ascending. A missing directory lists as empty.
        """

    def list_pages(self, prefix: str, first: int) -> Iterator[Sequence[ObjectInfo]]:
        """The direct children of ``prefix`` page by page, the first page of at most ``first`` objects; in key
        order where ``lexically_ordered``, so a reader may stop early. This default lists once."""
        yield list(self.list(prefix, recursive=False))

    @abc.abstractmethod
    def put(self, uri: str, data: bytes) -> None:
        """Create or replace the object."""

    @abc.abstractmethod
    def put_if_absent(self, uri: str, data: bytes, *, resend: bool = True) -> None:
        """Create the object atomically, or raise ObjectAlreadyExists if the name is taken.

        Exactly one of any number of concurrent callers on the same name succeeds. ``resend=False``: a
        request whose answer is lost is not sent again; the error is raised, for the caller to learn by
        reading what happened. (A resend can find the name freed in the meantime and take it although a
        later object now stands for it: a manifest's name freed by a cleanup, reference.commit.)
        """

    @abc.abstractmethod
    def delete(self, uri: str) -> None:
        """Remove the object; removing a missing object is not an error."""

    @abc.abstractmethod
    def copy(self, src: str, dst: str) -> None:
        """Copy an object within the store (server-side where the store offers it)."""

    def exists(self, uri: str) -> bool:
        """Whether the object exists."""
        from ..errors import ObjectNotFound

        try:
            self.head(uri)
        except ObjectNotFound:
            return False
        return True
