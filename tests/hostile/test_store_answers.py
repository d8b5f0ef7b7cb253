"""Store answers that choose how much is read (issue 32; docs/security.md): a body stored with
``Content-Encoding: gzip`` is read as stored, never inflated, and counted against ``--max-object-bytes``; a
store that ignores ``Range`` and streams the whole object is refused unread."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from test_budgets import measured
from test_hostile_datasets import run_cli

from reference.errors import LimitExceeded, StorageError
from reference.limits import Limits
from reference.store.cloud import CloudStore
from simulator.s3 import EmbeddedS3Server

INFLATED = 256 * 1024 * 1024  # zeros; gzip makes them about 250 KB


def _gzip_zeros() -> bytes:
    out = gzip.compress(bytes(INFLATED // 64), compresslevel=9)  # 4 MiB of zeros, then repeated members
    return out * 64  # a gzip stream of several members inflates to all of them


def test_a_gzip_encoded_object_is_read_as_stored(s3_server: EmbeddedS3Server, bucket: str, tmp_path: Path) -> None:
    """moto keeps ``Content-Encoding`` as the object's metadata and sends it back; the store returns the
    bytes as stored (so the inflated 256 MiB never exist) and inspect refuses the manifest they are not."""
    store = CloudStore("s3", s3_server.storage_options())
    stored = _gzip_zeros()
    assert len(stored) < 2_000_000
    uri = f"s3://{bucket}/ds/_versions/18446744073709551614.manifest"
    s3_server.client().put_object(Bucket=bucket, Key="ds/_versions/18446744073709551614.manifest", Body=stored,
                             ContentEncoding="gzip")
    assert s3_server.client().head_object(Bucket=bucket, Key="ds/_versions/18446744073709551614.manifest")[
        "ContentEncoding"] == "gzip"
    assert store.get(uri) == stored
    assert store.get_range(uri, 0, 100) == stored[:100]
    small = CloudStore("s3", s3_server.storage_options(), Limits(max_object_bytes=len(stored) - 1))
    with pytest.raises(LimitExceeded, match="--max-object-bytes"):
        small.get(uri)
    options = [a for k, v in s3_server.storage_options().items() for a in ("--storage-option", f"{k}={v}")]
    started = time.monotonic()
    done = run_cli("inspect", f"s3://{bucket}/ds", *options, timeout=20)
    assert done.returncode == 2 and "manifest footer magic" in done.stderr, done.stderr
    assert time.monotonic() - started < 20


class _RangeIgnoring(BaseHTTPRequestHandler):
    """Answers every GET with the whole 1 GiB object (200, no Content-Range), and counts what it sent."""

    sent = 0
    SIZE = 1 << 30

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(self.SIZE))
        self.send_header("Last-Modified", "Mon, 02 Nov 2026 10:00:00 GMT")
        self.end_headers()
        chunk = bytes(64 * 1024)
        try:
            for _ in range(self.SIZE // len(chunk)):
                self.wfile.write(chunk)
                type(self).sent += len(chunk)
        except OSError:
            pass  # the reader hung up: what it asked for came first

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def range_ignoring() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RangeIgnoring)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_store_ignoring_range_is_cut_at_the_length_asked(range_ignoring: str) -> None:
    store = CloudStore("s3", {"aws_endpoint": range_ignoring, "allow_http": "true", "aws_access_key_id": "k",
                     "aws_secret_access_key": "s"}, Limits(max_object_bytes=2 << 30))
    uri = "s3://b/big.lance"
    for read in (lambda: store.get_range(uri, 1000, 100), lambda: store.get_tail(uri, 64)):
        with pytest.raises(StorageError, match="whole object"):
            read()
    time.sleep(0.5)
    assert _RangeIgnoring.sent < 64 * 1024 * 1024  # the socket's buffers, not the gigabyte


# --- compressed deletion files ------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_a_compressed_deletion_file_declaring_huge_buffers_is_refused_before_inflating(
        tmp_path: Path, codec: str) -> None:
    """An .arrow deletion file whose record batch is compressed and declares 2^29 offsets (a 2 GiB buffer
    once inflated) in a few kilobytes: a DEL-002 finding, at small memory, never CONFORMANT."""
    import struct

    import pyarrow as pa
    import pyarrow.ipc as ipc
    from conformance_kit import build_reference_dataset
    from test_hostile_datasets import deletion_file, findings

    uri = build_reference_dataset(tmp_path, deletions=("arrow",))
    schema = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, schema, options=ipc.IpcWriteOptions(compression=codec)) as writer:
        writer.write_batch(pa.record_batch([pa.array(range(1000), pa.uint32())], schema=schema))
    honest = sink.getvalue().to_pybytes()
    hostile = honest.replace(struct.pack("<q", 1000), struct.pack("<q", 2**29)).replace(
        struct.pack("<q", 4000), struct.pack("<q", 2**31))
    assert hostile.count(struct.pack("<q", 2**29)) >= 2 and struct.pack("<q", 2**31) in hostile
    deletion_file(uri).write_bytes(hostile)
    done, peak_kb = measured("certify", uri, "--format", "json")
    assert done.returncode == 1, done.stderr
    assert any(f["requirement"] == "DEL-002" and "not inflated" in str(f["message"]) for f in findings(done)), \
        findings(done)
    assert peak_kb < 1_000_000


class _ShortBody(BaseHTTPRequestHandler):
    """Announces 1,000 bytes, sends 10 and hangs up; counts the GETs per path."""

    hits: ClassVar[dict[str, int]] = {}

    def do_GET(self) -> None:
        type(self).hits[self.path] = type(self).hits.get(self.path, 0) + 1
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.send_header("Last-Modified", "Mon, 02 Nov 2026 10:00:00 GMT")
        self.end_headers()
        self.wfile.write(b"0123456789")
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_failed_object_is_read_once_per_run() -> None:
    """A short body fails the read (object_store sends the GET again only when no body has begun); the run
    remembers the failure, so the checks that ask for the same object again meet it at once (55 fetches and
    560 s before)."""
    from conformance.fetch import RunStorage

    server = ThreadingHTTPServer(("127.0.0.1", 0), _ShortBody)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        storage = RunStorage({"aws_endpoint": f"http://127.0.0.1:{server.server_address[1]}", "allow_http": "true",
                              "aws_access_key_id": "k", "aws_secret_access_key": "s", "lancespec_max_attempts": "2"})
        with pytest.raises(StorageError):
            storage.get("s3://b/short")
        first = dict(_ShortBody.hits)
        assert 1 <= first["/b/short"] <= 2  # the first read's attempts (lancespec_max_attempts)
        for read in (lambda: storage.get_tail("s3://b/short", 64), lambda: storage.get_range("s3://b/short", 0, 8)):
            with pytest.raises(StorageError):
                read()
        assert _ShortBody.hits == first  # nothing after
    finally:
        server.shutdown()
        server.server_close()


# --- time bounds: a store that trickles, pages without end or sends past its length (issue 32 item 4) ------


_PAGE = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
         "<Name>b</Name><Prefix>ds/_versions/</Prefix><KeyCount>{count}</KeyCount><MaxKeys>1000</MaxKeys>"
         "<IsTruncated>{more}</IsTruncated>{token}{contents}</ListBucketResult>")
_ENTRY = ("<Contents><Key>ds/_versions/{name}</Key><LastModified>2026-11-02T10:00:00.000Z</LastModified>"
          "<ETag>&quot;0&quot;</ETag><Size>100</Size><StorageClass>STANDARD</StorageClass></Contents>")


class _Hostile(BaseHTTPRequestHandler):
    """An S3 endpoint misbehaving as ``mode`` says: ``trickle`` (one manifest listed, its body sent a byte a
    second), ``slow-list`` (a listing sent a byte a second), ``empty-pages``
    (listing pages of no object, each pointing to a next one, forever), ``full-pages`` (a page of one manifest
    name, and a next page, forever), ``chunked`` (one manifest listed, its GET answered with a chunked body that
    never ends)."""

    mode = "trickle"
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        listing = "list-type=2" in self.path
        try:
            if (listing and self.mode == "slow-list") or (not listing and self.mode == "trickle"):
                self._head(200, 10_000)
                for _ in range(60):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(1)
            elif listing:
                page = self.path.count("continuation-token") and int(self.path.rsplit("token=t", 1)[1].split("&")[0])
                names = [] if self.mode == "empty-pages" else [f"{18446744073709551615 - page - 1:020d}.manifest"]
                if self.mode in ("chunked", "trickle"):
                    body = _PAGE.format(count=1, more="false", token="", contents=_ENTRY.format(name=names[0]))
                else:
                    body = _PAGE.format(count=len(names), more="true",
                                        token=f"<NextContinuationToken>t{page + 1}</NextContinuationToken>",
                                        contents="".join(_ENTRY.format(name=n) for n in names))
                data = body.encode()
                self._head(200, len(data))
                self.wfile.write(data)
            else:  # chunked: a body without a length that never ends
                self.send_response(206)
                self.send_header("Content-Range", "bytes 0-99/100")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Last-Modified", "Mon, 02 Nov 2026 10:00:00 GMT")
                self.end_headers()
                chunk = b"%x\r\n%s\r\n" % (64 * 1024, bytes(64 * 1024))
                for _ in range(1 << 16):
                    self.wfile.write(chunk)
        except OSError:
            pass  # the reader hung up

    def _head(self, status: int, length: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(length))
        self.send_header("Content-Type", "application/xml")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize("mode, options, named", [
    ("trickle", ("timeout=2s",), ("took longer than the storage option timeout (2 s)",)),
    # a listing that trickles meets lancespec's own "no object for 2 s" or, on a loaded machine, object_store's
    # request timeout first: either way the line names the option and its value
    ("slow-list", ("timeout=2s",), ("2 s", "storage option timeout")),
    ("empty-pages", ("timeout=3s",), ("3 s", "storage option timeout")),
    ("full-pages", ("lancespec_max_listed_objects=200",), ("more than 200 objects", "lancespec_max_listed_objects")),
    ("chunked", ("timeout=5s",), ("Content-Length",)),  # refused at its headers: no limit is reached
])
def test_a_store_that_never_finishes_is_refused_in_time(mode: str, options: tuple[str, ...],
                                                        named: tuple[str, ...]) -> None:
    """Each ends well within 20 s with exit 2 (cannot read), one line naming the limit it met and its option."""
    handler = type("Hostile", (_Hostile,), {"mode": mode})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        given = {"aws_endpoint": f"http://127.0.0.1:{server.server_address[1]}", "allow_http": "true",
                 "aws_access_key_id": "k", "aws_secret_access_key": "s", "lancespec_max_attempts": "2",
                 **dict(o.split("=", 1) for o in options)}
        flags = [a for k, v in given.items() for a in ("--storage-option", f"{k}={v}")]
        started = time.monotonic()
        done = run_cli("inspect", "s3://b/ds", *flags, timeout=20)
        assert done.returncode == 2, done.stdout + done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("lancespec: cannot read: s3://b/ds") and all(n in line for n in named), line
        assert time.monotonic() - started < 20
    finally:
        server.shutdown()
        server.server_close()


class _ListsElsewhere(BaseHTTPRequestHandler):
    """Lists ``ds/_versions/`` as one manifest under the prefix and one key outside it; counts the GETs of
    objects."""

    gets: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        if "list-type=2" not in self.path:
            type(self).gets.append(self.path)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = _PAGE.format(count=2, more="false", token="", contents=_ENTRY.format(name="1.manifest")
                            + _ENTRY.format(name="1.manifest").replace("ds/_versions/", "elsewhere/")).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_listing_holding_a_key_outside_its_prefix_is_refused() -> None:
    """A store that answers a listing of ``ds/_versions/`` with ``elsewhere/1.manifest`` lies about its
    objects: the listing is refused, naming the key, and nothing outside is read (found by the store-answer
    fuzzer: a branch's listing made certify read such a key as the branch's manifest)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ListsElsewhere)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        store = CloudStore("s3", {"aws_endpoint": f"http://127.0.0.1:{server.server_address[1]}", "allow_http": "true",
                                  "aws_access_key_id": "k", "aws_secret_access_key": "s"})
        for recursive in (True, False):
            with pytest.raises(StorageError, match=r"'elsewhere/1\.manifest', outside the prefix asked"):
                list(store.list("s3://b/ds/_versions/", recursive=recursive))
        assert _ListsElsewhere.gets == []
    finally:
        server.shutdown()
        server.server_close()


