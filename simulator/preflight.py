"""Pre-flight: does this endpoint enforce ``If-None-Match: *`` atomically, under contention?

Lance commits on S3 rest on one primitive: of any number of concurrent ``PutObject`` requests with
``If-None-Match: *`` on one key, exactly one succeeds. Two checks:

1. **Sequential**: a conditional PUT on a key that exists must answer 412. An endpoint that answers 200
   ignores the header (the last writer wins); commits on it can be lost with no error at all.
2. **Contention**: ``rounds`` times, ``racers`` signed conditional PUTs of different bodies to one fresh
   key are released together (each is sent but its last byte on its own connection, then the last bytes
   go out back to back, so the requests complete at the server within microseconds of each other); a
   round with more than one 200 is a double win. Any double win means check-then-store is not atomic.

``vouched`` is true only when both pass. A failed check says why; a passed contention check is evidence,
not proof: races are probabilistic. Measured here with 8 racers of 64 KiB: moto without its write lock and
with forced thread switching (``sys.setswitchinterval(1e-6)``) had double winners in 5 to 10 % of rounds on
2026-11-20, and in about 0.5 % (1 to 2 of 200, five runs) on 2026-11-26; with the lock, 0 in every run. At
0.5 % the default 100 rounds miss it 6 times in 10, 1,000 rounds 7 times in 1,000 and 3,000 rounds (the
tests) about 3 in 10 million: a store judged safe on few rounds is judged on thin evidence. The check
stops at the first double win, so a store that races pays only until it is caught.
"""

from __future__ import annotations

import socket
import ssl
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

__all__ = ["PreflightResult", "preflight"]


@dataclass
class PreflightResult:
    endpoint: str
    vouched: bool
    reason: str
    sequential_ok: bool
    rounds: int = 0
    racers: int = 0
    double_wins: int = 0
    no_wins: int = 0
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "errors": self.errors[:10]}


class ProbeConfig:
    """``options`` read for a boto3 probe aimed at ``endpoint`` (the S3 credentials and region the cloud store
    reads, ``reference.store.cloud_options``): at most two attempts per request (a probe sees the endpoint's own
    answers), 10 s to connect, 30 s to read. boto3 is the simulator's second client, not the reader's."""

    def __init__(self, endpoint: str, options: Mapping[str, str]) -> None:
        lowered = {k.lower(): v for k, v in options.items()}

        def pick(*keys: str) -> str | None:
            return next((lowered[k] for k in keys if lowered.get(k)), None)

        self.endpoint = endpoint
        self.region = pick("aws_region", "region") or "us-east-1"
        self._keys = (pick("aws_access_key_id", "access_key_id"), pick("aws_secret_access_key", "secret_access_key"),
                      pick("aws_session_token", "session_token", "aws_token", "token"))

    def _session(self) -> Any:
        import boto3  # type: ignore[import-untyped, unused-ignore]

        access, secret, token = self._keys
        return boto3.session.Session(aws_access_key_id=access, aws_secret_access_key=secret,
                                     aws_session_token=token, region_name=self.region)

    def credentials(self) -> Any:
        """botocore credentials: the given keys, else boto3's default chain."""
        return self._session().get_credentials()

    def client(self) -> Any:
        """A boto3 S3 client, path-style, checksums only where the API requires them."""
        from botocore import UNSIGNED  # type: ignore[import-untyped, unused-ignore]
        from botocore.config import Config  # type: ignore[import-untyped, unused-ignore]

        session = self._session()
        config = Config(region_name=self.region, s3={"addressing_style": "path"},
                        retries={"mode": "standard", "total_max_attempts": 2},
                        request_checksum_calculation="when_required", response_checksum_validation="when_required",
                        connect_timeout=10, read_timeout=30,
                        signature_version=None if session.get_credentials() is not None else UNSIGNED)
        return session.client("s3", endpoint_url=self.endpoint, config=config)


def probe_config(endpoint: str, options: Mapping[str, str]) -> ProbeConfig:
    """The probe configuration of ``options`` aimed at ``endpoint``."""
    return ProbeConfig(endpoint, options)


def s3_client(endpoint: str, options: Mapping[str, str]) -> Any:
    """A boto3 client of ``probe_config``."""
    return probe_config(endpoint, options).client()


def http_status(exc: Exception) -> int | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return int(status) if status is not None else None


