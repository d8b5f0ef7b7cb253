"""The I/O of one read-only run (certify, inspect, fixtures verify): every object fetched once, many at a
time, before the checks judge what was fetched.

Object stores answer each request after tens of milliseconds, so a judge that asks one question at a time
spends its life waiting. ``RunStorage`` is the ``Storage`` a run reads through:

* **Listings are remembered** and, on object stores, answer the existence and size of every object in a
  listed directory (a local stat is cheap and alone tells a FIFO from a file), so a directory listed
  anyway (``_versions/``, a root walked for stray directories) costs no HEAD per file later; a listing of
  a directory below one listed recursively is cut out of that listing.
* **Small objects are remembered** (manifests, refs, transaction and deletion files; at most
  ``SMALL_OBJECT`` bytes each, ``CACHE_BUDGET`` bytes in all, least recently used dropped first), and so
  is an object found missing, so a manifest several checks read is fetched once. **A failed object is
  remembered** too: on an object store, a read that failed after the backend's retries (a short body, a
  reset, a 5xx that stayed) fails again at once for the rest of the run, whichever check asks (issue 32:
  a short body was fetched 55 times, 560 s).
* **``fetch_all``** runs many reads at once on ``io_parallelism`` threads (the storage option
  ``lancespec_io_parallelism`` or ``--io-parallelism``, which also sizes the S3 connection pool), with
  progress. Certify uses it to load the manifests of every version, then to run each selected check's
  ``prefetch`` jobs (``checks.Check.prefetch``): the per-file facts the checks will ask for (a data
  file's size, footer and row count from one suffix read; a deletion file's offsets) land in the run's
  cache, and the checks, run afterwards one by one, find them there.

* **What a phase asks about can be noted** (``observed``, an ``Observed``): certify notes what the version
  checks read, the basis of an incremental run's proof that nothing they judged has changed
  (``conformance.since``).

A run is read-only and short: the store is assumed not to change under it. Retries, timeouts and
backoff are the backend's (``reference.store.cloud``: object_store's).
"""

from __future__ import annotations

import bisect
import builtins
import functools
import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from reference.errors import InvalidOption, LanceSpecError, ObjectNotFound, StorageError
from reference.limits import DEFAULT_LIMITS, Limits
from reference.store import ObjectInfo, ObjectStore, Storage, Tail
from reference.store.base import DEFAULT_IO_PARALLELISM, MAX_IO_PARALLELISM
from reference.store.local import LocalStore
from reference.store.uri import local_path, normalize, scheme_of

__all__ = ["CACHE_BUDGET", "SMALL_OBJECT", "Observed", "RunStorage", "io_parallelism_of"]

R = TypeVar("R")

SMALL_OBJECT = 8 * 1024 * 1024
"""Objects at most this large are remembered after a ``get`` (a 100,000-fragment manifest is ~5 MB)."""
CACHE_BUDGET = 256 * 1024 * 1024
"""Bytes of remembered objects kept at once."""
LOCAL_PARALLELISM = 1
"""Threads for a run on local disk unless the I/O parallelism is set explicitly: a read from the page cache
costs microseconds, and threads only contend for the interpreter (10,000 data files: 0.96 s on one thread,
1.24 s on two, 1.77 s on eight). On a network file system, set ``--io-parallelism``."""

#: Called as progress(done, total) while ``fetch_all`` works.
FetchProgress = Callable[[int, int], None]


def io_parallelism_of(storage_options: Mapping[str, str] | None, requested: int | None = None) -> int:
    """The run's parallelism: ``requested`` (``--io-parallelism``), else the storage option
    ``lancespec_io_parallelism``, else the default. InvalidOption when not a positive integer."""
    value: object = requested
    if value is None:
        value = {k.lower(): v for k, v in (storage_options or {}).items()}.get("lancespec_io_parallelism")
    if value is None:
        return DEFAULT_IO_PARALLELISM
    try:
        parsed = int(str(value))
    except ValueError:
        parsed = 0
    if not 1 <= parsed <= MAX_IO_PARALLELISM:
        raise InvalidOption(f"the I/O parallelism must be an integer from 1 to {MAX_IO_PARALLELISM}, not {value!r}")
    return parsed


@dataclass
class Observed:
    """What reads asked about while ``RunStorage.observed`` was set: objects by URI (read, sized or found
    missing), listings as ``(directory, recursive)``; answered from the run's cache or not. ``heads``: what
    each HEAD answered (None: no such object), so that no object is asked about twice for its identity."""

    objects: set[str] = field(default_factory=set)
    listings: set[tuple[str, bool]] = field(default_factory=set)
    heads: dict[str, ObjectInfo | None] = field(default_factory=dict)


