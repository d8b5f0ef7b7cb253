"""One object-store interface over the local filesystem and S3-compatible endpoints.

``open_store(storage_options)`` gives a ``Storage`` that routes each URI to the backend of its scheme,
so one handle serves a dataset whose bases live on several stores.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from ..errors import UnsupportedURI
from ..limits import DEFAULT_LIMITS, Limits
from .base import ObjectInfo, ObjectStore, Tail
from .local import LocalStore
from .uri import scheme_of

__all__ = ["ObjectInfo", "ObjectStore", "Storage", "Tail", "open_store"]


class Storage(ObjectStore):
    """Routes every call to the store for its URI's scheme; backends are created on first use."""

    limits: Limits = DEFAULT_LIMITS

    def __init__(self, storage_options: Mapping[str, str] | None = None, limits: Limits = DEFAULT_LIMITS) -> None:
        self.storage_options: dict[str, str] = dict(storage_options or {})
        self.limits = limits
        self._backends: dict[str, ObjectStore] = {}

    def backend(self, uri: str) -> ObjectStore:
        """The backend serving ``uri``."""
        scheme = scheme_of(uri)
        found = self._backends.get(scheme)
        if found is None:
            found = self._backends[scheme] = self._create(scheme, uri)
        return found

    def _create(self, scheme: str, uri: str) -> ObjectStore:
        if scheme == "file":
            return LocalStore(self.limits)
        if scheme in ("s3", "s3a"):
            from .s3 import S3Store

            return S3Store(self.storage_options, self.limits)
        raise UnsupportedURI(f"no store for scheme {scheme!r} (supported: local paths, file://, s3://)", uri)

    def get(self, uri: str) -> bytes:
        return self.backend(uri).get(uri)

    def get_range(self, uri: str, start: int, length: int) -> bytes:
        return self.backend(uri).get_range(uri, start, length)

    def get_tail(self, uri: str, length: int) -> Tail:
        return self.backend(uri).get_tail(uri, length)

    def head(self, uri: str) -> ObjectInfo:
        return self.backend(uri).head(uri)

    def list(self, prefix: str, recursive: bool = True) -> Iterator[ObjectInfo]:
        return self.backend(prefix).list(prefix, recursive)

    def list_pages(self, prefix: str, first: int) -> Iterator[Sequence[ObjectInfo]]:
        return self.backend(prefix).list_pages(prefix, first)

    def put(self, uri: str, data: bytes) -> None:
        self.backend(uri).put(uri, data)

    def put_if_absent(self, uri: str, data: bytes, *, resend: bool = True) -> None:
        self.backend(uri).put_if_absent(uri, data, resend=resend)

    def delete(self, uri: str) -> None:
        self.backend(uri).delete(uri)

    def copy(self, src: str, dst: str) -> None:
        if scheme_of(src) == scheme_of(dst):
            self.backend(src).copy(src, dst)
        else:  # across stores there is no server-side copy
            self.backend(dst).put(dst, self.backend(src).get(src))


def open_store(storage_options: Mapping[str, str] | None = None, limits: Limits = DEFAULT_LIMITS) -> Storage:
    """A store for any supported URI, configured with pylance-style storage options and the size limits
    its readers keep (``reference.limits``)."""
    return Storage(storage_options, limits)
