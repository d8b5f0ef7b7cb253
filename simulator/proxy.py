"""The fault-injecting proxy: an HTTP forwarder on 127.0.0.1 between the writers and the S3 endpoint.

Requests are read as S3's path-style ``/bucket/key``; for Azurite (``account``) as ``/account/container/key``,
the container standing for the bucket. Every client (writer process) gets a port of its own, so the proxy
knows who sent each request without any help from the client (pylance cannot add headers). Per request the
proxy classifies it (``faults.REQUEST_CLASSES``), counts it (per client and class), asks the seeded schedule
(``faults.decide``) for a fault, applies the storage personality, forwards it on a fresh upstream connection,
and answers.

What it records, the wire's view of the run:

* ``faults``: every injected fault (client, class, n, kind, method, key, time).
* ``requests``: how many requests each client made per class; ``objects_read``: the distinct objects
  each client read (GET or HEAD), so a benchmark can state requests per object.
* ``writes``: every manifest PUT (with its status, the MD5 of its body, the body when accepted) and every
  deletion (``DELETE``, the keys of S3's multi-object ``POST ?delete`` and of Azure's ``POST ?comp=batch``),
  with the client and the time the request *arrived*: a client sends requests only while an operation is in
  flight, so the arrival time names the operation that sent it.

Personalities (``PERSONALITIES``) change what the endpoint appears to do:

* ``honest``: nothing changes.
* ``no-conditional``: ``If-None-Match`` is stripped from every request: the endpoint ignores conditional
  writes, the last writer wins.
* ``lagging-list``: listings hide every key written through the proxy less than ``list_lag_s`` ago.
* ``unlocked``: a server-side personality (moto without the write lock); the proxy changes nothing.

With a ``scheduler`` (``schedule.Scheduler``, a deterministic run) the proxy also schedules: every request of a
writer is held until the scheduler releases it, one at a time in an order drawn from the seed, and a delay
fault (``latency``, ``pause``) holds its request for ``DELAY_STEP_S``-long steps of the schedule instead of
sleeping.

With an ``answer_hook`` (settable at any time) the proxy shows the hook every answer of the endpoint
(``UpstreamAnswer``) before the client sees it; a ``RawAnswer`` the hook returns is written to the client in
its place, byte for byte (the store-answer fuzzer, ``lancespec.fuzz_answers``, damages answers so).
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import http.client
import math
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .faults import PROFILES, Fault, FaultProfile, burst_of, decide
from .schedule import Scheduler

__all__ = [
    "PERSONALITIES",
    "AnswerHook",
    "FaultProxy",
    "InjectedFault",
    "RawAnswer",
    "UpstreamAnswer",
    "WireWrite",
    "classify",
]

PERSONALITIES = ("honest", "no-conditional", "lagging-list", "unlocked")
LOOPBACK = "127.0.0.1"
UPSTREAM_TIMEOUT_S = 60.0
DELAY_STEP_S = 0.01
"""In a scheduled run, a delay fault of ``d`` seconds holds its request for ``ceil(d / DELAY_STEP_S)`` releases of
other requests (a ``latency`` 2-5, a ``pause`` 50-150)."""
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
                         "upgrade", "proxy-authorization", "proxy-authenticate"})
_LIST_PARAMS = frozenset({"list-type", "prefix", "delimiter", "marker", "continuation-token", "start-after",
                          "max-keys"})
_ON_KEY = {"PUT": "put", "DELETE": "delete", "HEAD": "head", "GET": "get"}  # the class of a request on one object
_CONTENTS = re.compile(rb"<Contents>.*?</Contents>", re.S)
_KEY = re.compile(rb"<Key>(.*?)</Key>", re.S)
_BATCH_DELETE = re.compile(rb"^DELETE (\S+) HTTP/1\.1\r?$", re.M)  # a sub-request of an Azure blob batch
_KEY_COUNT = re.compile(rb"<KeyCount>\d+</KeyCount>")


@dataclass(frozen=True)
class InjectedFault:
    """One fault the proxy injected."""

    client: int
    request_class: str
    n: int
    kind: str
    method: str
    key: str
    t: float


@dataclass
class _Burst:
    """The aftermath of a lost acknowledgement (``faults.burst_of``): ``left`` more of the client's requests
    on ``target`` (bucket, key) of this ``kind`` fail."""

    target: tuple[str, str]
    kind: str
    left: int


@dataclass(frozen=True)
class WireWrite:
    """A manifest PUT or a deletion as the proxy saw it. ``t`` is the arrival time (``time.monotonic``)."""

    client: int
    t: float
    kind: str  # "manifest-put" or "delete"
    bucket: str
    key: str
    status: int  # the endpoint's status; 0 when the request was never forwarded
    md5: str | None = None
    body: bytes | None = field(default=None, repr=False)
    fault: str | None = None
    conditional: bool = False
    forwarded: float = 0.0
    """When the proxy sent it on to the endpoint (after any delay); 0 when it never did. The endpoint's order
    of writes is the order of these times; ``t`` (arrival) names the operation that sent it."""

    @property
    def at(self) -> float:
        """The best known time the endpoint applied it: ``forwarded``, else the arrival time."""
        return self.forwarded or self.t

    @property
    def applied(self) -> bool:
        """Whether the endpoint accepted it (2xx)."""
        return 200 <= self.status < 300

    def to_json(self) -> dict[str, Any]:
        return {"client": self.client, "t": round(self.t, 6), "forwarded": round(self.forwarded, 6),
                "kind": self.kind, "bucket": self.bucket, "key": self.key, "status": self.status, "md5": self.md5,
                "fault": self.fault, "conditional": self.conditional}


@dataclass(frozen=True)
class UpstreamAnswer:
    """What the endpoint answered one request, shown to an answer hook before the client sees it."""

    method: str
    bucket: str
    key: str
    query: str
    request_headers: dict[str, str]  # names in lower case
    status: int
    reason: str
    headers: list[tuple[str, str]]  # without hop-by-hop headers
    body: bytes = field(repr=False)


@dataclass(frozen=True)
class RawAnswer:
    """Bytes written to the client in place of the endpoint's answer, status line and headers included:
    ``pieces`` one after another with ``pause_s`` between them; then the connection is closed."""

    pieces: tuple[bytes, ...]
    pause_s: float = 0.0


AnswerHook = Callable[[UpstreamAnswer], RawAnswer | None]


def classify(method: str, key: str, query: str) -> str:
    """The request class of an S3 request (path-style ``/bucket/key``)."""
    method = method.upper()
    params = set(parse_qs(query, keep_blank_values=True))
    if method == "POST":  # a multi-object delete: S3's POST ?delete, Azure's blob batch POST ?comp=batch
        return "delete" if "delete" in params or parse_qs(query).get("comp") == ["batch"] else "other"
    if not key:
        return "list" if method == "GET" and (params & _LIST_PARAMS or not params) else "other"
    if method == "PUT" and "/_versions/" in f"/{key}" and key.endswith(".manifest"):
        return "manifest-put"
    return _ON_KEY.get(method, "other")


def _error_body(code: str, message: str, key: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{html.escape(message)}'
            f"</Message><Key>{html.escape(key)}</Key><RequestId>lancespec-sim</RequestId></Error>").encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no delayed-ACK stalls
    server: _PortServer

    def do_GET(self) -> None:
        self.server.proxy._handle(self, self.server.client)

    do_PUT = do_POST = do_DELETE = do_HEAD = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def finish(self) -> None:
        with contextlib.suppress(OSError):  # the connection was reset on purpose
            super().finish()


class _PortServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # socketserver's default of 5 drops SYNs of parallel connects: 1 s retransmits

    def __init__(self, proxy: FaultProxy, client: int) -> None:
        super().__init__((LOOPBACK, 0), _Handler)
        self.proxy = proxy
        self.client = client

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # resets and clients that gave up: expected here, not worth a traceback


class FaultProxy:
    """The proxy: ``clients`` ports on 127.0.0.1 forwarding to ``upstream``.

    ``endpoint(client)`` is the URL a client uses. Client ids are 0..clients-1; faults are injected only
    for ids in ``faulty_clients`` (default: all), so a control client (setup, pre-flight) can share the
    personality without the faults. Start with ``start()`` (or ``with``), stop with ``stop()``.
    """

    def __init__(self, upstream: str, clients: int, *, seed: int = 0, faults: FaultProfile | None = None,
                 personality: str = "honest", list_lag_s: float = 2.0,
                 faulty_clients: Sequence[int] | None = None, account: str | None = None,
                 scheduler: Scheduler | None = None, answer_hook: AnswerHook | None = None) -> None:
        if personality not in PERSONALITIES:
            raise ValueError(f"unknown personality {personality!r}; choose from {', '.join(PERSONALITIES)}")
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the upstream endpoint must be an http:// or https:// URL, not {upstream!r}")
        self._upstream_https = parts.scheme == "https"
        self._upstream_host = parts.hostname
        self._upstream_port = parts.port or (443 if self._upstream_https else 80)
        self._upstream_prefix = parts.path.rstrip("/")
        self._account = f"/{account}" if account else ""
        self.clients = clients
        self.seed = seed
        self.profile = faults or PROFILES["none"]
        self.personality = personality
        self.list_lag_s = list_lag_s
        self.faulty_clients = frozenset(range(clients) if faulty_clients is None else faulty_clients)
        self.faults: list[InjectedFault] = []
        self.writes: list[WireWrite] = []
        self.requests: Counter[tuple[int, str]] = Counter()
        self.objects_read: dict[int, set[str]] = {}
        self._written_at: dict[tuple[str, str], float] = {}
        self._bursts: dict[int, _Burst] = {}
        self._lock = threading.Lock()
        self._servers: list[_PortServer] = []
        self.scheduler = scheduler
        self.answer_hook = answer_hook

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> FaultProxy:
        if self._servers:
            return self
        for client in range(self.clients):
            server = _PortServer(self, client)
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, name=f"sim-proxy-{client}",
                             daemon=True).start()
            self._servers.append(server)
        return self

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()  # nothing held may outlive the run
        servers, self._servers = self._servers, []
        for server in servers:
            server.shutdown()  # returns once serve_forever has
            server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def endpoint(self, client: int) -> str:
        """``http://127.0.0.1:PORT`` of ``client``'s port."""
        return f"http://{LOOPBACK}:{self._servers[client].server_address[1]}"

    def storage_options(self, client: int, base: dict[str, str]) -> dict[str, str]:
        """``base`` storage options with the endpoint replaced by ``client``'s port (plain HTTP): S3's
        ``aws_endpoint``, or Azure's ``azure_endpoint`` when ``base`` has one (its path, Azurite's account, kept:
        SharedKey signs the path, so the proxy forwards it unchanged)."""
        azure = next((v for k, v in base.items() if k.lower() == "azure_endpoint"), None)
        if azure is not None:
            kept = {k: v for k, v in base.items() if k.lower() != "azure_endpoint"}
            return {**kept, "azure_endpoint": self.endpoint(client) + urlsplit(azure).path, "allow_http": "true"}
        kept = {k: v for k, v in base.items() if k.lower() not in ("aws_endpoint", "endpoint", "aws_endpoint_url")}
        return {**kept, "aws_endpoint": self.endpoint(client), "allow_http": "true"}

    # --- summaries ------------------------------------------------------------------------------------

    def fault_counts(self) -> Counter[str]:
        with self._lock:
            return Counter(f.kind for f in self.faults)

    def faults_of(self, client: int) -> list[tuple[str, int, str]]:
        """``client``'s faults as ``(class, n, kind)``, sorted: what a replay must reproduce."""
        with self._lock:
            return sorted((f.request_class, f.n, f.kind) for f in self.faults if f.client == client)

    # --- one request ----------------------------------------------------------------------------------

    def _handle(self, handler: _Handler, client: int) -> None:
        arrived = time.monotonic()
        method = handler.command.upper()
        target = urlsplit(handler.path)
        path = target.path.removeprefix(self._account) if self._account else target.path
        bucket, _, raw_key = path.lstrip("/").partition("/")
        key = unquote(raw_key)
        body = self._read_body(handler)
        request_class = classify(method, key, target.query)
        with self._lock:
            n = self.requests[(client, request_class)]
            self.requests[(client, request_class)] += 1
            if request_class in ("get", "head"):
                self.objects_read.setdefault(client, set()).add(f"{bucket}/{key}")
        fault = self._burst_fault(client, method, (bucket, key))
        if fault is None:
            fault = (decide(self.profile, self.seed, client, request_class, n) if client in self.faulty_clients
                     else Fault(None))
            if fault.kind == "lost-ack" and request_class == "manifest-put":
                burst = burst_of(self.profile, self.seed, client, n)
                if burst is not None:
                    with self._lock:
                        self._bursts[client] = _Burst((bucket, key), *burst)
        if fault.kind is not None:
            with self._lock:
                self.faults.append(InjectedFault(client, request_class, n, fault.kind, method, f"{bucket}/{key}",
                                                 arrived))
        dropped = _HOP_BY_HOP | {"content-length"}
        if self.personality == "no-conditional":
            dropped |= {"if-none-match"}
        headers = [(k, v) for k, v in handler.headers.items() if k.lower() not in dropped]
        headers.append(("Content-Length", str(len(body))))
        hold = 0
        if self.scheduler is not None and fault.kind in ("latency", "pause"):
            hold = math.ceil(fault.delay_s / DELAY_STEP_S)  # a delay is steps of the schedule, not seconds
        ticket = self.scheduler.enter(client, hold) if self.scheduler is not None else None
        if ticket is not None and ticket.cancelled:  # held when the run ended: it must not land after it
            self._reset(handler)
            return
        try:
            self._serve(handler, client, method, bucket, key, body, request_class, fault, headers, arrived,
                        ticket is not None, target.query)
        finally:
            if self.scheduler is not None:
                self.scheduler.leave(ticket)

    def _serve(self, handler: _Handler, client: int, method: str, bucket: str, key: str, body: bytes,
               request_class: str, fault: Fault, headers: list[tuple[str, str]], arrived: float,
               scheduled: bool, query: str) -> None:
        """Apply ``fault`` to the request, forward it (unless the fault answers it) and answer the client.
        ``scheduled``: the scheduler released it, and a delay fault was served as held steps already;
        ``query``: the request's query string (an Azure blob batch deletion names its keys in the body)."""
        conditional = "If-None-Match" in handler.headers
        forwarded = 0.0

        def record(status: int) -> None:
            """Log a manifest PUT or a deletion (a multi-object delete, a POST, names its keys in the body)."""
            if request_class == "manifest-put":
                entries = [WireWrite(client, arrived, "manifest-put", bucket, key, status,
                                     hashlib.md5(body, usedforsecurity=False).hexdigest(),
                                     body if 200 <= status < 300 else None, fault.kind, conditional, forwarded)]
            elif request_class == "delete":
                keys = [key] if method == "DELETE" else self._batch_keys(bucket, body) if "comp=batch" in \
                    query else [html.unescape(raw.decode()) for raw in _KEY.findall(body)]
                entries = [WireWrite(client, arrived, "delete", bucket, k, status, fault=fault.kind,
                                     forwarded=forwarded) for k in keys]
            else:
                return
            with self._lock:
                self.writes.extend(entries)

        if fault.kind in ("latency", "pause"):
            if not scheduled:
                time.sleep(fault.delay_s)
        elif fault.kind == "reset":
            record(0)
            self._reset(handler)
            return
        elif fault.kind in ("slowdown", "error500"):
            record(0)
            status, code, text = ((503, "SlowDown", "Please reduce your request rate.") if fault.kind == "slowdown"
                                  else (500, "InternalError", "We encountered an internal error. Please try again."))
            self._respond(handler, method, status, [("Content-Type", "application/xml")],
                          _error_body(code, text, key))
            return
        forwarded = time.monotonic()
        try:
            status, reason, out_headers, out_body = self._forward(method, handler.path, headers, body)
        except (OSError, http.client.HTTPException) as exc:
            record(0)
            self._respond(handler, method, 502, [("Content-Type", "application/xml")],
                          _error_body("BadGateway", f"upstream failed: {exc}", key))
            return
        record(status)
        if 200 <= status < 300 and method in ("PUT", "POST") and key:
            with self._lock:
                self._written_at[(bucket, key)] = time.monotonic()
        if request_class == "list" and self.personality == "lagging-list" and status == 200:
            out_body = self._hide_recent(bucket, out_body)
        if fault.kind == "lost-ack":
            self._reset(handler)
            return
        hook = self.answer_hook
        if hook is not None:
            raw = hook(UpstreamAnswer(method, bucket, key, query, {k.lower(): v for k, v in handler.headers.items()},
                                      status, reason, out_headers, out_body))
            if raw is not None:
                self._write_raw(handler, raw)
                return
        self._respond(handler, method, status, out_headers, out_body, reason)

    def _batch_keys(self, container: str, body: bytes) -> list[str]:
        """The keys an Azure blob batch deletes: its ``DELETE /account/container/key`` sub-requests."""
        prefix = f"{self._account}/{container}/"
        return [unquote(path.decode().removeprefix(prefix)) for path in _BATCH_DELETE.findall(body)
                if path.decode().startswith(prefix)]

    def _burst_fault(self, client: int, method: str, target: tuple[str, str]) -> Fault | None:
        """The fault a burst decides for this request (a reset; no fault for a resend a ``reads`` burst lets
        through), or None when no burst of ``client`` concerns it (the schedule decides)."""
        with self._lock:
            burst = self._bursts.get(client)
            if burst is None or burst.target != target:
                return None
            reading = method in ("GET", "HEAD")
            if burst.kind == "resends" and reading:
                del self._bursts[client]  # the client moved on to reading the object: the burst is over
                return None
            if burst.kind == "reads" and not reading:
                return Fault(None)
            burst.left -= 1
            if burst.left <= 0:
                del self._bursts[client]
            return Fault("reset")

    @staticmethod
    def _read_body(handler: _Handler) -> bytes:
        length = handler.headers.get("Content-Length")
        if length is not None:
            return handler.rfile.read(int(length)) if int(length) > 0 else b""
        if "chunked" in handler.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(handler.rfile.read(size))
                handler.rfile.readline()
            return b"".join(chunks)
        return b""

    def _forward(self, method: str, path: str, headers: list[tuple[str, str]],
                 body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        kind = http.client.HTTPSConnection if self._upstream_https else http.client.HTTPConnection
        conn = kind(self._upstream_host, self._upstream_port, timeout=UPSTREAM_TIMEOUT_S)
        try:
            conn.connect()
            assert conn.sock is not None
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # headers and body are two sends
            conn.putrequest(method, self._upstream_prefix + path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                conn.putheader(name, value)
            conn.endheaders(body if body else None)
            response = conn.getresponse()
            data = response.read()
            out = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP]
            return response.status, response.reason, out, data
        finally:
            conn.close()

    def _respond(self, handler: _Handler, method: str, status: int, headers: list[tuple[str, str]], body: bytes,
                 reason: str | None = None) -> None:
        """Status line, headers and body in one write (no delayed-ACK stall between them)."""
        head = method == "HEAD"  # a HEAD answer carries the object's length and no body
        lines = [f"HTTP/1.1 {status} {reason or http.client.responses.get(status, '')}"]
        lines += [f"{name}: {value}" for name, value in headers
                  if name.lower() not in ("server", "date") and (head or name.lower() != "content-length")]
        if not (head and any(name.lower() == "content-length" for name, _ in headers)):
            lines.append(f"Content-Length: {len(body)}")
        payload = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        handler.wfile.write(payload if head else payload + body)
        handler.wfile.flush()

    @staticmethod
    def _write_raw(handler: _Handler, raw: RawAnswer) -> None:
        """Write ``raw`` as it is, pausing between its pieces, and close the connection."""
        handler.close_connection = True
        with contextlib.suppress(OSError):  # the client gave up
            for i, piece in enumerate(raw.pieces):
                if i and raw.pause_s:
                    time.sleep(raw.pause_s)
                handler.wfile.write(piece)
                handler.wfile.flush()

    @staticmethod
    def _reset(handler: _Handler) -> None:
        """Abort the client's connection with a TCP RST, answering nothing."""
        handler.close_connection = True
        with contextlib.suppress(OSError):
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.connection.close()

    def _hide_recent(self, bucket: str, body: bytes) -> bytes:
        """Drop ``<Contents>`` entries of keys written less than ``list_lag_s`` ago."""
        cutoff = time.monotonic() - self.list_lag_s
        hidden = 0

        def keep(match: re.Match[bytes]) -> bytes:
            nonlocal hidden
            found = _KEY.search(match.group(0))
            if found is None:
                return match.group(0)
            key = html.unescape(found.group(1).decode())
            with self._lock:
                written = self._written_at.get((bucket, key))
            if written is not None and written > cutoff:
                hidden += 1
                return b""
            return match.group(0)

        out = _CONTENTS.sub(keep, body)
        if hidden:
            count = len(_CONTENTS.findall(out))
            out = _KEY_COUNT.sub(f"<KeyCount>{count}</KeyCount>".encode(), out, count=1)
        return out
