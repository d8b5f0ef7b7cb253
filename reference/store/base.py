"""The object-store interface every backend implements, and the facts it returns.

Locations are absolute URIs throughout (``/abs/path``, ``file:///abs/path``, ``s3://bucket/key``):
a multi-base dataset spans several roots, so a store serves any location of its scheme rather than one
prefix. ``put_if_absent`` is the single atomic primitive the Lance commit protocol rests on.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class ObjectInfo:
    """One stored object: its absolute URI, size in bytes and last-modified time (UTC)."""

    uri: str
    size: int
    last_modified: datetime


class ObjectStore(abc.ABC):
    """Byte-level access to one kind of storage. Errors are ``lancespec.reference.errors`` classes."""

    @abc.abstractmethod
    def get(self, uri: str) -> bytes:
        """The whole object. Raises ObjectNotFound."""

    @abc.abstractmethod
    def get_range(self, uri: str, start: int, length: int) -> bytes:
        """``length`` bytes from ``start`` (fewer only at the end of the object). Raises ObjectNotFound."""

    @abc.abstractmethod
    def head(self, uri: str) -> ObjectInfo:
        """Size and time without the content. Raises ObjectNotFound."""

    @abc.abstractmethod
    def list(self, prefix: str, recursive: bool = True) -> Iterator[ObjectInfo]:
        """Objects under the directory ``prefix``; non-recursive lists only its direct children.

        Order is by URI, ascending. A missing directory lists as empty.
        """

    @abc.abstractmethod
    def put(self, uri: str, data: bytes) -> None:
        """Create or replace the object."""

    @abc.abstractmethod
    def put_if_absent(self, uri: str, data: bytes) -> None:
        """Create the object atomically, or raise ObjectAlreadyExists if the name is taken.

        Exactly one of any number of concurrent callers on the same name succeeds.
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
