"""The cloud stores, ``s3://``, ``gs://``, ``az://`` (and ``abfss://``) and ``memory://``, through Rust's
``object_store`` (its Python binding ``obstore``): the I/O library pylance itself uses, configured by the same
storage options (``cloud_options``: which key goes to which store, the tuning lancespec adds, the rule of
configuration). object_store signs requests (outside the GIL), keeps the connections, retries 5xx, dropped
connections and timeouts with jittered backoff, and parses the listings; this module keeps what lancespec
earned on top of it:

* **bounded reads**: an object whose announced size is above ``--max-object-bytes`` is refused before its body
  is read (LimitExceeded naming the option); a body is counted while it arrives, and one that runs on past the
  length announced (a chunked transfer) is refused. Nothing is inflated:
  object_store asks for no compressed transfer and undoes none, so a ``Content-Encoding: gzip`` object is read
  as stored (tests/hostile/test_store_answers.py).
* **one suffix GET per data file** (``get_tail``: ``Range: bytes=-N``, the size from its Content-Range); a store
  that answers a range request with the whole object (200) is refused by object_store before its body is read.
* **listings that answer heads**: each listed object carries its size and time.
* **time bounds**: each request within ``timeout`` (whole request, body included) and ``connect_timeout``, at
  most ``lancespec_max_attempts`` attempts; a listing that yields no object for ``timeout`` (a store that
  pages forever with empty pages) or lists more than ``lancespec_max_listed_objects`` is refused; with
  ``lancespec_run_timeout`` no request starts, and no listing waits, past the run's deadline.
* **the conditional create** (``put_if_absent``: S3 ``If-None-Match: *``, the GCS generation precondition,
  Azure ``If-None-Match: *``, object_store's ``PutMode::Create``) is sent by this module, once per attempt
  through a store without retries, so that a request whose answer was lost is resent only when ``resend`` says
  so (object_store would resend it on its own): the commit protocol resolves a lost manifest PUT by reading
  (``reference.commit``).

Errors: a missing object is ObjectNotFound, a missing bucket or container BucketNotFound, 401/403 AccessDenied,
a store that stays unreachable or failing StoreUnavailable (these three ``CannotRead``); anything else
StorageError; each one line naming the URI.
"""

from __future__ import annotations

import hashlib
import queue
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NoReturn
from urllib.parse import urlparse

import obstore
from obstore.exceptions import AlreadyExistsError, InvalidPathError, PreconditionError
from obstore.store import MemoryStore, from_url

from ..errors import (
    AccessDenied,
    BucketNotFound,
    LimitExceeded,
    ObjectAlreadyExists,
    ObjectNotFound,
    StorageError,
    StoreConfigError,
    StoreUnavailable,
    UnsupportedURI,
)
from ..limits import DEFAULT_LIMITS, Limits, check_limit
from ..printable import printable
from .base import ObjectInfo, ObjectStore, Tail
from .cloud_options import CREDENTIAL_OPTIONS, CREDENTIALS_OPTIONS, ENDPOINT_OPTION, FAMILIES, CloudOptions

__all__ = ["CONFLICT_RETRIES", "CloudStore"]

CONFLICT_RETRIES = 4
"""Attempts ``put_if_absent`` makes while the store answers 409 (a concurrent conditional write in flight)."""
_MEMORY: dict[str, MemoryStore] = {}
"""The ``memory://`` stores of this process, by authority: every ``Storage`` of the process sees the same."""
_MEMORY_LOCK = threading.Lock()
_STATUS = re.compile(r"status code: (\d{3})|\bstatus: (\d{3})")
_NEVER_SENT = ("tcp connect error", "error trying to connect", "connection refused", "dns error")
_UNANSWERED = ("error sending request", "connect", "connection", "reset", "broken pipe", "incomplete", "closed",
               "unexpected eof", "dns error")
"""Words of object_store's message for a request that got no (whole) answer: the store is unavailable."""
_BUCKET_MISSING = ("NoSuchBucket", "ContainerNotFound", "The specified bucket does not exist")
_READ_CHUNK = 1 << 20
_PAST_THE_END = ("status code: 416", "InvalidRange", "StartTooLarge")
"""object_store's words for a range that starts at or past the end of the object."""


def _status(exc: BaseException) -> int | None:
    found = _STATUS.search(str(exc))
    return int(found.group(1) or found.group(2)) if found else None


