"""``python -m lancespec.fuzz --answers``: the fuzzer of what an S3-compatible store answers.

The fuzzers' pristine world (``lancespec.fuzz_world``) lies in a bucket of the embedded S3 server
(``simulator.s3``) on 127.0.0.1, and certify reads it as ``s3://`` through the fault proxy
(``simulator.proxy``) whose answer hook damages the endpoint's answers. Each request's damage is decided by
the case's seed and the request itself (method, key, query, ``Range``), never by the order requests arrive,
so a case replays: the same request meets the same damage in both runs of a case, in every attempt, and in a
replay of the seed against the same world. The classes (``KINDS``):

- status: a 200 answered 206 (no ``Content-Range``), 404, 412, 500, 503, or a 301/302/307 whose ``Location``
  names a key of the proxy's own (a request for it is a redirect followed);
- headers: ``Content-Length`` too long, too short, absent, negative or huge; ``Content-Range`` lying or
  absent; ``ETag`` or ``Last-Modified`` garbage; ``Content-Encoding`` gzip/br/deflate (with the body as it was
  or really compressed); ``Transfer-Encoding: chunked`` with bad chunks;
- bodies: truncated, extended, bits flipped, replaced by another object's body, or sent slowly (in pieces,
  at most about a second in all, every byte intact);
- listings: the XML truncated, a continuation token that never ends (pages of 500 made-up keys, or empty
  pages), keys outside the prefix, ``..`` keys, huge or negative sizes, bytes that are not UTF-8, entity
  declarations (nested expansion, an external entity).

A case passes by the fuzzer's rule (``fuzz_worker.problem``: no signal, no hang past the case's seconds, no
traceback, no exit 3, nothing local opened outside lancespec's own runtime, the same verdict the second
time, memory within the worker's address space) and three of its own: no redirect is followed, no key
outside the world is asked for (unless a bit was flipped: a manifest may then name another base, where
reading is the dataset's right), and a case whose answers all kept their bytes (none damaged, or only sent
slowly) is CONFORMANT, as the world is. A damaged answer may end in any verdict: certify need not use every
answer (a damaged ``ETag`` changes nothing it relies on), so no rule says which damage must be a finding.
"""

from __future__ import annotations

import gzip
import random
import re
import shutil
import sys
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs

from simulator.proxy import FaultProxy, RawAnswer, UpstreamAnswer
from simulator.s3 import EmbeddedS3Server

from .fuzz_worker import CASE_SECONDS, FuzzResult, Worker, problem, wait_while_paused
from .fuzz_world import write_world

BUCKET = "lancespec-fuzz"
WORLD = "world"  # the world's prefix in the bucket: the dataset at world/ds, its base at world/base
#: Storage options of every case: a request's time, its attempts and a listing's objects bounded so that a
#: damaged answer ends well within the case's seconds (a user bounds them so against a store they distrust).
CASE_OPTIONS = {"timeout": "5s", "connect_timeout": "2s", "lancespec_max_attempts": "2",
                "lancespec_max_listed_objects": "2000"}
RATES = (0.02, 0.05, 0.1, 0.25, 0.5)
_FOREVER = "lancespec-fuzz-page"
_REDIRECTED = "lancespec-fuzz-redirected"
_SIZE = re.compile(rb"<Size>\d*</Size>")
_HUGE = ("9223372036854775807", "18446744073709551616", "1000000000000000000000000000000")


# --- building answers ------------------------------------------------------------------------------------


def _head(status: int, headers: Sequence[tuple[str, str]], length: str | None) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Whatever')}", *(f"{k}: {v}" for k, v in headers)]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


_REASONS = {200: "OK", 206: "Partial Content", 301: "Moved Permanently", 302: "Found", 307: "Temporary Redirect",
            404: "Not Found", 412: "Precondition Failed", 500: "Internal Server Error", 503: "Service Unavailable"}


def _answer(a: UpstreamAnswer, *, status: int | None = None, headers: Sequence[tuple[str, str]] | None = None,
            body: bytes | None = None, length: str | None = "auto", drop: Sequence[str] = ()) -> RawAnswer:
    """``a`` with what is given replaced; ``length`` "auto" is the body's own, None none at all. A HEAD
    answer carries the length and no body."""
    kept = [(k, v) for k, v in (a.headers if headers is None else headers)
            if k.lower() not in ("content-length", "connection", "date", "server", *drop)]
    data = a.body if body is None else body
    if length == "auto":
        length = dict((k.lower(), v) for k, v in a.headers).get("content-length", str(len(data))) \
            if a.method == "HEAD" else str(len(data))
    head = _head(a.status if status is None else status, kept, length)
    return RawAnswer((head,) if a.method == "HEAD" else (head, data))


