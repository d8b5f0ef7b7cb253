"""Where a scenario run lives: the four buckets of the scenario format, on the local disk, on S3 or on Azure.

``LocalRun(workdir)`` maps ``bucket:path`` to ``{workdir}/{bucket}/{path}``; ``S3Run(options, prefix,
create_bucket)`` to ``s3://{prefix}-{bucket}/{path}``; ``AzureRun`` the same with containers, to
``az://{prefix}-{bucket}/{path}``. Each reads and writes through the reference store
(never through the writer under test) and can fingerprint every object of the run, which is how a refused
step is proven to have left storage unchanged.

``name_roots(roots, suffix)`` gives the dataset roots of a scenario a name ending in ``suffix`` on storage
(``main:ds`` is ``{main}/ds.lance`` for a writer whose capability file says ``root_suffix = ".lance"``: LanceDB
keeps a table at ``{database}/{name}.lance``); everything under a root moves with it, and ``location_of``
answers the scenario's own location, so expectations and summaries read the same for every writer.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from reference.store import Storage, open_store
from reference.store.uri import join, normalize

from .format import BUCKETS, Location

Fingerprint = dict[str, tuple[int, str]]


class StoreRun:
    """One scenario run's buckets: the site its operations' locations resolve on."""

    kind = "store"

    def __init__(self, storage_options: Mapping[str, str] | None = None) -> None:
        self.options: dict[str, str] = dict(storage_options or {})
        self.storage: Storage = open_store(self.options)
        self._roots: dict[str, list[str]] = {}  # bucket -> root paths named with the suffix, longest first
        self._suffix = ""

    def name_roots(self, roots: Iterable[str], suffix: str) -> None:
        """Store the dataset roots ``roots`` (``bucket:path`` locations) as ``{path}{suffix}``."""
        self._suffix = suffix
        self._roots = {}
        for text in sorted(roots, key=len, reverse=True):  # within a bucket: longest path first
            bucket, _, path = text.partition(":")
            self._roots.setdefault(bucket, []).append(path)

    def _stored(self, bucket: str, path: str) -> str:
        """The path on storage of the location ``bucket:path``."""
        for root in self._roots.get(bucket, ()):
            if path == root or path.startswith(root + "/"):
                return root + self._suffix + path[len(root):]
        return path

    def _scenario_path(self, bucket: str, path: str) -> str:
        """The inverse of ``_stored``."""
        for root in self._roots.get(bucket, ()):
            named = root + self._suffix
            if path == named or path.startswith(named + "/"):
                return root + path[len(named):]
        return path

    def bucket_uri(self, bucket: str) -> str:
        raise NotImplementedError

    def uri(self, location: Location) -> str:
        return join(self.bucket_uri(location.bucket), self._stored(location.bucket, location.path))

    def locate(self, text: str) -> str | None:
        """The URI of ``bucket:path`` (a ``Site`` of the operation language), or None for other text."""
        bucket, sep, path = text.partition(":")
        return join(self.bucket_uri(bucket), self._stored(bucket, path)) if sep and bucket in BUCKETS and path else None

    def location_of(self, uri: str) -> str | None:
        """``bucket:path`` for a URI inside one of the run's buckets, else None."""
        uri = normalize(uri).rstrip("/")
        for bucket in BUCKETS:
            root = self.bucket_uri(bucket).rstrip("/")
            if uri == root:
                return f"{bucket}:"
            if uri.startswith(root + "/"):
                return f"{bucket}:{self._scenario_path(bucket, uri[len(root) + 1:])}"
        return None

    def objects(self, location: Location | None = None) -> list[str]:
        prefixes = [self.uri(location)] if location else [self.bucket_uri(b) for b in BUCKETS]
        return sorted(info.uri for prefix in prefixes for info in self.storage.list(prefix))

    def fingerprint(self) -> Fingerprint:
        """Every object of every bucket: uri -> (size, SHA-256 of the content)."""
        out: Fingerprint = {}
        for bucket in BUCKETS:
            for info in self.storage.list(self.bucket_uri(bucket)):
                if "/.tmp" in info.uri or info.uri.rsplit("/", 1)[-1].startswith(".tmp"):
                    continue
                data = self.storage.get(info.uri)
                out[info.uri] = (len(data), hashlib.sha256(data).hexdigest())
        return out

    def copy(self, source: Location, target: Location) -> None:
        src, dst = self.uri(source), self.uri(target)
        for info in list(self.storage.list(src)):
            self.storage.copy(info.uri, dst + info.uri[len(src):])

    def remove(self, location: Location) -> None:
        for info in list(self.storage.list(self.uri(location))):
            self.storage.delete(info.uri)

    def put(self, location: Location, data: bytes) -> None:
        self.storage.put(self.uri(location), data)


class LocalRun(StoreRun):
    kind = "local"

    def __init__(self, workdir: str | Path) -> None:
        super().__init__()
        self.workdir = Path(workdir)
        for bucket in BUCKETS:
            (self.workdir / bucket).mkdir(parents=True, exist_ok=True)

    def bucket_uri(self, bucket: str) -> str:
        return str(self.workdir / bucket)


class S3Run(StoreRun):
    kind = "s3"

    def __init__(self, storage_options: Mapping[str, str], create_bucket: Callable[[str], object],
                 prefix: str | None = None) -> None:
        super().__init__(storage_options)
        self.prefix = prefix or f"ls{uuid.uuid4().hex[:16]}"
        for bucket in BUCKETS:
            create_bucket(f"{self.prefix}-{bucket}")

    def bucket_uri(self, bucket: str) -> str:
        return f"{self.kind}://{self.prefix}-{bucket}"


class AzureRun(S3Run):
    """The run's buckets as Azure containers (``create_bucket`` makes a container: Azurite's
    ``create_container``)."""

    kind = "az"
