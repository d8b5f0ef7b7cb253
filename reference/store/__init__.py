"""One object-store interface over the local filesystem and the cloud stores pylance reads (S3, GCS, Azure,
memory: ``cloud``, through object_store).

``open_store(storage_options)`` gives a ``Storage`` that routes each URI to the backend of its scheme,
so one handle serves a dataset whose bases live on several stores. A ``Storage`` remembers the first
``CannotRead`` error any of its operations met (``cannot_read``), even one a caller then handled: a reader
that judges a dataset (certify) stops on it instead of judging what it could not read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar, cast

from ..errors import CannotRead, StorageError, UnsupportedURI
from ..limits import DEFAULT_LIMITS, Limits
from .base import ObjectInfo, ObjectStore, Tail
from .local import LocalStore
from .uri import scheme_of

__all__ = ["ObjectInfo", "ObjectStore", "Storage", "Tail", "open_store"]

R = TypeVar("R")


class Storage(ObjectStore):
    """Routes every call to the store for its URI's scheme; backends are created on first use."""

    limits: Limits = DEFAULT_LIMITS

    def __init__(self, storage_options: Mapping[str, str] | None = None, limits: Limits = DEFAULT_LIMITS) -> None:
        from .option_keys import check_storage_options  # imported here: `python -m` runs that module

        check_storage_options(storage_options or {})  # an unknown key is refused (InvalidOption), never ignored
        self.storage_options: dict[str, str] = dict(storage_options or {})
        self.limits = limits
        self._backends: dict[str, ObjectStore] = {}
        self._families: dict[str, ObjectStore] = {}
        self.cannot_read: CannotRead | None = None

    def note(self, exc: CannotRead) -> None:
        """Remember ``exc`` if it is the first setup failure met (``cannot_read``)."""
        if self.cannot_read is None:
            self.cannot_read = exc

    def _on(self, uri: str, op: Callable[[ObjectStore], R]) -> R:
        """``op`` on the backend of ``uri``, noting a ``CannotRead`` it raises."""
        try:
            return op(self.backend(uri))
        except CannotRead as exc:
            self.note(exc)
            raise

    def _noted(self, items: Iterator[R]) -> Iterator[R]:
        """``items``, noting a ``CannotRead`` raised while they are produced (listings are lazy)."""
        try:
            yield from items
        except CannotRead as exc:
            self.note(exc)
            raise

    def backend(self, uri: str) -> ObjectStore:
        """The backend serving ``uri``."""
        scheme = scheme_of(uri)
        found = self._backends.get(scheme)
        if found is None:
            found = self._backends[scheme] = self._create(scheme, uri)
        return found

    def _create(self, scheme: str, uri: str) -> ObjectStore:
        if scheme == "file":  # by hand, not object_store's LocalFileSystem: that one follows symbolic links and
            return LocalStore(self.limits)  # opens what is not a regular file, which a hostile dataset would use
        from .cloud_options import FAMILIES  # imported here, as option_keys (which it imports)

        family = FAMILIES.get(scheme)
        if family is None:
            raise UnsupportedURI(f"no store for scheme {scheme!r} (supported: local paths, file://, "
                                 f"{', '.join(s + '://' for s in FAMILIES)})", uri)
        found = self._families.get(family)
        if found is None:  # one store per family: s3:// and s3a:// share one, as az:// and abfss:// do
            from .cloud import CloudStore  # imported on first use: obstore loads a native library

            found = self._families[family] = CloudStore(family, self.storage_options, self.limits)
        return found

    def get(self, uri: str) -> bytes:
        return self._on(uri, lambda b: b.get(uri))

    def get_range(self, uri: str, start: int, length: int) -> bytes:
        return self._on(uri, lambda b: b.get_range(uri, start, length))

    def get_tail(self, uri: str, length: int, size: int | None = None) -> Tail:
        return self._on(uri, lambda b: b.get_tail(uri, length, size))

    def get_tails(self, uris: Sequence[str], length: int) -> list[Tail | StorageError]:
        """``ObjectStore.get_tails``, the URIs of each scheme handed to its backend at once; a ``CannotRead``
        among the failures is noted as any operation's is."""
        by_scheme: dict[str, list[int]] = {}
        for at, uri in enumerate(uris):
            by_scheme.setdefault(scheme_of(uri), []).append(at)
        found: list[Tail | StorageError | None] = [None] * len(uris)
        for positions in by_scheme.values():
            chosen = [uris[at] for at in positions]
            tails = self._on(chosen[0], functools.partial(_tails, chosen, length))
            for at, tail in zip(positions, tails, strict=True):
                if isinstance(tail, CannotRead):
                    self.note(tail)
                found[at] = tail
        return cast("list[Tail | StorageError]", found)

    def head(self, uri: str) -> ObjectInfo:
        return self._on(uri, lambda b: b.head(uri))

    def list(self, prefix: str, recursive: bool = True) -> Iterator[ObjectInfo]:
        return self._noted(self._on(prefix, lambda b: b.list(prefix, recursive)))

    def list_pages(self, prefix: str, first: int) -> Iterator[Sequence[ObjectInfo]]:
        return self._noted(self._on(prefix, lambda b: b.list_pages(prefix, first)))

    def put(self, uri: str, data: bytes) -> None:
        self._on(uri, lambda b: b.put(uri, data))

    def put_if_absent(self, uri: str, data: bytes, *, resend: bool = True) -> None:
        self._on(uri, lambda b: b.put_if_absent(uri, data, resend=resend))

    def delete(self, uri: str) -> None:
        self._on(uri, lambda b: b.delete(uri))

    def copy(self, src: str, dst: str) -> None:
        if scheme_of(src) == scheme_of(dst):
            self.backend(src).copy(src, dst)
        else:  # across stores there is no server-side copy
            self.backend(dst).put(dst, self.backend(src).get(src))


def _tails(uris: Sequence[str], length: int, backend: ObjectStore) -> list[Tail | StorageError]:
    return backend.get_tails(uris, length)


def open_store(storage_options: Mapping[str, str] | None = None, limits: Limits = DEFAULT_LIMITS) -> Storage:
    """A store for any supported URI, configured with pylance-style storage options and the size limits
    its readers keep (``reference.limits``)."""
    return Storage(storage_options, limits)