def _error(a: UpstreamAnswer, status: int, code: str) -> RawAnswer:
    body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>fuzz</Message>'
            "<RequestId>lancespec-fuzz</RequestId></Error>").encode()
    return _answer(a, status=status, headers=[("Content-Type", "application/xml")], body=body)


def _flip(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return b"\x00"
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


@dataclass(frozen=True)
class _Case:
    """What a damage may use besides the answer: the world's objects (key, body) and the proxy's URL."""

    objects: tuple[tuple[str, bytes], ...]
    proxy_url: str


Damage = Callable[[UpstreamAnswer, random.Random, _Case], RawAnswer]


def _status(code: int) -> Damage:
    names = {404: "NoSuchKey", 412: "PreconditionFailed", 500: "InternalError", 503: "SlowDown"}
    if code == 206:
        return lambda a, rng, case: _answer(a, status=206, drop=("content-range",))
    return lambda a, rng, case: _error(a, code, names[code])


def _redirect(a: UpstreamAnswer, rng: random.Random, case: _Case) -> RawAnswer:
    where = f"{case.proxy_url}/{BUCKET}/{_REDIRECTED}/{rng.randrange(1 << 30)}"
    return _answer(a, status=rng.choice((301, 302, 307)), headers=[("Location", where)], body=b"")


def _length(kind: str) -> Damage:
    def damaged(a: UpstreamAnswer, rng: random.Random, case: _Case) -> RawAnswer:
        n = len(a.body)
        length = {"long": str(n + rng.randint(1, 1000)), "short": str(max(0, n - rng.randint(1, 100))),
                  "absent": None, "negative": rng.choice(("-1", "-100000")), "huge": rng.choice(_HUGE)}[kind]
        return _answer(a, length=length)
    return damaged


def _range_lying(a: UpstreamAnswer, rng: random.Random, case: _Case) -> RawAnswer:
    n = len(a.body)
    start = rng.choice((1, 7, n, 1 << 40))
    total = rng.choice((str(n), str(n + start), "*", "18446744073709551616"))
    lie = rng.choice((f"bytes {start}-{start + n - 1}/{total}", f"bytes 0-{n * 2}/{total}", "bytes */0",
                      f"bytes {n}-0/{total}", "items 0-1/2"))
    return _answer(a, status=206, headers=[*[(k, v) for k, v in a.headers if k.lower() != "content-range"],
                                           ("Content-Range", lie)])


def _range_absent(a: UpstreamAnswer, rng: random.Random, case: _Case) -> RawAnswer:
    return _answer(a, drop=("content-range",))


def _header(name: str, values: Sequence[str]) -> Damage:
    def damaged(a: UpstreamAnswer, rng: random.Random, case: _Case) -> RawAnswer:
        return _answer(a, headers=[*[(k, v) for k, v in a.headers if k.lower() != name.lower()],
                                   (name, rng.choice(values))])
    return damaged


def _encoding(a: UpstreamAnswer, rng: random.Random, case: _Case) -> RawAnswer:
    how = rng.choice(("gzip", "br", "deflate"))
    body = a.body
    if rng.random() < 0.5 and how != "br":  # really compressed, or only said to be
        body = gzip.compress(body) if how == "gzip" else zlib.compress(body)
    return _answer(a, headers=[*a.headers, ("Content-Encoding", how)], body=body)


def _chunked(a: UpstreamAnswer, rng: random.Random, case: _Case) -> RawAnswer:
    body = a.body
    cut = rng.randrange(len(body) + 1)
    parts = [body[:cut], body[cut:]]
    how = rng.choice(("bad-size", "too-long", "no-end", "good"))
    if how == "bad-size":
        chunks = b"zz\r\n" + body + b"\r\n0\r\n\r\n"
    elif how == "too-long":
        chunks = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body) + 4096, body)
    else:
        end = b"" if how == "no-end" else b"0\r\n\r\n"
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p) + end
    head = _head(a.status, [(k, v) for k, v in a.headers if k.lower() not in ("content-length", "connection")]
                 + [("Transfer-Encoding", "chunked")], None)
    return RawAnswer((head,) if a.method == "HEAD" else (head, chunks))