def _summary(exc: BaseException) -> str:
    """One line for object_store's failure: the HTTP status with the store's error code and message where the
    store answered, else the first line of object_store's message (the rest is its debug dump)."""
    text, status = str(exc), _status(exc)
    if status is not None:
        code, message = (re.search(rf"<{tag}>([^<]{{1,300}})</{tag}>", text) for tag in ("Code", "Message"))
        return (f"HTTP {status}" + (f" {code.group(1)}" if code else "")
                + (f": {message.group(1).splitlines()[0]}" if message and message.group(1).strip() else ""))
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first[:300]


def _without_markers(batches: Iterator[Sequence[Any]]) -> Iterator[list[Any]]:
    """The listing without directory markers, in key order. object_store gives a marker (a zero-size key ending in
    ``/``, some tools' way of making a directory) back without its slash, so a zero-size name is held back, with
    the names after it that it prefixes, until the listing shows whether keys lie below it."""
    held: list[Any] = []
    for batch in batches:
        out: list[Any] = []
        pending = list(batch)
        while pending:
            meta = pending.pop(0)
            if not held:
                (held if int(meta["size"]) == 0 else out).append(meta)
                continue
            name, path = held[0]["path"], meta["path"]
            if path.startswith(name + "/"):  # keys below it: a marker, dropped
                pending[:0], held = [*held[1:], meta], []
            elif path.startswith(name) and path[len(name)] < "/":  # sorts between the name and the keys below it
                held.append(meta)
            else:
                out.append(held[0])
                pending[:0], held = [*held[1:], meta], []
        yield out
    yield held


