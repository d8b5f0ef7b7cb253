"""The S3 store: any S3-compatible endpoint, through boto3.

Configuration is a dict of pylance-style storage options (strings; keys are matched case-insensitively):

- ``aws_access_key_id``, ``aws_secret_access_key``, ``aws_session_token``: credentials. Without them
  boto3's default chain (environment, profile, instance role) applies.
- ``aws_endpoint`` (aliases ``endpoint``, ``aws_endpoint_url``): the endpoint URL, ``http://`` or
  ``https://``; AWS itself when absent. Requests use path-style addressing (``ENDPOINT/bucket/key``).
- ``aws_region`` (alias ``region``): default ``us-east-1``.
- ``allow_http``: ``"true"`` permits an ``http://`` endpoint; without it such an endpoint is refused.
- ``lancespec_max_attempts``: total attempts per request, default 5. boto3's standard retry mode
  retries throttling, 500/502/503/504 and dropped connections with jittered exponential backoff.
- ``connect_timeout`` and ``timeout`` (pylance's names; seconds, or a duration such as ``"500ms"``,
  ``"10s"``, ``"2m"``): per attempt, defaults 5 s and 10 s, so an endpoint that never answers fails a
  request within about a minute, with one line naming the endpoint.
- ``lancespec_io_parallelism``: connections kept open to the endpoint, the most requests a reader such as
  ``certify`` sends at once (default ``DEFAULT_IO_PARALLELISM``).

**The rule of configuration** (docs/security.md; any store that replaces this one must keep it): a store is
*configured* when the user gave a storage option that names it (credentials, endpoint, region, ``allow_http``;
the run's own tuning options, ``TUNING_OPTIONS``, which lancespec itself sets, do not count). An S3 store
nobody configured makes no request at all: every call raises StorageError naming the URI and the options that
would configure it, before any credential is looked up and before any connection is made. So a dataset
naming an ``s3://`` base cannot make lancespec read the environment's keys or profile files, contact the
instance-metadata address, or send a request anywhere the user did not point it. A configured store without
keys uses boto3's default chain (environment, profile, instance role): the user chose that store.

Every request but ``copy`` takes the lean path of ``s3_http`` (signed urllib3 requests with their own
retries); ``copy`` goes through boto3, whose client is made on first use.

Locations are ``s3://bucket/key`` (``s3a://`` is accepted and kept in listed URIs). Missing objects,
keys and buckets raise ObjectNotFound naming the URI; any other S3 error raises StorageError naming the
URI and the S3 error code. ``put_if_absent`` is ``PutObject`` with ``If-None-Match: *``: HTTP 412 means
the name is taken (ObjectAlreadyExists); HTTP 409 ``ConditionalRequestConflict`` (a concurrent
conditional write in flight) is retried a few times and then also reported as a lost race.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn
from urllib.parse import urlparse

import boto3  # type: ignore[import-untyped, unused-ignore]
import botocore.session  # type: ignore[import-untyped, unused-ignore]
from botocore import UNSIGNED  # type: ignore[import-untyped, unused-ignore]
from botocore.config import Config  # type: ignore[import-untyped, unused-ignore]
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped, unused-ignore]

from ..errors import (
    AccessDenied,
    BucketNotFound,
    ObjectAlreadyExists,
    ObjectNotFound,
    StorageError,
    StoreConfigError,
    UnsupportedURI,
)
from ..limits import DEFAULT_LIMITS, Limits
from .base import DEFAULT_IO_PARALLELISM, MAX_IO_PARALLELISM, ObjectInfo, ObjectStore, Tail
from .s3_http import SignedClient, list_page

__all__ = ["CONFLICT_RETRIES", "CREDENTIAL_OPTIONS", "DEFAULT_CONNECT_TIMEOUT_S", "DEFAULT_IO_PARALLELISM",
           "DEFAULT_MAX_ATTEMPTS", "DEFAULT_READ_TIMEOUT_S", "DEFAULT_REGION", "S3Config", "S3Store", "parse_duration"]

DEFAULT_REGION = "us-east-1"
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_READ_TIMEOUT_S = 10.0
CONFLICT_RETRIES = 4
MAX_DURATION_S = 3600.0
"""The longest ``connect_timeout`` or ``timeout`` accepted (a run must end)."""
MAX_ATTEMPTS = 100
"""Attempts ``put_if_absent`` makes while the endpoint answers 409 ConditionalRequestConflict."""

_SCHEMES = ("s3", "s3a")
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NoSuchBucket", "NotFound", "404"})
_ALIASES: dict[str, tuple[str, ...]] = {
    "access_key_id": ("aws_access_key_id", "access_key_id"),
    "secret_access_key": ("aws_secret_access_key", "secret_access_key"),
    "session_token": ("aws_session_token", "session_token", "aws_token", "token"),
    "endpoint": ("aws_endpoint", "endpoint", "aws_endpoint_url", "endpoint_url"),
    "region": ("aws_region", "region"),
    "allow_http": ("allow_http", "aws_allow_http"),
    "max_attempts": ("lancespec_max_attempts",),
    "connect_timeout": ("connect_timeout", "lancespec_connect_timeout"),
    "read_timeout": ("timeout", "lancespec_read_timeout"),
    "io_parallelism": ("lancespec_io_parallelism",),
}
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}

TUNING_OPTIONS = frozenset(_ALIASES["max_attempts"] + _ALIASES["connect_timeout"] + _ALIASES["read_timeout"]
                           + _ALIASES["io_parallelism"])
"""The storage options (lowercase) that tune requests and configure no store (``RunStorage`` sets
``lancespec_io_parallelism`` on every run)."""
CREDENTIAL_OPTIONS = frozenset(_ALIASES["access_key_id"] + _ALIASES["secret_access_key"] + _ALIASES["session_token"])
"""The storage options (lowercase) that carry credentials: never printed."""


def parse_duration(text: str) -> float:
    """Seconds from ``"2.5"``, ``"500ms"``, ``"10s"``, ``"2m"`` or ``"1h"``; ValueError otherwise."""
    value = text.strip().lower()
    for unit in sorted(_DURATION_UNITS, key=len, reverse=True):
        if value.endswith(unit) and value[: -len(unit)].strip():
            return float(value[: -len(unit)]) * _DURATION_UNITS[unit]
    return float(value)


def _true(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("true", "1", "yes", "on")


class S3Config:
    """Storage options resolved to what boto3 needs; raises StoreConfigError on an unusable combination or value
    (an ``http://`` endpoint without ``allow_http``, ``allow_http`` without an endpoint, half a key pair, a control
    character in any value, a duration that is not finite or above ``MAX_DURATION_S``, an endpoint whose port is
    not one, a parallelism above ``MAX_IO_PARALLELISM``), naming the option."""

    def __init__(self, storage_options: Mapping[str, str] | None = None) -> None:
        options = {str(k).lower(): str(v) for k, v in (storage_options or {}).items()}
        for key, value in options.items():
            if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):  # CR/LF would split a header or a URL
                shown = "(hidden)" if key in CREDENTIAL_OPTIONS else repr(value[:60])
                raise StoreConfigError(f"storage option {key} holds a control character: {shown}")

        def pick(name: str) -> str | None:
            for key in _ALIASES[name]:
                value = options.get(key)
                if value is not None and value != "":
                    return value
            return None

        self.access_key_id = pick("access_key_id")
        self.secret_access_key = pick("secret_access_key")
        self.session_token = pick("session_token")
        self.region = pick("region") or DEFAULT_REGION
        self.allow_http = _true(pick("allow_http"))
        self.endpoint = pick("endpoint")
        if self.endpoint is not None:
            self.endpoint = self.endpoint.rstrip("/")
            scheme = urlparse(self.endpoint).scheme.lower()
            if scheme not in ("http", "https"):
                raise StoreConfigError("the S3 endpoint (storage option aws_endpoint) must be an http:// or "
                                       "https:// URL", self.endpoint)
            try:
                urlparse(self.endpoint).port  # noqa: B018 - raises ValueError for a port that is no port
            except ValueError as exc:
                raise StoreConfigError(f"the S3 endpoint's port is not a port number (0-65535): {exc}",
                                       self.endpoint) from exc
            if scheme == "http" and not self.allow_http:
                raise StoreConfigError(
                    "refusing plain-HTTP S3 endpoint; set storage option allow_http=true to permit it",
                    self.endpoint,
                )
        elif self.allow_http:
            raise StoreConfigError("storage option allow_http is set but aws_endpoint is not: requests would go to "
                                   "AWS over HTTPS; add --storage-option aws_endpoint=http://HOST:PORT (or drop "
                                   "allow_http)")
        self.max_attempts = _positive(pick("max_attempts"), DEFAULT_MAX_ATTEMPTS, int, "lancespec_max_attempts",
                                      MAX_ATTEMPTS)
        self.io_parallelism = _positive(pick("io_parallelism"), DEFAULT_IO_PARALLELISM, int,
                                        "lancespec_io_parallelism", MAX_IO_PARALLELISM)
        self.connect_timeout = _positive(pick("connect_timeout"), DEFAULT_CONNECT_TIMEOUT_S, parse_duration,
                                         "connect_timeout", MAX_DURATION_S)
        self.read_timeout = _positive(pick("read_timeout"), DEFAULT_READ_TIMEOUT_S, parse_duration, "timeout",
                                      MAX_DURATION_S)
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise StoreConfigError("give both storage options aws_access_key_id and aws_secret_access_key, "
                                   "or neither")
        self.configured = any(key not in TUNING_OPTIONS for key in options)

    def _session(self) -> Any:
        return boto3.session.Session(
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            aws_session_token=self.session_token,
            region_name=self.region,
            botocore_session=_botocore_session(),
        )

    def credentials(self) -> Any:
        """botocore credentials for signing: the given keys, else boto3's default chain (only ever asked for a
        configured store: ``S3Store`` makes no reader for another)."""
        return self._session().get_credentials()

    def reader(self) -> SignedClient:
        """The lean request path (``s3_http``) for this configuration."""
        return SignedClient(self.endpoint or f"https://s3.{self.region}.amazonaws.com", self.region, self.credentials(),
                            max_attempts=self.max_attempts, connect_timeout=self.connect_timeout,
                            read_timeout=self.read_timeout, connections=self.io_parallelism)

    def client(self) -> Any:
        """A new boto3 S3 client (thread-safe; one per store)."""
        session = self._session()
        config = Config(
            region_name=self.region,
            s3={"addressing_style": "path"},
            retries={"mode": "standard", "total_max_attempts": self.max_attempts},
            # Checksums only where the API requires them: S3-compatible servers differ in what they accept.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
            max_pool_connections=self.io_parallelism,
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            signature_version=None if session.get_credentials() is not None else UNSIGNED,
        )
        return session.client("s3", endpoint_url=self.endpoint, config=config)


_DATA_LOADER: Any = None


def _botocore_session() -> Any:
    """A new botocore session sharing one data loader per process: loading the S3 service model costs
    about 0.3 s of CPU, once instead of once per store."""
    global _DATA_LOADER
    session = botocore.session.get_session()
    if _DATA_LOADER is None:
        _DATA_LOADER = session.get_component("data_loader")
    else:
        session.register_component("data_loader", _DATA_LOADER)
    return session


def _positive(value: str | None, default: float, parse: Callable[[str], Any], name: str, most: float) -> Any:
    """``value`` parsed, or ``default`` when absent; StoreConfigError naming the option when not positive or
    above ``most`` (``inf`` and ``nan`` included)."""
    if value is None:
        return default
    try:
        parsed = parse(value)
    except (ValueError, OverflowError):
        parsed = 0
    what = "integer" if parse is int else "duration"
    if not parsed > 0:
        raise StoreConfigError(f"storage option {name} must be a positive {what}, not {value!r}")
    if not parsed <= most:
        raise StoreConfigError(f"storage option {name} must be at most {most:g}{'' if parse is int else ' s'}, "
                               f"not {value!r}")
    return parsed


class S3Store(ObjectStore):
    """Objects in S3 buckets; "directories" are key prefixes ending in ``/``.

    One store serves every bucket of its endpoint; the URI names the bucket. Keys ending in ``/``
    (directory markers some tools create) are never listed as objects.
    """

    lexically_ordered = True

    def __init__(self, storage_options: Mapping[str, str] | None = None, limits: Limits = DEFAULT_LIMITS) -> None:
        self.config = S3Config(storage_options)
        self.limits = limits
        self._boto3: Any = None
        self._signed: SignedClient | None = None

    def _http(self, uri: str) -> SignedClient:
        """The lean request path, made on first use; StoreConfigError naming ``uri`` for a store nobody configured
        (the rule of configuration, module docstring): nothing is looked up and nothing is sent."""
        if self._signed is None:
            if not self.config.configured:  # the reader's setup, not the dataset: cannot read (errors.CannotRead)
                raise StoreConfigError("no S3 store is configured, so nothing is read from it (give a storage option: "
                                       "aws_endpoint, aws_region or credentials)", uri)
            self._signed = self.config.reader()
        return self._signed

    @property
    def _reader(self) -> SignedClient:
        return self._http("s3://")

    @property
    def _client(self) -> Any:
        """The boto3 client, made on first use (about 0.3 s of CPU): only ``copy`` needs it. Refused, as
        ``_http``, for a store nobody configured."""
        if self._boto3 is None:
            self._http("s3://")
            self._boto3 = self.config.client()
        return self._boto3

    # --- reading ------------------------------------------------------------------------------------

    def get(self, uri: str) -> bytes:
        bucket, key = _object(uri)
        response = self._http(uri).get(bucket, key, uri, max_bytes=self.limits.max_object_bytes)
        if response.status == 416:  # an empty object some stores answer so
            return b""
        return response.body

    def get_range(self, uri: str, start: int, length: int) -> bytes:
        """``length`` bytes from ``start`` via an HTTP Range request; fewer only at the end of the object.

        A range starting at or past the end returns ``b""``, as does ``length == 0`` (after checking the
        object exists, so a missing object still raises ObjectNotFound).
        """
        bucket, key = _object(uri)
        if start < 0 or length < 0:
            raise StorageError(f"invalid range start={start} length={length}", uri)
        if length == 0:
            self.head(uri)
            return b""
        # at most start + length bytes are read, whatever the store sends: one that ignores the Range header
        # sends the object from its first byte (issue 32: a read is bounded by what was asked, never by the store)
        response = self._http(uri).get(bucket, key, uri, f"bytes={start}-{start + length - 1}",
                                       max_bytes=max(self.limits.max_object_bytes, length), cut=start + length)
        if response.status == 416:
            return b""  # the object exists but has no byte at ``start``
        if response.status == 200 and "content-range" not in response.headers:  # the Range header was ignored
            return response.body[start : start + length]
        return response.body[:length]

    def get_tail(self, uri: str, length: int) -> Tail:
        """One suffix-range GET (``Range: bytes=-length``): the tail, and the size from Content-Range."""
        bucket, key = _object(uri)
        if length <= 0:
            return Tail(b"", self.head(uri).size)
        # a store that ignores the Range header sends the whole object: read only up to --max-object-bytes
        response = self._http(uri).get(bucket, key, uri, f"bytes=-{length}",
                                       max_bytes=max(self.limits.max_object_bytes, length))
        if response.status == 416:  # an empty object has no suffix
            return Tail(b"", self.head(uri).size)
        total = response.headers.get("content-range", "").rpartition("/")[2]
        # without a Content-Range the endpoint ignored the Range header and sent the whole object
        return Tail(response.body[-length:], int(total) if total.isdigit() else len(response.body))

    def head(self, uri: str) -> ObjectInfo:
        bucket, key = _object(uri)
        headers = self._http(uri).request("HEAD", bucket, key, uri, op="head", expect=(200,)).headers
        try:
            size, modified = int(headers["content-length"]), parsedate_to_datetime(headers["last-modified"])
        except (KeyError, ValueError, TypeError) as exc:
            raise StorageError(f"head failed: an answer without a size or a time ({exc})", uri) from exc
        return ObjectInfo(uri, size, _utc(modified), headers.get("etag"))

    def list(self, prefix: str, recursive: bool = True) -> Iterator[ObjectInfo]:
        """Objects whose keys start with ``prefix`` + ``/`` (the whole bucket for ``s3://bucket``).

        Non-recursive listing uses ``Delimiter="/"`` and yields only direct child objects. Pages are
        followed to the end before returning; the result is sorted by URI. A missing prefix lists as empty;
        a missing bucket raises ObjectNotFound (a misconfiguration, not an empty directory).
        """
        return iter(sorted((info for page in self._pages(prefix, recursive) for info in page), key=lambda i: i.uri))

    def list_pages(self, prefix: str, first: int) -> Iterator[Sequence[ObjectInfo]]:
        """ListObjectsV2 pages of the direct children, in S3's key order, the first of at most ``first`` keys."""
        return self._pages(prefix, False, first)

    def _pages(self, prefix: str, recursive: bool, first: int | None = None) -> Iterator[Sequence[ObjectInfo]]:
        scheme, bucket, key = _parse(prefix)
        key_prefix = key.rstrip("/") + "/" if key.strip("/") else ""
        base = f"{scheme}://{bucket}/"
        query = {"list-type": "2", "prefix": key_prefix, "encoding-type": "url"}
        if not recursive:
            query["delimiter"] = "/"
        token: str | None = ""
        while token is not None:  # a first page of ``first`` keys, then pages of the store's size (1,000 on S3)
            asked = {**query, "continuation-token": token} if token else {**query, "max-keys": str(first)} if first \
                else query
            answer = self._http(prefix).get(bucket, "", prefix, max_bytes=self.limits.max_object_bytes, query=asked)
            page = list_page(answer.body, prefix)
            yield [ObjectInfo(base + name, size, modified, etag) for name, size, modified, etag in page.objects
                   if not name.endswith("/")]
            token = page.next_token

    # --- writing ------------------------------------------------------------------------------------

    def put(self, uri: str, data: bytes) -> None:
        bucket, key = _object(uri)
        self._http(uri).request("PUT", bucket, key, uri, body=data, op="put", expect=(200,))

    def put_if_absent(self, uri: str, data: bytes, *, resend: bool = True) -> None:
        """``PutObject`` with ``If-None-Match: *``: 412 raises ObjectAlreadyExists.

        409 ``ConditionalRequestConflict`` is retried up to ``CONFLICT_RETRIES`` times with a short backoff,
        then reported as ObjectAlreadyExists (a lost race). If the request had to be resent (an earlier
        attempt's answer was lost) and then got 412, the earlier attempt may have been the one that
        landed: when the stored object's ETag is the MD5 of ``data`` the write is taken as ours.
        ``resend=False``: an attempt whose answer is lost is not resent (``ObjectStore.put_if_absent``).
        """
        bucket, key = _object(uri)
        for attempt in range(CONFLICT_RETRIES):
            if attempt:  # the previous attempt got 409
                time.sleep(0.05 * 2 ** (attempt - 1))
            answer = self._http(uri).request("PUT", bucket, key, uri, {"If-None-Match": "*"}, data,
                                             op="put_if_absent", expect=(200, 409, 412), resend=resend)
            if answer.status == 200:
                return
            if answer.status == 412:
                if answer.attempts > 1 and self._holds(bucket, key, data):
                    return
                raise ObjectAlreadyExists("object already exists", uri)
        raise ObjectAlreadyExists(
            f"conditional write conflicted {CONFLICT_RETRIES} times (409 {answer.code()}); treated as a lost race", uri)

    def _holds(self, bucket: str, key: str, data: bytes) -> bool:
        """Whether the stored object's ETag is the MD5 of ``data`` (a single-part upload of exactly it)."""
        try:
            uri = f"s3://{bucket}/{key}"
            answer = self._http(uri).request("HEAD", bucket, key, uri, op="head", expect=(200,))
        except StorageError:  # ObjectNotFound included
            return False
        return answer.headers.get("etag", "").strip('"') == hashlib.md5(data, usedforsecurity=False).hexdigest()

    def delete(self, uri: str) -> None:
        """Remove the object; a missing object (or bucket) is not an error."""
        bucket, key = _object(uri)
        with contextlib.suppress(ObjectNotFound):
            self._http(uri).request("DELETE", bucket, key, uri, op="delete", expect=(200, 204))

    def copy(self, src: str, dst: str) -> None:
        """Server-side ``CopyObject`` (within or across buckets; one request, so at most 5 GiB).

        A missing source raises ObjectNotFound naming ``src``; a missing destination bucket names ``dst``.
        """
        src_bucket, src_key = _object(src)
        dst_bucket, dst_key = _object(dst)
        try:
            self._client.copy_object(
                Bucket=dst_bucket, Key=dst_key, CopySource={"Bucket": src_bucket, "Key": src_key}
            )
        except ClientError as exc:
            missing = exc.response.get("Error", {}).get("BucketName")
            blame = dst if _code(exc) == "NoSuchBucket" and missing == dst_bucket != src_bucket else src
            _raise(exc, "copy", blame)
        except BotoCoreError as exc:
            _raise(exc, "copy", src)


# --- helpers ----------------------------------------------------------------------------------------


def _parse(uri: str) -> tuple[str, str, str]:
    """``(scheme, bucket, key)``; raises UnsupportedURI for another scheme or a missing bucket."""
    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    if scheme not in _SCHEMES:
        raise UnsupportedURI("not an s3:// URI", uri)
    if not parsed.netloc:
        raise UnsupportedURI("the S3 URI names no bucket; write s3://BUCKET/PATH", uri)
    return scheme, parsed.netloc, parsed.path.lstrip("/")


def _object(uri: str) -> tuple[str, str]:
    """``(bucket, key)`` of an object URI; the key must be non-empty and not end in ``/``."""
    _, bucket, key = _parse(uri)
    if not key or key.endswith("/"):
        raise StorageError("the S3 URI names no object (empty key, or a key ending in '/')", uri)
    return bucket, key


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _raise(exc: Exception, op: str, uri: str) -> NoReturn:
    """Raise the lancespec error for a boto3 failure of ``op`` on ``uri``."""
    if isinstance(exc, ClientError):
        code, status = _code(exc), exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code == "NoSuchBucket":
            raise BucketNotFound("no such bucket: check the URI's bucket and the storage option aws_endpoint",
                                 uri) from exc
        if code in _NOT_FOUND_CODES or status == 404:
            raise ObjectNotFound("no such object", uri) from exc
        if status in (401, 403):
            raise AccessDenied(f"{op} refused: S3 error {code or '?'} (HTTP {status}): check the credentials "
                               "(aws_access_key_id, aws_secret_access_key) and the bucket's permissions", uri) from exc
        message = exc.response.get("Error", {}).get("Message") or str(exc)
        raise StorageError(f"{op} failed: S3 error {code or '?'} (HTTP {status}): {message}", uri) from exc
    raise StorageError(f"{op} failed: {type(exc).__name__}: {exc}", uri) from exc