def _body(kind: str) -> Damage:
    def damaged(a: UpstreamAnswer, rng: random.Random, case: _Case) -> RawAnswer:
        data = a.body
        if kind == "truncated":
            data = data[:rng.randrange(len(data))] if data else b""
        elif kind == "extended":
            data = data + bytes(rng.randrange(256) for _ in range(rng.randint(1, 4096)))
        elif kind == "bit-flip":
            data = _flip(data, rng)
        else:  # another object's body
            others = [body for key, body in case.objects if key != a.key]
            data = rng.choice(others) if others else data
        return _answer(a, body=data, drop=("content-range",) if kind == "other-body" else ())
    return damaged


def _slow(a: UpstreamAnswer, rng: random.Random, case: _Case) -> RawAnswer:
    """Every byte, in up to 8 pieces with pauses of at most 0.15 s: slow, and done well within the request's
    timeout."""
    whole = b"".join(_answer(a).pieces)
    cuts = sorted(rng.sample(range(1, len(whole)), min(7, len(whole) - 1)))
    pieces = [whole[i:j] for i, j in zip([0, *cuts], [*cuts, len(whole)], strict=True)]
    return RawAnswer(tuple(pieces), pause_s=rng.uniform(0.02, 0.15))


# --- listings ----------------------------------------------------------------------------------------------


def _prefix(a: UpstreamAnswer) -> str:
    return parse_qs(a.query).get("prefix", [""])[0]


def _contents(keys: Sequence[str], size: str = "100") -> bytes:
    return b"".join(f"<Contents><Key>{k}</Key><LastModified>2026-11-02T10:00:00.000Z</LastModified><ETag>&quot;0"
                    f"&quot;</ETag><Size>{size}</Size><StorageClass>STANDARD</StorageClass></Contents>".encode()
                    for k in keys)


def _with_contents(a: UpstreamAnswer, extra: bytes) -> RawAnswer:
    body = a.body.replace(b"</ListBucketResult>", extra + b"</ListBucketResult>", 1)
    return _answer(a, body=body)


def _listing(kind: str) -> Damage:
    def damaged(a: UpstreamAnswer, rng: random.Random, case: _Case) -> RawAnswer:
        body, prefix = a.body, _prefix(a)
        if kind == "xml-truncated":
            return _answer(a, body=body[:rng.randrange(len(body))])
        if kind == "token-forever":
            mode = rng.choice(("keys", "empty"))
            more = f"<IsTruncated>true</IsTruncated><NextContinuationToken>{_FOREVER}-{mode}-1</NextContinuationToken>"
            return _answer(a, body=body.replace(b"<IsTruncated>false</IsTruncated>", more.encode(), 1))
        if kind == "keys-outside":
            return _with_contents(a, _contents(rng.sample(["elsewhere/secret.manifest", "/etc/passwd", "x",
                                                          f"{WORLD}-other/ds/_versions/1.manifest"], 2)))
        if kind == "dotdot-keys":
            return _with_contents(a, _contents([f"{prefix}../../elsewhere/1.manifest", f"{prefix}..", "../x",
                                                f"{prefix}a/../../../b.lance"][: rng.randint(1, 4)]))
        if kind == "huge-sizes":
            size = rng.choice((*_HUGE, "-1", "1e30", ""))
            return _answer(a, body=_SIZE.sub(f"<Size>{size}</Size>".encode(), body))
        if kind == "non-utf8":
            return _answer(a, body=body.replace(b"<Key>", b"<Key>\xff\xfe\xc3(", 1))
        # entity declarations: nested expansion, or an external entity naming a local file
        doctype = (b'<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">' + b"".join(
            b'<!ENTITY %c "%s">' % (ord("b") + i, (b"&%c;" % (ord("a") + i)) * 10) for i in range(8)) + b"]>"
                   if rng.random() < 0.5 else b'<!DOCTYPE r [<!ENTITY i SYSTEM "file:///etc/passwd">]>')
        out = body.replace(b"?>", b"?>" + doctype, 1) if body.startswith(b"<?xml") else doctype + body
        return _answer(a, body=out.replace(b"<Key>", b"<Key>&i;", 1))  # the last entity of either
    return damaged