RACE_BODY_BYTES = 64 * 1024
"""Each racer's body size: storing a larger body takes the endpoint longer between its existence check and
its store, which widens the window a non-atomic endpoint leaves open (and costs an atomic one nothing)."""


def _body(i: int) -> bytes:
    head = f"racer {i} {uuid.uuid4().hex}\n".encode()
    return head + b"." * (RACE_BODY_BYTES - len(head))


def _signed_put(endpoint: str, bucket: str, key: str, body: bytes, credentials: Any, region: str) -> bytes:
    """The raw bytes of a SigV4-signed ``PUT`` with ``If-None-Match: *``."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest

    url = f"{endpoint.rstrip('/')}/{bucket}/{quote(key)}"
    request = AWSRequest(method="PUT", url=url, data=body,
                         headers={"If-None-Match": "*", "Content-Length": str(len(body))})
    if credentials is not None:
        S3SigV4Auth(credentials, "s3", region).add_auth(request)
    parts = urlsplit(url)
    lines = [f"PUT {parts.path} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in request.headers.items() if k.lower() not in ("host", "connection")]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _race(endpoint: str, bucket: str, key: str, racers: int, credentials: Any, region: str) -> list[int | None]:
    """``racers`` conditional PUTs of different bodies to ``key``, released together: every request is sent
    but its last byte, then the last bytes go out back to back. Returns each racer's HTTP status (None
    for a failed exchange)."""
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    requests = [_signed_put(endpoint, bucket, key, _body(i), credentials, region) for i in range(racers)]
    sockets: list[socket.socket] = []
    try:
        for raw in requests:
            sock = socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=30)
            if parts.scheme == "https":
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=parts.hostname)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(raw[:-1])
            sockets.append(sock)
        for sock, raw in zip(sockets, requests, strict=True):
            sock.sendall(raw[-1:])
        statuses: list[int | None] = []
        for sock in sockets:
            try:
                head = sock.makefile("rb").readline()
                statuses.append(int(head.split()[1]))
            except (OSError, ValueError, IndexError):
                statuses.append(None)
        return statuses
    finally:
        for sock in sockets:
            sock.close()


def preflight(endpoint: str, bucket: str, storage_options: Mapping[str, str], *, rounds: int = 100,
              racers: int = 8, prefix: str = "_lancespec_preflight") -> PreflightResult:
    """Run both checks against ``endpoint`` in ``bucket`` (keys under ``prefix/``, left behind). The
    contention check stops at the first round with double winners (the verdict is known)."""
    run = uuid.uuid4().hex[:12]
    config = probe_config(endpoint, storage_options)
    client = config.client()
    result = PreflightResult(endpoint, False, "", False, rounds, racers)

    key = f"{prefix}/{run}/sequential"
    client.put_object(Bucket=bucket, Key=key, Body=b"first", IfNoneMatch="*")
    try:
        client.put_object(Bucket=bucket, Key=key, Body=b"second", IfNoneMatch="*")
        result.reason = ("the endpoint ignores If-None-Match: a conditional PUT on an existing key succeeded "
                         "(the last writer wins; concurrent commits can be silently lost)")
        return result
    except Exception as exc:
        if http_status(exc) != 412:
            result.reason = f"a conditional PUT on an existing key answered {http_status(exc)}, not 412: {exc}"
            return result
    result.sequential_ok = True

    credentials = config.credentials()
    for round_no in range(rounds):
        key = f"{prefix}/{run}/race-{round_no}"
        statuses = _race(endpoint, bucket, key, racers, credentials, config.region)
        wins = sum(1 for s in statuses if s is not None and 200 <= s < 300)
        if any(s is None or not (200 <= s < 300 or s in (409, 412)) for s in statuses):
            result.errors.append(f"round {round_no}: statuses {statuses}")
        if wins > 1:
            result.double_wins += 1
        elif not wins:
            result.no_wins += 1
        result.rounds = round_no + 1
        if result.double_wins:
            break
    if result.double_wins:
        result.reason = (f"conditional writes are not atomic: {result.double_wins} of {result.rounds} rounds of "
                         f"{racers} concurrent If-None-Match PUTs on one key had more than one winner")
    elif result.errors:
        result.reason = f"{len(result.errors)} racing PUTs failed with errors; atomicity could not be judged"
    else:
        result.vouched = True
        result.reason = (f"If-None-Match enforced: 412 on an existing key; exactly one winner in each of "
                         f"{result.rounds} rounds of {racers} concurrent PUTs")
    return result
