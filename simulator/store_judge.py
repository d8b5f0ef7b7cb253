"""Judge an object store before putting Lance on it (``lancespec certify-store``).

Each property is one small probe against the endpoint, in keys under a fresh prefix of the bucket, and
gives a verdict with what was observed. Lance's commit protocol (docs/lance-format.md §7.1, §7.2) rests on
four of them, marked ``commit_critical``:

* ``conditional-create``: a ``PutObject`` with ``If-None-Match: *`` on an existing key answers 412
  (an endpoint that answers 200 lets the last writer win: concurrent commits lost without an error);
* ``atomic-conditional-create``: of concurrent conditional PUTs on one fresh key exactly one wins
  (the pre-flight race, ``simulator.preflight``);
* ``list-after-write``: a listing made right after a PUT shows the key (a writer finds the latest version
  by listing ``_versions/``; a lagging listing makes it build on a stale version);
* ``read-after-write``: a GET right after a PUT, and after an overwrite, returns the new bytes.

The others are what readers and cleanup use: ranged and suffix GETs (data-file footers are read with a
suffix range), ``CopyObject`` (deep clones), delete semantics and the error codes lancespec and Lance map
(404 for a missing key on GET and HEAD), and listing pages. ``commit_safe`` is true only when every commit
critical property holds.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from reference.errors import ObjectAlreadyExists, ObjectNotFound, StorageError

from .preflight import http_status, preflight, s3_client

__all__ = ["PROPERTIES", "PropertyVerdict", "StoreVerdict", "judge_store", "judge_store_uri"]


@dataclass(frozen=True)
class PropertyVerdict:
    name: str
    passed: bool
    observed: str
    commit_critical: bool

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class StoreVerdict:
    endpoint: str
    bucket: str
    properties: list[PropertyVerdict] = field(default_factory=list)

    @property
    def commit_safe(self) -> bool:
        return all(p.passed for p in self.properties if p.commit_critical)

    @property
    def all_passed(self) -> bool:
        return all(p.passed for p in self.properties)

    def to_json(self) -> dict[str, Any]:
        return {"format": "lancespec.certify-store/1", "endpoint": self.endpoint, "bucket": self.bucket,
                "commit_safe": self.commit_safe, "all_passed": self.all_passed,
                "properties": [p.to_json() for p in self.properties]}


@dataclass
class _Probe:
    """What every property probe gets: an S3 client (boto3: the endpoint's own answers, status by status), the
    bucket, a fresh key prefix and the options. ``_StorageProbe`` asks the same through lancespec's storage layer
    for any scheme."""

    client: Any
    bucket: str
    prefix: str
    endpoint: str
    options: Mapping[str, str]
    race_rounds: int

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}"

    def put(self, name: str, body: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.key(name), Body=body)

    def create(self, name: str, body: bytes) -> int | None:
        """A conditional create (``If-None-Match: *``): its HTTP status (200 created, 412 the key exists)."""
        return _status_of(lambda: self.client.put_object(Bucket=self.bucket, Key=self.key(name), Body=body,
                                                         IfNoneMatch="*"))

    def get(self, name: str, byte_range: str | None = None) -> tuple[int, bytes]:
        """A GET (``byte_range``: ``bytes=A-B`` or the suffix ``bytes=-N``): its status and body."""
        extra = {"Range": byte_range} if byte_range else {}
        answer = self.client.get_object(Bucket=self.bucket, Key=self.key(name), **extra)
        return int(answer["ResponseMetadata"]["HTTPStatusCode"]), answer["Body"].read()

    def status_of_missing(self, name: str) -> tuple[int | None, int | None]:
        """The statuses of a GET and a HEAD of a key never written."""
        key = self.key(name)
        return (_status_of(lambda: self.client.get_object(Bucket=self.bucket, Key=key)),
                _status_of(lambda: self.client.head_object(Bucket=self.bucket, Key=key)))

    def copy(self, source: str, target: str) -> None:
        self.client.copy_object(Bucket=self.bucket, Key=self.key(target),
                                CopySource={"Bucket": self.bucket, "Key": self.key(source)})

    def delete(self, name: str) -> int | None:
        return _status_of(lambda: self.client.delete_object(Bucket=self.bucket, Key=self.key(name)))

    def listed(self, under: str, page_size: int = 1000) -> list[str]:
        names: list[str] = []
        token: str | None = None
        while True:
            extra = {"ContinuationToken": token} if token else {}
            page = self.client.list_objects_v2(Bucket=self.bucket, Prefix=self.key(under), MaxKeys=page_size,
                                               **extra)
            names += [o["Key"][len(self.prefix) + 1:] for o in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                return names
            token = page.get("NextContinuationToken")
            if not token:
                raise RuntimeError("a truncated listing page carries no continuation token")

    def race(self) -> tuple[bool, str]:
        """The pre-flight race (``simulator.preflight``): raw signed conditional PUTs released together."""
        result = preflight(self.endpoint, self.bucket, self.options, rounds=self.race_rounds,
                           prefix=self.key("race"))
        if not result.sequential_ok:
            return False, "not judged: " + result.reason
        return result.vouched, result.reason


class _StorageProbe(_Probe):
    """The probes through lancespec's storage layer (``reference.store``: object_store, as pylance reaches the
    store) under ``root`` (``SCHEME://BUCKET``), for the schemes boto3 cannot speak (``az://``, ``gs://``). Its
    statuses are what the layer reports: 412 for a refused conditional create (ObjectAlreadyExists), 404 for a
    missing object (ObjectNotFound), 206 for a range the layer accepted (it refuses a whole-object answer to a
    range request), 200 otherwise."""

    def __init__(self, root: str, options: Mapping[str, str], prefix: str, race_rounds: int) -> None:
        from reference.store import open_store

        super().__init__(None, root.split("://", 1)[1], prefix, root, options, race_rounds)
        self.root = root.rstrip("/")
        self.storage = open_store(dict(options))

    def uri(self, name: str) -> str:
        return f"{self.root}/{self.key(name)}"

    def put(self, name: str, body: bytes) -> None:
        self.storage.put(self.uri(name), body)

    def create(self, name: str, body: bytes) -> int | None:
        return _layer_status(lambda: self.storage.put_if_absent(self.uri(name), body, resend=False))

    def get(self, name: str, byte_range: str | None = None) -> tuple[int, bytes]:
        if byte_range is None:
            return 200, self.storage.get(self.uri(name))
        first, _, last = byte_range.removeprefix("bytes=").partition("-")
        if not first:
            return 206, self.storage.get_tail(self.uri(name), int(last)).data
        return 206, self.storage.get_range(self.uri(name), int(first), int(last) - int(first) + 1)

    def status_of_missing(self, name: str) -> tuple[int | None, int | None]:
        return (_layer_status(lambda: self.storage.get(self.uri(name))),
                _layer_status(lambda: self.storage.head(self.uri(name))))

    def copy(self, source: str, target: str) -> None:
        self.storage.copy(self.uri(source), self.uri(target))

    def delete(self, name: str) -> int | None:
        return 204 if _layer_status(lambda: self.storage.delete(self.uri(name))) == 200 else None

    def listed(self, under: str, page_size: int = 1000) -> list[str]:
        directory = self.uri(under).rstrip("/")
        cut = len(self.root) + len(self.prefix) + 2
        return [info.uri[cut:] for page in self.storage.list_pages(directory, page_size) for info in page]

    def race(self, racers: int = 8) -> tuple[bool, str]:
        """``race_rounds`` rounds of ``racers`` threads, released together by a barrier, each sending one
        conditional create of its own body to one fresh key (``put_if_absent``, never resent): exactly one may
        win, and the object must hold the winner's body. Threads released together are looser than the S3
        pre-flight's last-byte release: evidence, not proof."""
        if self.create("race-sequential", b"first") != 200 or self.create("race-sequential", b"second") != 412:
            return False, "not judged: a conditional create on an existing key was not refused"
        for round_no in range(self.race_rounds):
            name = f"race/{round_no:05d}"
            statuses, bodies = self._race_round(name, racers)
            winners = [i for i, status in enumerate(statuses) if status == 200]
            if len(winners) != 1:
                return False, (f"round {round_no + 1}: {len(winners)} of {racers} concurrent conditional creates "
                               f"won (statuses {statuses})")
            if self.get(name)[1] != bodies[winners[0]]:
                return False, f"round {round_no + 1}: the object does not hold the one winner's body"
        return True, (f"{self.race_rounds} rounds of {racers} concurrent conditional creates: exactly one won each "
                      "round and the object held its body")


    def _race_round(self, name: str, racers: int) -> tuple[list[int | None], list[bytes]]:
        """One round: each racer's status and body."""
        barrier = threading.Barrier(racers)
        statuses: list[int | None] = [None] * racers
        bodies = [f"racer {i} {uuid.uuid4().hex}".encode() * 1024 for i in range(racers)]

        def send(i: int) -> None:
            barrier.wait()
            statuses[i] = self.create(name, bodies[i])

        threads = [threading.Thread(target=send, args=(i,)) for i in range(racers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return statuses, bodies


def _status_of(call: Callable[[], object]) -> int | None:
    try:
        call()
    except Exception as exc:
        return http_status(exc)
    return 200


def _layer_status(call: Callable[[], object]) -> int | None:
    """The storage layer's answer as a status: 200 done, 412 refused create, 404 missing, None another error."""
    try:
        call()
    except ObjectAlreadyExists:
        return 412
    except ObjectNotFound:
        return 404
    except StorageError:
        return None
    return 200


# --- commit-critical properties ---------------------------------------------------------------------------


def conditional_create(p: _Probe) -> tuple[bool, str]:
    p.create("conditional", b"first")
    status = p.create("conditional", b"second")
    _, body = p.get("conditional")
    if status == 412 and body == b"first":
        return True, "a conditional PUT on an existing key answered 412 and the object kept its first body"
    return False, f"a conditional PUT on an existing key answered {status}; the object now holds {body[:16]!r}"


def atomic_conditional_create(p: _Probe) -> tuple[bool, str]:
    return p.race()


def list_after_write(p: _Probe, trials: int = 20) -> tuple[bool, str]:
    hidden = 0
    for i in range(trials):
        name = f"listed/{i:04d}"
        p.put(name, b"x")
        if name not in p.listed("listed/"):
            hidden += 1
    if hidden:
        return False, f"{hidden} of {trials} keys were missing from a listing made right after their PUT"
    return True, f"each of {trials} keys was listed right after its PUT"


def read_after_write(p: _Probe, trials: int = 10) -> tuple[bool, str]:
    stale = 0
    for i in range(trials):
        p.put(f"raw/{i}", b"old")
        p.put(f"raw/{i}", f"new {i}".encode())
        if p.get(f"raw/{i}")[1] != f"new {i}".encode():
            stale += 1
    if stale:
        return False, f"{stale} of {trials} GETs right after an overwrite returned the old bytes"
    return True, f"each of {trials} GETs right after a PUT and an overwrite returned the new bytes"


# --- what readers, clones and cleanup use ------------------------------------------------------------------


def ranged_reads(p: _Probe) -> tuple[bool, str]:
    body = bytes(range(256)) * 16
    p.put("ranged", body)
    status, middle = p.get("ranged", "bytes=100-199")
    suffix_status, tail = p.get("ranged", "bytes=-64")
    problems = []
    if (status, middle) != (206, body[100:200]):
        problems.append(f"bytes=100-199 answered {status} with {len(middle)} bytes")
    if (suffix_status, tail) != (206, body[-64:]):
        problems.append(f"the suffix range bytes=-64 answered {suffix_status} with {len(tail)} bytes")
    if problems:
        return False, "; ".join(problems)
    return True, "a range and a suffix range each answered 206 with exactly the bytes asked for"


def copy_object(p: _Probe) -> tuple[bool, str]:
    body = uuid.uuid4().bytes * 64
    p.put("copy-source", body)
    p.copy("copy-source", "copy-target")
    copied = p.get("copy-target")[1]
    if copied != body:
        return False, f"the copy holds {len(copied)} bytes that differ from the source's {len(body)}"
    return True, "CopyObject made a byte-identical copy"


def delete_semantics(p: _Probe) -> tuple[bool, str]:
    p.put("deleted", b"x")
    p.delete("deleted")
    after = p.status_of_missing("deleted")[0]
    again = p.delete("deleted")
    listed = "deleted" in p.listed("deleted")
    if after == 404 and again in (200, 204) and not listed:
        return True, "a deleted key answers 404, is not listed, and deleting it again succeeds"
    return False, f"after DELETE: GET answered {after}, a second DELETE answered {again}, listed={listed}"


def error_codes(p: _Probe) -> tuple[bool, str]:
    get, head = p.status_of_missing("never-written")
    if (get, head) == (404, 404):
        return True, "GET and HEAD of a missing key answered 404"
    return False, f"GET of a missing key answered {get}, HEAD {head} (404 expected: a reader maps it to 'absent')"


def listing_pages(p: _Probe, keys: int = 7) -> tuple[bool, str]:
    for i in range(keys):
        p.put(f"paged/{i:02d}", b"x")
    names = p.listed("paged/", page_size=3)
    expected = [f"paged/{i:02d}" for i in range(keys)]
    if names == expected:
        return True, f"{keys} keys came back once each, in order, over pages of 3"
    return False, f"pages of 3 gave {names} instead of {expected}"


#: (name, probe, commit critical), in the order they run and print.
PROPERTIES: tuple[tuple[str, Callable[[_Probe], tuple[bool, str]], bool], ...] = (
    ("conditional-create", conditional_create, True),
    ("atomic-conditional-create", atomic_conditional_create, True),
    ("list-after-write", list_after_write, True),
    ("read-after-write", read_after_write, True),
    ("ranged-reads", ranged_reads, False),
    ("copy-object", copy_object, False),
    ("delete-semantics", delete_semantics, False),
    ("error-codes", error_codes, False),
    ("listing-pages", listing_pages, False),
)


def judge_store(endpoint: str, bucket: str, storage_options: Mapping[str, str], *, race_rounds: int = 100,
                only: tuple[str, ...] = ()) -> StoreVerdict:
    """Probe every property (or those in ``only``) against ``endpoint``/``bucket`` (S3, through boto3); keys are
    left under ``_lancespec_store_judge/{run}/``. A probe that raises is a failed property with the error
    observed."""
    probe = _Probe(s3_client(endpoint, storage_options), bucket, _run_prefix(), endpoint, storage_options,
                   race_rounds)
    return _judge(probe, StoreVerdict(endpoint, bucket), only)


def judge_store_uri(root: str, storage_options: Mapping[str, str], *, race_rounds: int = 100,
                    only: tuple[str, ...] = ()) -> StoreVerdict:
    """The same properties for the bucket or container ``root`` (``az://C``, ``gs://B``, ``s3://B``), asked
    through lancespec's storage layer with pylance's storage options (``_StorageProbe``)."""
    probe = _StorageProbe(root, storage_options, _run_prefix(), race_rounds)
    return _judge(probe, StoreVerdict(root, probe.bucket), only)


def _run_prefix() -> str:
    return f"_lancespec_store_judge/{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"


def _judge(probe: _Probe, verdict: StoreVerdict, only: tuple[str, ...]) -> StoreVerdict:
    for name, check, critical in PROPERTIES:
        if only and name not in only:
            continue
        try:
            passed, observed = check(probe)
        except Exception as exc:  # the endpoint answered something a probe could not take: that is the verdict
            passed, observed = False, f"the probe failed: {type(exc).__name__}: {str(exc)[:200]}"
        verdict.properties.append(PropertyVerdict(name, passed, observed, critical))
    return verdict
