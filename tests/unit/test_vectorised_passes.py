"""The vectorised passes of a large version's certification against a plain loop over the same input (the second
source of truth): the evidence's identities (``since.identities``, ``Present.identities``) against ``identity``
one object at a time, a root's top-level entries (``layout.top_entries``) against the walk of every URI, and the
shared states of a version's data files (``files.plain_states``) against the state of each file."""

from __future__ import annotations

import gc
import random
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import cast
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from conformance.checks import files
from conformance.checks.layout import top_entries
from conformance.fetch import RunStorage
from conformance.since import Present, identities, identity
from reference.plain_fragments import PlainFragments
from reference.store import ObjectInfo, Storage

# --- identities -------------------------------------------------------------------------------------------


def _moment(rng: random.Random, tz: tzinfo | None) -> datetime:
    """A time in UTC (seconds anywhere in years 1-9999, microseconds often 0), then given in ``tz`` (None: naive)."""
    seconds = rng.choice([0, -1, 1_700_000_000, rng.randrange(-62_135_596_800 + 86_400, 253_402_300_799 - 86_400)])
    at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    at = at.replace(microsecond=rng.choice([0, 0, 1, 999_999, rng.randrange(1_000_000)]))
    return at.replace(tzinfo=None) if tz is None else at.astimezone(tz)


def _infos(rng: random.Random, n: int, odd: float) -> list[ObjectInfo | None]:
    out: list[ObjectInfo | None] = []
    for k in range(n):
        if rng.random() < 0.1:
            out.append(None)
            continue
        tz: tzinfo | None = UTC
        etag = None
        if rng.random() < odd:
            tz = rng.choice([timezone(timedelta(hours=2)), ZoneInfo("UTC"), None])
        if rng.random() < odd:
            etag = f'"{rng.getrandbits(64):x}"'
        out.append(ObjectInfo(f"/r/data/{k}.lance", rng.randrange(0, 2**40), _moment(rng, tz), etag))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_identities_equal_identity_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    infos = _infos(rng, rng.randrange(0, 300), odd=0.0 if seed % 2 else 0.02)
    assert identities(infos) == [identity(info) for info in infos]


def test_identities_of_the_extreme_times() -> None:
    infos: list[ObjectInfo | None] = [
        ObjectInfo("/a", 1, datetime(1, 1, 1, tzinfo=UTC)), ObjectInfo("/b", 2, datetime(9999, 12, 31, 23, 59, 59,
                                                                                            999_999, tzinfo=UTC)),
        ObjectInfo("/c", 3, datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)),
        ObjectInfo("/d", 4, datetime(999, 5, 6, 1, 2, 3, 4, tzinfo=UTC)), None]
    assert identities(infos) == ["1 0001-01-01T00:00:00+00:00", "2 9999-12-31T23:59:59.999999+00:00",
                                 "3 1969-12-31T23:59:59.999999+00:00", "4 0999-05-06T01:02:03.000004+00:00", None]


def test_present_identities_equal_one_by_one(tmp_path: Path) -> None:
    """Known answers first, then the listing below the root, a HEAD elsewhere, in any mix."""
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    (root / "data").mkdir(parents=True)
    elsewhere.mkdir()
    for k in range(40):
        (root / "data" / f"{k}.lance").write_bytes(b"x" * k)
    (elsewhere / "blob").write_bytes(b"yy")
    uris = ([str(root / "data" / f"{k}.lance") for k in range(45)] + [str(elsewhere / "blob"),
                                                                       str(elsewhere / "gone")])
    rng = random.Random(7)
    for _ in range(6):
        picked = rng.sample(uris, rng.randrange(len(uris) + 1))
        known = {uri: "known" for uri in rng.sample(uris, rng.randrange(4))}
        for make in (Storage, RunStorage):
            vectorised, single = Present(make(), str(root)), Present(make(), str(root))
            vectorised.knows(known)
            single.knows(known)
            assert vectorised.identities(picked) == [single.identity(uri) for uri in picked]


# --- a root's top-level entries ---------------------------------------------------------------------------


def _top_entries_one_by_one(uris: list[str], prefix: str) -> tuple[list[str], dict[str, int]]:
    files_found: list[str] = []
    dirs: dict[str, int] = {}
    for uri in uris:
        if not uri.startswith(prefix) or uri == prefix:
            continue
        top, _, rest = uri[len(prefix):].partition("/")
        if rest:
            dirs[top] = dirs.get(top, 0) + 1
        else:
            files_found.append(top)
    return files_found, dirs


@pytest.mark.parametrize("seed", range(30))
def test_top_entries_equal_the_walk(seed: int) -> None:
    rng = random.Random(seed)
    prefix = "/r/ds/"
    pieces = ["data", "data-x", "data.y", "_versions", "", "a", "a/b", "é", ".tmp1", "x0", "data0"]
    uris = [prefix[:-1], prefix, "/r/ds-other/data/f", "/r/d", "/r/ds0/q", "/s"]
    for _ in range(rng.randrange(0, 200)):
        depth = rng.choice([1, 1, 2, 3])
        uris.append(prefix + "/".join(rng.choice(pieces) for _ in range(depth)))
    uris = rng.sample(uris, rng.randrange(len(uris) + 1))
    for listing in (sorted(uris), uris):
        found, dirs = top_entries(listing, prefix)
        expected_files, expected_dirs = _top_entries_one_by_one(listing, prefix)
        assert (found, dict(dirs)) == (expected_files, expected_dirs)


# --- the shared states of a version's data files -------------------------------------------------------------


class _Uris:
    """What ``plain_states`` reads of a version's plain fragments: their files' URIs."""

    def __init__(self, uris: list[str]) -> None:
        self.uris = uris


def _plain(uris: list[str]) -> PlainFragments:
    return cast(PlainFragments, _Uris(uris))


def test_plain_states_column_equals_each_file_state() -> None:
    rng = random.Random(3)
    storage = Storage()
    shared = [files._DataFileState(rng.randrange(100, 900), rng.choice([(2, 0), (2, 1), (0, 3)]), None,
                                   rng.choice([1, 5, None, "cannot"])) for _ in range(7)]
    uris = [f"/r/data/{k}.lance" for k in range(500)]
    states = files._states(storage)
    for uri in uris:  # shared tuples, and equal tuples that are other objects
        states[uri] = rng.choice(shared) if rng.random() < 0.8 else files._DataFileState(*rng.choice(shared))
    plain = _plain(uris)
    table = files.plain_states(plain, storage)
    assert len(table.distinct) < len(uris)
    for value, dtype in [(lambda s: s.size or 0, np.uint64), (lambda s: isinstance(s.rows, str), np.bool_),
                         (lambda s: s.version[1] if s.version is not None else 0, np.uint64)]:
        expected = np.fromiter((value(states[uri]) for uri in uris), dtype, len(uris))  # type: ignore[no-untyped-call]
        assert np.array_equal(table.column(value, dtype), expected)  # type: ignore[arg-type]
    assert all(table.distinct[code] is states[uri] for code, uri in zip(table.codes.tolist(), uris, strict=True))
    assert files.plain_states(plain, storage) is table  # found once for the checks of one version
    other = _plain(list(uris))
    assert files.plain_states(other, storage) is not table  # other fragments: found again
    del plain, other
    gc.collect()
    again = _plain(uris[:3])
    assert files.plain_states(again, storage).codes.size == 3