class RunStorage(Storage):
    """A ``Storage`` for one read-only run: listings and small objects remembered, reads run in parallel."""

    #: Set to note what the reads ask about (``Observed``); None: nothing is noted.
    observed: Observed | None = None

    def __init__(self, storage_options: Mapping[str, str] | None = None, io_parallelism: int | None = None,
                 limits: Limits = DEFAULT_LIMITS, backends: dict[str, ObjectStore] | None = None) -> None:
        """``backends``: a dict of backends by scheme to use and fill, which several runs of one process with
        the same options and limits may share. A backend holds connections and no data, so sharing it
        keeps them open from run to run (Spark tasks) without carrying anything read."""
        self.io_parallelism = io_parallelism_of(storage_options, io_parallelism)
        explicit = io_parallelism is not None or any(k.lower() == "lancespec_io_parallelism"
                                                     for k in (storage_options or {}))
        self.local_parallelism = self.io_parallelism if explicit else LOCAL_PARALLELISM
        options = dict(storage_options or {})
        options.setdefault("lancespec_io_parallelism", str(self.io_parallelism))
        super().__init__(options, limits)
        if backends is not None:
            self._backends = backends
        self._own_backends = backends is None
        self._lock = threading.Lock()
        self._listings: dict[tuple[str, bool], builtins.list[ObjectInfo]] = {}
        self._listing_uris: dict[str, builtins.list[str]] = {}  # a recursive listing's URIs, when in order
        self._listed_dirs: dict[str, bool] = {}  # directory -> listed recursively
        self._listed_objects: dict[str, ObjectInfo] = {}
        self._headed: dict[str, ObjectInfo] = {}  # objects a HEAD found, by URI
        self._listing_locks: dict[str, threading.Lock] = {}
        self._objects: OrderedDict[str, bytes] = OrderedDict()
        self._absent: set[str] = set()
        self._failed: dict[str, StorageError] = {}  # remote objects whose read failed: not asked again
        self._cached_bytes = 0

    def backend(self, uri: str) -> ObjectStore:
        with self._lock:  # backends are created on first use, possibly by several fetching threads
            return super().backend(uri)

    def _create(self, scheme: str, uri: str) -> ObjectStore:
        """A backend; the run's own local store keeps what its tail reads found of each file for the run's
        recursive listing (``LocalStore.remember_stats``; never a store shared between runs)."""
        store = super()._create(scheme, uri)
        if self._own_backends and isinstance(store, LocalStore):
            store.remember_stats()
        return store

    # --- listings ------------------------------------------------------------------------------------

    def list(self, prefix: str, recursive: bool = True) -> Iterator[ObjectInfo]:
        """A listing made once: from the store, or cut out of a recursive listing of the directory or of an
        ancestor made before. A local prefix with a ``..`` segment is refused, as the store refuses it, before
        ``normalize`` would collapse it into another directory (a dataset-recorded path never climbs out)."""
        if scheme_of(prefix) == "file" and ".." in local_path(prefix).split("/"):
            raise StorageError("the path has a '..' segment; lancespec reads nothing through '..'", prefix)
        directory = normalize(prefix)
        if self.observed is not None:
            self.observed.listings.add((directory, recursive))
        found = self._listings.get((directory, recursive))
        if found is None:
            found = self._from_ancestor(directory, recursive)
        if found is None:
            found = list(super().list(directory, recursive))
            with self._lock:
                self._listings[(directory, recursive)] = found
                self._listed_dirs[directory] = self._listed_dirs.get(directory, False) or recursive
                self._listed_objects.update((info.uri, info) for info in found)
        return iter(found)

    def listed_by_uri(self, directory: str) -> Mapping[str, ObjectInfo]:
        """The objects of the recursive listing of ``directory`` (made now unless made before), by URI, for the
        URIs below ``directory``: the run's own index of what its listings found, not a copy (a root of a
        million files). A URI the listing lacks is absent from it, unless a listing of a subdirectory made before
        found it and it vanished in between: the run takes the store as not changing under it."""
        self.list(directory, recursive=True)  # made (and its objects indexed) when this returns
        return self._listed_objects

    def _from_ancestor(self, directory: str, recursive: bool) -> builtins.list[ObjectInfo] | None:
        above = directory
        while True:
            listing = self._listings.get((above, True))
            if listing is not None:
                below = directory + "/"
                start, stop = self._span(above, listing, below)
                if recursive and self._listing_uris[above]:  # in order: every URI of the span starts with below
                    return listing[start:stop]
                return [i for i in listing[start:stop] if i.uri.startswith(below)
                        and (recursive or "/" not in i.uri[len(below):])]
            if "/" not in above:
                return None
            above = above.rpartition("/")[0]

    def _span(self, directory: str, listing: builtins.list[ObjectInfo], below: str) -> tuple[int, int]:
        """The positions of the recursive ``listing`` of ``directory`` that can start with ``below``: found by
        bisection where the listing is in URI order (as every backend lists; checked once per listing), else
        all of them. (A root of a million files is cut into its sub-listings without a pass over each.)"""
        uris = self._listing_uris.get(directory)
        if uris is None:
            uris = [i.uri for i in listing]
            if any(a > b for a, b in itertools.pairwise(uris)):
                uris = []  # not in order: every position is looked at
            self._listing_uris[directory] = uris
        if not uris:
            return 0, len(listing)
        # every URI that starts with "{d}/" lies in ["{d}/", "{d}0"): "0" is the character after "/"
        return bisect.bisect_left(uris, below), bisect.bisect_left(uris, below[:-1] + "0")

    def _answered_by_listing(self, uri: str) -> bool:
        """Whether a listing already made covers ``uri``: its own directory listed, or an ancestor listed
        recursively."""
        directory, _, _ = uri.rpartition("/")
        if directory in self._listed_dirs:
            return True
        while "/" in directory:
            directory = directory.rpartition("/")[0]
            if self._listed_dirs.get(directory):
                return True
        return False

    def head(self, uri: str) -> ObjectInfo:
        """An object's size and time (``_head``), noted in the run's evidence when it keeps one."""
        self._note(uri)
        if self.observed is None:
            return self._head(uri)
        try:
            info = self._head(uri)
        except ObjectNotFound:
            self.observed.heads[uri] = None
            raise
        self.observed.heads[uri] = info
        return info

    def _head(self, uri: str) -> ObjectInfo:
        """From a listing made, from a HEAD made before in this run (each object is asked about once), else one
        HEAD. A HEAD that found a regular file, or nothing, is remembered; one that met anything else (a FIFO)
        is asked again."""
        info = self._listed_objects.get(uri) or self._headed.get(uri)
        if info is not None:
            return info
        if uri in self._absent or (scheme_of(uri) != "file" and self._answered_by_listing(uri)):
            raise ObjectNotFound("no such object", uri)
        try:  # a local stat is cheap, and it alone knows a FIFO from a file: never answered by a listing
            info = self._once(uri, lambda: super(RunStorage, self).head(uri))
        except ObjectNotFound:
            with self._lock:
                self._absent.add(uri)
            raise
        with self._lock:
            self._headed[uri] = info
        return info

    def _note(self, uri: str) -> None:
        if self.observed is not None:
            self.observed.objects.add(uri)

    def _once(self, uri: str, read: Callable[[], R]) -> R:
        """``read()`` of the object ``uri``, unless a read of it failed before in this run: then that failure
        again. Only remote failures are kept (a local one costs a system call, and may name a FIFO a moment
        later replaced); a missing object is the listing's and ``_absent``'s business, not a failure."""
        if scheme_of(uri) == "file":
            return read()
        failed = self._failed.get(uri)
        if failed is not None:
            raise failed
        try:
            return read()
        except ObjectNotFound:
            raise
        except StorageError as exc:
            with self._lock:
                self._failed[uri] = exc
            raise

    def get_range(self, uri: str, start: int, length: int) -> bytes:
        self._note(uri)
        return self._once(uri, lambda: super(RunStorage, self).get_range(uri, start, length))

    def get_tail(self, uri: str, length: int, size: int | None = None) -> Tail:
        """The tail of ``uri``; its size from a listing of this run when the caller knows none (a store
        without suffix ranges, Azure, then needs no HEAD)."""
        self._note(uri)
        if size is None:
            known = self._listed_objects.get(uri) or self._headed.get(uri)
            if known is None and not self.backend(uri).suffix_ranges:  # one listing instead of a HEAD a file
                known = self._listed_in_directory(uri)
            size = known.size if known is not None else None
        return self._once(uri, lambda: super(RunStorage, self).get_tail(uri, length, size))

    def get_tails(self, uris: Sequence[str], length: int) -> builtins.list[Tail | StorageError]:
        """The tails of ``uris`` at once (``Storage.get_tails``), each noted as ``get_tail`` notes it; for local
        files only (an object store's reads go one by one through ``get_tail``, sized from this run's listings
        and remembered when they fail)."""
        if any(scheme_of(uri) != "file" for uri in uris):
            return ObjectStore.get_tails(self, uris, length)
        if self.observed is not None:
            self.observed.objects.update(uris)
        return super().get_tails(uris, length)

    def _listed_in_directory(self, uri: str) -> ObjectInfo | None:
        """``uri`` as a listing of its directory (made once, whichever thread asks first) shows it."""
        directory = uri.rpartition("/")[0]
        with self._lock:
            lock = self._listing_locks.setdefault(directory, threading.Lock())
        with lock:
            for _ in self.list(directory, recursive=False):
                pass
        return self._listed_objects.get(uri)

    # --- objects -------------------------------------------------------------------------------------

    def get(self, uri: str) -> bytes:
        self._note(uri)
        with self._lock:
            data = self._objects.get(uri)
            if data is not None:
                self._objects.move_to_end(uri)
                return data
        if uri in self._absent or (scheme_of(uri) != "file" and uri not in self._listed_objects
                                   and self._answered_by_listing(uri)):
            raise ObjectNotFound("no such object", uri)
        try:
            data = self._once(uri, lambda: super(RunStorage, self).get(uri))
        except ObjectNotFound:
            with self._lock:
                self._absent.add(uri)
            raise
        if len(data) <= SMALL_OBJECT:
            self._remember(uri, data)
        return data

    def _remember(self, uri: str, data: bytes) -> None:
        with self._lock:
            if uri in self._objects:
                return
            self._objects[uri] = data
            self._cached_bytes += len(data)
            while self._cached_bytes > CACHE_BUDGET and self._objects:
                _, dropped = self._objects.popitem(last=False)
                self._cached_bytes -= len(dropped)

    # --- many reads at once --------------------------------------------------------------------------

    def prefetch_directory(self, directory: str) -> None:
        """List ``directory`` (not recursively) and read every object in it at once (refs, for example)."""
        uris = [info.uri for info in self.list(directory, recursive=False) if info.size <= SMALL_OBJECT]
        self.prefetch([functools.partial(self.get, u) for u in uris], remote=scheme_of(directory) != "file")

    def prefetch(self, jobs: Sequence[Callable[[], object]], *, remote: bool = True,
                 progress: FetchProgress | None = None) -> None:
        """``fetch_all`` for jobs that only warm the run's cache: a job that fails with a LanceSpecError is
        left alone, since the check that needs the object reads it again and reports what it meets."""

        def quietly(job: Callable[[], object]) -> object:
            try:
                return job()
            except LanceSpecError:
                return None

        self.fetch_all([functools.partial(quietly, job) for job in jobs], remote=remote, progress=progress)

    def fetch_all(self, jobs: Sequence[Callable[[], R]], *, remote: bool = True,
                  progress: FetchProgress | None = None) -> builtins.list[R]:
        """Run ``jobs`` (reads whose results the caller keeps, or that fill the run's cache) at most
        ``io_parallelism`` at a time (``local_parallelism`` when nothing is ``remote``); results in the
        jobs' order. An exception a job raises is raised here, after the other jobs finished."""
        if not jobs:
            return []
        workers = self.io_parallelism if remote else self.local_parallelism
        if workers == 1 or len(jobs) == 1:
            in_order: builtins.list[R] = []
            for i, job in enumerate(jobs):
                in_order.append(job())
                if progress:
                    progress(i + 1, len(jobs))
            return in_order
        results: builtins.list[R | None] = [None] * len(jobs)
        failures: builtins.list[BaseException] = []
        cursor = iter(range(len(jobs)))
        lock = threading.Lock()
        done = 0

        def work() -> None:  # each thread takes the next job until none is left: no future per job
            nonlocal done
            while True:
                with lock:
                    i = next(cursor, None)
                if i is None:
                    return
                try:
                    results[i] = jobs[i]()
                except Exception as exc:  # re-raised in the caller's thread below
                    failures.append(exc)
                if progress:
                    with lock:
                        done += 1
                        progress(done, len(jobs))

        threads = [threading.Thread(target=work, name=f"lancespec-fetch-{n}", daemon=True)
                   for n in range(min(workers, len(jobs)))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]
        return cast("builtins.list[R]", results)