def _forever_page(a: UpstreamAnswer, token: str) -> RawAnswer:
    """The next page of a listing that never ends (``token`` names its mode and number)."""
    mode, page = token.removeprefix(f"{_FOREVER}-").split("-")
    keys = [] if mode == "empty" else [f"{_prefix(a)}{_FOREVER}-{page}-{i}" for i in range(500)]
    body = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/'
            f'2006-03-01/"><Name>{BUCKET}</Name><Prefix>{_prefix(a)}</Prefix><KeyCount>{len(keys)}</KeyCount>'
            "<MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>"
            f"{_FOREVER}-{mode}-{int(page) + 1}</NextContinuationToken>").encode() + _contents(keys) + \
        b"</ListBucketResult>"
    return _answer(a, status=200, headers=[("Content-Type", "application/xml")], body=body)


# --- the classes ---------------------------------------------------------------------------------------------

STATUS_KINDS: dict[str, Damage] = {**{f"status-{c}": _status(c) for c in (206, 404, 412, 500, 503)},
                                   "redirect": _redirect}
HEADER_KINDS: dict[str, Damage] = {
    **{f"length-{k}": _length(k) for k in ("long", "short", "absent", "negative", "huge")},
    "range-lying": _range_lying, "range-absent": _range_absent,
    "etag-garbage": _header("ETag", ('"', "", "\"x\x7f\"", "W/" + "e" * 5000, "\"\u00e9\"")),
    "last-modified-garbage": _header("Last-Modified", ("", "yesterday", "Mon, 99 Foo 9999 99:99:99 GMT",
                                                       "Thu, 01 Jan 1970 00:00:00 GMT", "0")),
    "content-encoding": _encoding, "chunked-bad": _chunked}
BODY_KINDS: dict[str, Damage] = {**{k: _body(k) for k in ("truncated", "extended", "bit-flip", "other-body")},
                                 "slow": _slow}
LISTING_KINDS: dict[str, Damage] = {k: _listing(k) for k in (
    "xml-truncated", "token-forever", "keys-outside", "dotdot-keys", "huge-sizes", "non-utf8", "entities")}
KINDS: dict[str, Damage] = {**STATUS_KINDS, **HEADER_KINDS, **BODY_KINDS, **LISTING_KINDS}
#: Damage that keeps every byte of the answer: a case damaged only so must be CONFORMANT.
BYTES_KEPT = frozenset({"slow"})
_HEAD_KINDS = frozenset(STATUS_KINDS) | frozenset(HEADER_KINDS) - {"content-encoding"}


def _is_listing(a: UpstreamAnswer) -> bool:
    return a.method == "GET" and not a.key and "list-type" in parse_qs(a.query, keep_blank_values=True)


def applicable(a: UpstreamAnswer, allowed: Sequence[str]) -> list[str]:
    """The kinds of damage that can be done to ``a`` among ``allowed`` (listings get status and listing
    damage, HEAD answers status and header damage, GETs of objects all but listing damage)."""
    if _is_listing(a):
        fits = set(STATUS_KINDS) | set(LISTING_KINDS)
    elif a.method == "HEAD":
        fits = set(_HEAD_KINDS)
    elif a.method == "GET" and a.key:
        fits = set(STATUS_KINDS) | set(HEADER_KINDS) | set(BODY_KINDS)
    else:
        return []
    return sorted(fits & set(allowed))


# --- one case: the proxy's hook ----------------------------------------------------------------------------


@dataclass
class CaseDamage:
    """The answer hook of one case: each 2xx answer is damaged with probability ``rate`` by one of ``kinds``,
    chosen by ``Random(seed, request)``; what it did and what it saw asked are recorded."""

    seed: int
    rate: float
    kinds: tuple[str, ...]
    case: _Case
    done: list[str] = field(default_factory=list)
    followed: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    pages: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, a: UpstreamAnswer) -> RawAnswer | None:
        token = parse_qs(a.query).get("continuation-token", [""])[0]
        with self._lock:
            if a.key.startswith(_REDIRECTED):
                self.followed.append(f"{a.method} {a.key}")
            elif a.key and not a.key.startswith(f"{WORLD}/"):
                self.outside.append(f"{a.method} {a.key}")
        if token.startswith(f"{_FOREVER}-"):
            with self._lock:
                self.pages += 1
            return _forever_page(a, token)
        if not 200 <= a.status < 300:
            return None
        identity = f"{self.seed}|{a.method}|{a.bucket}/{a.key}|{a.query}|{a.request_headers.get('range', '')}"
        rng = random.Random(identity)
        if rng.random() >= self.rate:
            return None
        kinds = applicable(a, self.kinds)
        if not kinds:
            return None
        kind = rng.choice(kinds)
        with self._lock:
            self.done.append(f"{kind}: {a.method} {a.key or '?' + a.query}")
        return KINDS[kind](a, rng, self.case)

    def bytes_kept(self) -> bool:
        """Whether every damaged answer kept its bytes (or none was damaged)."""
        return all(d.split(":")[0] in BYTES_KEPT for d in self.done)