class CloudStore(ObjectStore):
    """The objects of one store family (``cloud_options.FAMILIES``) in every bucket or container its URIs name;
    "directories" are key prefixes ending in ``/``, and keys ending in ``/`` (directory markers) are never
    listed. Listings come back in key order on every family."""

    lexically_ordered = True

    def __init__(self, family: str, storage_options: Mapping[str, str] | None = None,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        self.family = family
        self.suffix_ranges = family != "az"
        self.config = CloudOptions(storage_options)
        self.config.refuse_unusable_combinations()
        self.limits = limits
        self._stores: dict[tuple[str, bool], Any] = {}
        self._lock = threading.Lock()
        self._deadline = None if self.config.run_timeout is None else time.monotonic() + self.config.run_timeout
        self._configured = self.config.configured(family)

    # --- locations and stores -------------------------------------------------------------------------

    def _locate(self, uri: str, *, retrying: bool = True, listing: bool = False) -> tuple[Any, str]:
        """(the object_store store of ``uri``'s bucket, the key); refused for a URI naming no object (unless
        ``listing``), for a store nobody configured (the rule of configuration, ``cloud_options``) and past the
        run's deadline, before anything is sent."""
        parsed = urlparse(uri)
        if FAMILIES.get(parsed.scheme.lower()) != self.family:
            raise UnsupportedURI(f"not a URI of the {self.family} store", uri)
        if not parsed.netloc and self.family != "memory":
            raise UnsupportedURI(f"the URI names no bucket; write {parsed.scheme}://BUCKET/PATH", uri)
        if not listing and (not parsed.path.strip("/") or parsed.path.endswith("/")):
            raise StorageError("the URI names no object (empty key, or a key ending in '/')", uri)
        if not self._configured:
            raise StoreConfigError(self.config.refusal(self.family), uri)
        self._check_deadline(uri)
        root = f"{parsed.scheme}://{parsed.netloc}"
        key = parsed.path.lstrip("/")
        found = self._stores.get((root, retrying))
        if found is None:
            with self._lock:
                found = self._stores.get((root, retrying)) or self._make(root, retrying, uri)
                self._stores[(root, retrying)] = found
        return found, key

    def _make(self, root: str, retrying: bool, uri: str) -> Any:
        if self.family == "memory":
            with _MEMORY_LOCK:
                return _MEMORY.setdefault(root, MemoryStore())
        options = self.config
        try:
            return from_url(root, config=options.store_config(self.family),  # type: ignore[call-overload]
                            client_options=options.client_options(),
                            retry_config=options.retry_config(None if retrying else 1))
        except Exception as exc:  # object_store refuses a value it cannot use (a malformed URL or key)
            raise StoreConfigError(f"object_store refuses the storage options: {_summary(exc)}", uri) from exc

    def _check_deadline(self, uri: str) -> None:
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise LimitExceeded(f"the run took longer than {self.config.run_timeout:g} s (raise it with "
                                "--storage-option lancespec_run_timeout=DURATION)", uri)

    def _fail(self, exc: Exception, op: str, uri: str) -> NoReturn:
        """Raise the lancespec error for object_store's failure of ``op`` on ``uri``."""
        text, status, endpoint = str(exc), _status(exc), ENDPOINT_OPTION[self.family]
        if isinstance(exc, FileNotFoundError) or status == 404:
            if any(marker in text for marker in _BUCKET_MISSING):
                raise BucketNotFound(f"no such bucket or container: check the URI's bucket and the storage option "
                                     f"{endpoint}", uri) from exc
            raise ObjectNotFound("no such object", uri) from exc
        if isinstance(exc, PermissionError) or status in (401, 403) or "Unauthenticated" in type(exc).__name__:
            given = any(k in CREDENTIAL_OPTIONS for k in self.config.options)
            remedy = (f"check the credentials (storage options {CREDENTIALS_OPTIONS[self.family]}) and the bucket's "
                      "permissions" if given else "no credentials were given: pass the storage options "
                      f"{CREDENTIALS_OPTIONS[self.family]}")
            raise AccessDenied(f"{op} refused: {_summary(exc)}: {remedy}", uri) from exc
        if "timed out" in text.lower() or "TimedOut" in text:
            raise StoreUnavailable(f"{op} took longer than the storage option timeout ({self.config.timeout:g} s) "
                                   f"or connect_timeout ({self.config.connect_timeout:g} s) allow, through "
                                   f"{self.config.max_attempts} attempt(s): {_summary(exc)}", uri) from exc
        if status == 400:  # the store refused the request itself: a bucket or container name it takes for none
            raise StoreConfigError(f"{op} refused as malformed: {_summary(exc)}: check the URI's bucket or container "
                                   "name", uri) from exc
        if isinstance(exc, InvalidPathError):  # a listed key object_store cannot name (a control character)
            raise StorageError(f"{op} failed: object_store, as pylance, refuses a key here: {_summary(exc)}",
                               uri) from exc
        if (status or 0) >= 500 or (status is None and any(m in text.lower() for m in _UNANSWERED)):
            raise StoreUnavailable(f"{op} failed through {self.config.max_attempts} attempt(s) "
                                   f"(lancespec_max_attempts): {_summary(exc)}: check that the store is running and "
                                   f"reachable (storage option {endpoint}), or retry later", uri) from exc
        if status is None:  # an answer object_store cannot use (a header missing, a listing it cannot parse)
            raise StoreUnavailable(f"{op} failed: the store's answer is unusable: {_summary(exc)}", uri) from exc
        raise StorageError(f"{op} failed: {_summary(exc)}", uri) from exc

    # --- reading ------------------------------------------------------------------------------------

    def _read(self, uri: str, options: dict[str, Any] | None, max_bytes: int, op: str = "get") -> tuple[Any, bytes]:
        """(object_store's answer, its body): refused before the body when the answer announces more than
        ``max_bytes``, and counted while it arrives."""
        store, key = self._locate(uri)
        try:
            result = obstore.get(store, key, options=options)  # type: ignore[arg-type]
            start, stop = result.range
            announced = stop - start
            check_limit("max_object_bytes", max_bytes, announced, uri, "the object's size in bytes")
            chunks, got = [], 0
            for chunk in result.stream(min_chunk_size=max(1, min(announced, _READ_CHUNK))):
                got += len(chunk)
                if got > announced:  # a chunked body runs on past the length its headers gave
                    raise StoreUnavailable(f"{op} failed: the store sent more than the {announced} bytes it announced; "
                                       "refused", uri)
                self._check_deadline(uri)
                chunks.append(chunk)
            body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        except (LimitExceeded, StorageError):
            raise
        except Exception as exc:
            if any(marker in str(exc) for marker in _PAST_THE_END):
                return None, b""  # the object exists, with no byte where the range starts
            if "NotPartial" in str(exc) or "non-partial" in str(exc):  # 200 to a range request
                try:
                    empty = self.head(uri).size == 0
                except StorageError:
                    empty = False
                if empty:
                    return None, b""  # an empty object: some stores answer a range of it so
                raise StoreUnavailable(f"{op} failed: the store answered a range request with the whole object; "
                                   "refused, unread (a store must honour Range)", uri) from exc
            self._fail(exc, op, uri)
        return result, body

    def get(self, uri: str) -> bytes:
        return self._read(uri, None, self.limits.max_object_bytes)[1]

    def get_range(self, uri: str, start: int, length: int) -> bytes:
        """``length`` bytes from ``start``; fewer only at the end of the object, none from past its end."""
        if start < 0 or length < 0:
            raise StorageError(f"invalid range start={start} length={length}", uri)
        if length == 0:
            self.head(uri)
            return b""
        return self._read(uri, {"range": (start, start + length)}, max(self.limits.max_object_bytes, length),
                          "get_range")[1]

    def get_tail(self, uri: str, length: int, size: int | None = None) -> Tail:
        """One suffix-range GET (``Range: bytes=-length``): the tail, and the size from its Content-Range. Azure
        has no suffix range (object_store refuses one for it, "Azure does not support suffix range requests"):
        there one GET from an offset (``bytes=N-``) gives the tail, after a HEAD for the size unless the caller
        knew it (``size``: a listing of the run)."""
        if length <= 0:
            return Tail(b"", self.head(uri).size)
        if self.family == "az":
            for _ in range(2):  # a size changed since it was listed: asked once more, after a HEAD of its own
                size = self.head(uri).size if size is None else size
                if size == 0:
                    return Tail(b"", 0)
                result, body = self._read(uri, {"range": {"offset": max(0, size - length)}},
                                          max(self.limits.max_object_bytes, length), "get_tail")
                stored = size if result is None else int(result.meta["size"])
                if stored == size:
                    return Tail(body, size)
                asked, size = size, None
            # a store whose HEAD and ranged GET never agree (issue 32: asked again without end, 1,965 requests,
            # then a RecursionError) is not read further
            raise StorageError(f"the store's sizes of the object disagree: a HEAD says {asked} bytes, a ranged GET "
                               f"{stored}; it is not read", uri)
        result, body = self._read(uri, {"range": {"suffix": length}}, max(self.limits.max_object_bytes, length),
                                  "get_tail")
        return Tail(body, 0 if result is None else int(result.meta["size"]))

    def head(self, uri: str) -> ObjectInfo:
        store, key = self._locate(uri)
        try:
            meta = obstore.head(store, key)
        except Exception as exc:
            self._fail(exc, "head", uri)
        return ObjectInfo(uri, int(meta["size"]), meta["last_modified"], meta.get("e_tag"))

    def list(self, prefix: str, recursive: bool = True) -> Iterator[ObjectInfo]:
        """Objects under the directory ``prefix`` (the whole bucket for ``SCHEME://bucket``), by URI; a missing
        prefix lists as empty."""
        return iter(sorted((info for page in self._pages(prefix, recursive, 1000) for info in page),
                           key=lambda i: i.uri))

    def list_pages(self, prefix: str, first: int) -> Iterator[Sequence[ObjectInfo]]:
        """The direct children of ``prefix`` in key order, the first batch of at most ``first``."""
        return self._pages(prefix, False, first)

    def _pages(self, prefix: str, recursive: bool, first: int) -> Iterator[Sequence[ObjectInfo]]:
        """The listing in batches (object_store follows the store's pages itself). A non-recursive listing is the
        recursive one with the deeper keys dropped, so it streams in key order; each batch is awaited at most
        ``timeout`` (and never past the run's deadline), and at most ``lancespec_max_listed_objects`` are taken."""
        store, key = self._locate(prefix, listing=True)
        parsed = urlparse(prefix)
        key_prefix = key.rstrip("/")
        base = f"{parsed.scheme}://{parsed.netloc}/"
        listed = 0
        below = len(key_prefix) + 1 if key_prefix else 0
        chunk = min(first, self.config.max_listed_objects + 1)  # the cap is checked as each batch arrives
        batches = self._batches(prefix, lambda: obstore.list(store, key_prefix or None, chunk_size=chunk))
        for batch in _without_markers(batches):
            listed += len(batch)
            if listed > self.config.max_listed_objects:
                raise LimitExceeded(f"the listing holds more than {self.config.max_listed_objects} objects (raise "
                                    "it with --storage-option lancespec_max_listed_objects=N)", prefix)
            outside = next((m["path"] for m in batch if below and not m["path"].startswith(key_prefix + "/")
                            and m["path"] != key_prefix), None)
            if outside is not None:  # a store that lies about its listing: the key is no object of this prefix
                raise StorageError(f"list: the store listed {printable(outside)!r}, outside the prefix asked; "
                                   "refused", prefix)
            yield [ObjectInfo(base + m["path"], int(m["size"]), m["last_modified"], m.get("e_tag")) for m in batch
                   if m["path"] != key_prefix and (recursive or "/" not in m["path"][below:])]

    def _batches(self, prefix: str, start: Any) -> Iterator[Sequence[Any]]:
        """The batches of object_store's listing stream, pulled on a helper thread: a store that pages forever
        with empty pages never hands a batch back, so the wait for each is bounded here (``timeout``, the run's
        deadline) rather than inside object_store, which follows pages without bound."""
        answers: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=2)
        stop = threading.Event()

        def pull() -> None:
            try:
                for batch in start():
                    while not stop.is_set():
                        try:
                            answers.put(("batch", batch), timeout=0.5)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                answers.put(("end", None))
            except Exception as exc:  # handed to the reader, raised there
                answers.put(("error", exc))

        threading.Thread(target=pull, name="lancespec-list", daemon=True).start()
        try:
            while True:
                wait = self.config.timeout
                if self._deadline is not None:
                    wait = max(0.0, min(wait, self._deadline - time.monotonic()))
                try:
                    kind, value = answers.get(timeout=wait)
                except queue.Empty:
                    self._check_deadline(prefix)
                    raise StoreUnavailable(f"list: the store sent no object for {wait:g} s (storage option "
                                           "timeout): a listing that pages without end is refused", prefix) from None
                if kind == "end":
                    return
                if kind == "error":
                    self._fail(value, "list", prefix)
                yield value
        finally:
            stop.set()

    # --- writing ------------------------------------------------------------------------------------

    def put(self, uri: str, data: bytes) -> None:
        store, key = self._locate(uri)
        try:
            obstore.put(store, key, data)
        except Exception as exc:
            self._fail(exc, "put", uri)

    def put_if_absent(self, uri: str, data: bytes, *, resend: bool = True) -> None:
        """object_store's ``PutMode::Create``, sent by this loop through a store without retries: 412 (the name is
        taken) raises ObjectAlreadyExists, unless an earlier attempt of this call got no answer and the stored
        object holds exactly ``data`` (that attempt landed); 409 (a concurrent conditional write in flight) is
        retried ``CONFLICT_RETRIES`` times, then a lost race. A request that failed unanswered or with a 5xx is
        sent again up to ``lancespec_max_attempts`` in all; with ``resend=False`` only where the store cannot
        have acted on it (no connection was made, or 503: it turned the request away)."""
        store, key = self._locate(uri, retrying=False)
        attempts = conflicts = 0
        while True:
            attempts += 1
            try:
                obstore.put(store, key, data, mode="create")
                return
            except Exception as exc:
                status, text = _status(exc), str(exc).lower()
                if isinstance(exc, AlreadyExistsError | PreconditionError) and status != 409:
                    if attempts > 1 and self._holds(uri, data):
                        return
                    raise ObjectAlreadyExists("object already exists", uri) from exc
                if status == 409:
                    conflicts += 1
                    if conflicts >= CONFLICT_RETRIES:
                        raise ObjectAlreadyExists(f"conditional write conflicted {CONFLICT_RETRIES} times (409); "
                                                  "treated as a lost race", uri) from exc
                    time.sleep(0.05 * 2 ** (conflicts - 1))
                    attempts -= 1
                    continue
                transient = status is None or status >= 500
                never_sent = status == 503 or (status is None and any(m in text for m in _NEVER_SENT))
                if not transient or attempts >= self.config.max_attempts:
                    self._fail(exc, "put_if_absent", uri)
                if not resend and not never_sent:
                    raise StorageError(f"put_if_absent got no answer ({_summary(exc)}); not sent again", uri) from exc
                time.sleep(min(2.0, 0.05 * 2 ** (attempts - 1)))

    def _holds(self, uri: str, data: bytes) -> bool:
        """Whether the stored object is exactly ``data``."""
        try:
            stored = self.get(uri)
        except StorageError:  # ObjectNotFound included
            return False
        return hashlib.sha256(stored).digest() == hashlib.sha256(data).digest()

    def delete(self, uri: str) -> None:
        """Remove the object; a missing object (or bucket) is not an error."""
        store, key = self._locate(uri)
        try:
            obstore.delete(store, key)
        except FileNotFoundError:
            return
        except Exception as exc:
            if _status(exc) != 404:
                self._fail(exc, "delete", uri)

    def copy(self, src: str, dst: str) -> None:
        """A server-side copy within one bucket; across buckets, a read and a write (object_store copies only
        within its store)."""
        (store, src_key), (dst_store, dst_key) = self._locate(src), self._locate(dst)
        if store is not dst_store:
            self.put(dst, self.get(src))
            return
        try:
            obstore.copy(store, src_key, dst_key)
        except Exception as exc:
            self._fail(exc, "copy", src)