class _SizesDisagree(BaseHTTPRequestHandler):
    """An Azure Blob endpoint whose HEAD says 100 bytes and whose ranged GET answers for an object of 101,
    whatever is asked; counts the requests."""

    requests = 0

    def _answer(self, body: bytes) -> None:
        type(self).requests += 1
        ranged = self.headers.get("Range") or self.headers.get("x-ms-range")
        self.send_response(206 if ranged and self.command == "GET" else 200)
        self.send_header("Last-Modified", "Mon, 02 Nov 2026 10:00:00 GMT")
        self.send_header("ETag", '"0x1"')
        self.send_header("x-ms-blob-type", "BlockBlob")
        if self.command == "HEAD":
            self.send_header("Content-Length", "100")
        else:
            start = int(ranged.split("=")[1].partition("-")[0]) if ranged else 0
            self.send_header("Content-Range", f"bytes {start}-100/101")
            self.send_header("Content-Length", str(101 - start))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body[int((ranged or "=0-").split("=")[1].partition("-")[0]):])

    def do_HEAD(self) -> None:
        self._answer(b"")

    def do_GET(self) -> None:
        self._answer(bytes(101))

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_store_whose_sizes_never_agree_is_not_asked_without_end() -> None:
    """Azure has no suffix range: a tail is a HEAD for the size, then a GET from an offset. A size that changed
    is asked once more; a store whose HEAD and GET never agree was asked again without end (1,965 requests,
    then a RecursionError: exit 3). Now: a StorageError after two rounds."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SizesDisagree)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        store = CloudStore("az", {"account_name": "devstoreaccount1", "account_key": "a2V5",
                                  "azure_endpoint": f"http://127.0.0.1:{server.server_address[1]}/devstoreaccount1",
                                  "allow_http": "true", "lancespec_max_attempts": "1"})
        with pytest.raises(StorageError, match="sizes of the object disagree"):
            store.get_tail("az://c/ds/data/x.lance", 16)
        assert _SizesDisagree.requests <= 4  # two HEADs and two GETs
    finally:
        server.shutdown()
        server.server_close()