def case_plan(seed: int, kinds: Sequence[str] | None = None,
              rate: float | None = None) -> tuple[float, tuple[str, ...]]:
    """A case's rate and kinds, drawn from its seed: a rate of ``RATES`` and one family of kinds (status,
    headers, bodies, listings, or all of them). ``kinds`` keeps only those of the family (all of ``kinds`` when
    the family has none of them), ``rate`` replaces the rate; the draw is the same either way."""
    rng = random.Random(seed)
    drawn_rate = rng.choice(RATES)
    family = set(rng.choice((STATUS_KINDS, HEADER_KINDS, BODY_KINDS, LISTING_KINDS, KINDS)))
    if kinds is not None:
        family = (family & set(kinds)) or set(kinds)
    return (drawn_rate if rate is None else rate), tuple(sorted(family))


@dataclass(frozen=True)
class AnswerCase:
    """The record of one case: its plan, what was damaged (in the first run), the exit codes of both runs
    and the problem that failed it (None: passed)."""

    seed: int
    rate: float
    kinds: tuple[str, ...]
    damaged: tuple[str, ...]
    codes: tuple[int, int]
    seconds: float
    problem: str | None


# --- the rig: server, world, proxy, worker -------------------------------------------------------------------


class AnswerRig:
    """The embedded S3 server holding the world, the proxy in front of it and a worker; ``run_case`` runs one
    case. The world is written once per ``workdir`` and kept there (its file names are random), so a seed
    replays against the world it met."""

    def __init__(self, workdir: Path, case_seconds: int = CASE_SECONDS) -> None:
        self.workdir = workdir
        self.case_seconds = case_seconds
        self.server = EmbeddedS3Server()
        self.proxy: FaultProxy | None = None
        self.worker = Worker()
        self.objects: tuple[tuple[str, bytes], ...] = ()

    def __enter__(self) -> AnswerRig:
        try:
            self.server.start()
            self.server.create_bucket(BUCKET)
            self.objects = self._world()
            self.proxy = FaultProxy(self.server.endpoint, 1).start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.worker.stop()
        if self.proxy is not None:
            self.proxy.stop()
        self.server.stop()

    def _world(self) -> tuple[tuple[str, bytes], ...]:
        """Upload the kept world (writing it first when this workdir has none); its objects by key."""
        kept, built = self.workdir / "answers-world", self.workdir / "answers-world.complete"
        client = self.server.client()
        if not built.exists():
            from reference.store import open_store

            shutil.rmtree(kept, ignore_errors=True)
            write_world(f"s3://{BUCKET}/{WORLD}", open_store(self.server.storage_options()))
            for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
                path = kept / item["Key"]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(client.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read())
            built.touch()
        else:
            for path in sorted(p for p in kept.rglob("*") if p.is_file()):
                client.put_object(Bucket=BUCKET, Key=path.relative_to(kept).as_posix(), Body=path.read_bytes())
        return tuple((p.relative_to(kept).as_posix(), p.read_bytes()) for p in sorted(kept.rglob("*")) if p.is_file())

    @property
    def uri(self) -> str:
        return f"s3://{BUCKET}/{WORLD}/ds"

    def argv(self) -> list[str]:
        assert self.proxy is not None
        options = {**self.proxy.storage_options(0, self.server.storage_options()), **CASE_OPTIONS}
        return ["certify", self.uri, "--all-versions", "--format", "json",
                *[a for k, v in sorted(options.items()) for a in ("--storage-option", f"{k}={v}")]]

    def run_case(self, seed: int, kinds: Sequence[str] | None = None, rate: float | None = None) -> AnswerCase:
        """Run ``seed``'s case twice through the proxy and judge it."""
        assert self.proxy is not None
        case_rate, case_kinds = case_plan(seed, kinds, rate)
        hooks = [CaseDamage(seed, case_rate, case_kinds, _Case(self.objects, self.proxy.endpoint(0)))
                 for _ in range(2)]
        started = time.perf_counter()
        answers: list[dict[str, Any]] = []
        for hook in hooks:
            self.proxy.answer_hook = hook
            try:
                answers.append(self.worker.run(self.argv(), [self.uri], self.case_seconds))
            finally:
                self.proxy.answer_hook = None
        first, second = answers
        found = problem(first, second, self.case_seconds)
        if found is None:
            found = _own_problem(hooks[0], first)
        return AnswerCase(seed, case_rate, case_kinds, tuple(sorted(set(hooks[0].done))),
                          (first["code"], second["code"]), time.perf_counter() - started, found)


def _own_problem(hook: CaseDamage, first: dict[str, Any]) -> str | None:
    """The rules of store answers, beyond the fuzzer's: no redirect followed, no key outside the world asked
    for, and CONFORMANT when every answer kept its bytes."""
    if hook.followed:
        return f"followed a redirect: {hook.followed[:3]}"
    # a flipped bit in a manifest may name another base (reading there is the dataset's right): the rule
    # holds where no bit was flipped, so that what certify asks for comes from the world or the listings
    if hook.outside and not any(d.startswith("bit-flip:") for d in hook.done):
        return f"asked the store for keys outside the world: {sorted(set(hook.outside))[:3]}"
    if hook.bytes_kept() and first["code"] != 0:
        return f"answers that kept their bytes were not CONFORMANT: exit {first['code']}: {first['stderr'][-300:]}"
    return None


# --- the run -------------------------------------------------------------------------------------------------


@dataclass
class AnswersResult(FuzzResult):
    """A store-answer run: the fuzzer's tally, in how many cases each kind of damage was done, and how many
    of those ended CONFORMANT (the damage changed nothing certify relies on, or certify did not see it)."""

    damage: Counter[str] = field(default_factory=Counter)
    conformant: Counter[str] = field(default_factory=Counter)

    def damage_summary(self) -> str:
        return "damage done (cases; of them CONFORMANT): " + ", ".join(
            f"{k} {n}; {self.conformant[k]}" for k, n in sorted(self.damage.items()))


def fuzz_answers(cases: int, seed: int, workdir: Path, progress: bool = False, kinds: Sequence[str] | None = None,
                 case_seconds: int = CASE_SECONDS) -> AnswersResult:
    """Run ``cases`` store-answer cases with seeds ``seed .. seed + cases - 1``, the world kept in
    ``workdir``; ``kinds`` limits the damage to those kinds (``KINDS``)."""
    unknown = sorted(set(kinds or ()) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown kinds of answer damage: {', '.join(unknown)}; choose from {', '.join(KINDS)}")
    result = AnswersResult()
    started = time.perf_counter()
    with AnswerRig(workdir, case_seconds) as rig:
        try:
            for s in range(seed, seed + cases):
                wait_while_paused(workdir)
                record = rig.run_case(s, kinds)
                result.cases += 1
                result.exit_codes[record.codes[0]] = result.exit_codes.get(record.codes[0], 0) + 1
                kinds_done = {d.split(":")[0] for d in record.damaged}
                result.damage.update(kinds_done)
                if record.codes[0] == 0:
                    result.conformant.update(kinds_done)
                if record.problem is not None:
                    result.failures[s] = f"{', '.join(record.damaged[:4]) or 'no damage'}: {record.problem}"
                    if progress:
                        print(f"seed {s}: {result.failures[s]}", file=sys.stderr, flush=True)
                if progress and result.cases % 100 == 0:  # a long run stopped early still tells its tally
                    codes = ", ".join(f"exit {k}: {v}" for k, v in sorted(result.exit_codes.items()))
                    print(f"{result.cases} cases, {len(result.failures)} failed ({codes}; "
                          f"{time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
        except KeyboardInterrupt:  # Ctrl-C: the cases done so far are the result (the case in flight is not)
            result.interrupted = True
        finally:
            result.seconds = time.perf_counter() - started
            result.workers_started = rig.worker.started
    return result
