"""Blob v2 routing, sidecar allocation, names and external-URI mapping: pure functions of
``reference.blob.routing`` (the Blob v2 post "Thresholds for Different Storage Semantics", "Blob file naming",
"External"; docs/lance-format.md §14.4-14.6)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.blob.routing import (
    DEDICATED_SIZE_THRESHOLD_KEY,
    DEFAULT_DEDICATED_SIZE_THRESHOLD,
    DEFAULT_INLINE_SIZE_THRESHOLD,
    DEFAULT_PACK_FILE_SIZE_THRESHOLD,
    INLINE_SIZE_THRESHOLD_KEY,
    PACK_FILE_SIZE_THRESHOLD_KEY,
    BlobKind,
    Placement,
    Thresholds,
    map_external_uri,
    plan_placements,
    route,
    sidecar_uri,
)
from reference.errors import ExternalBlobOutsideBases, InvalidBlobThreshold, ValidationError
from reference.layout import Base, reversed_blob_id

INLINE, PACKED, DEDICATED = BlobKind.INLINE, BlobKind.PACKED, BlobKind.DEDICATED


# --- thresholds ---------------------------------------------------------------------------------------


def test_defaults_are_the_documented_ones() -> None:
    t = Thresholds()
    assert (t.inline, t.dedicated, t.pack_file) == (65536, 4194304, 1073741824)
    assert (DEFAULT_INLINE_SIZE_THRESHOLD, DEFAULT_DEDICATED_SIZE_THRESHOLD, DEFAULT_PACK_FILE_SIZE_THRESHOLD) == (
        64 * 1024, 4 * 1024 * 1024, 1024**3)
    assert Thresholds.from_metadata(None) == t == Thresholds.from_metadata({"other": b"1"})


def test_thresholds_from_field_metadata() -> None:
    metadata = {INLINE_SIZE_THRESHOLD_KEY: b"0", DEDICATED_SIZE_THRESHOLD_KEY: b"10",
                PACK_FILE_SIZE_THRESHOLD_KEY: b"2500"}
    assert Thresholds.from_metadata(metadata) == Thresholds(0, 10, 2500)
    assert Thresholds.from_metadata({k.encode(): v for k, v in metadata.items()}) == Thresholds(0, 10, 2500)
    assert Thresholds.from_metadata({INLINE_SIZE_THRESHOLD_KEY: "7"}) == Thresholds(inline=7)


@pytest.mark.parametrize(("key", "value"), [
    (INLINE_SIZE_THRESHOLD_KEY, b"-1"), (INLINE_SIZE_THRESHOLD_KEY, b"1k"), (INLINE_SIZE_THRESHOLD_KEY, b""),
    (DEDICATED_SIZE_THRESHOLD_KEY, b"0"), (PACK_FILE_SIZE_THRESHOLD_KEY, b"0"),
    (PACK_FILE_SIZE_THRESHOLD_KEY, str(2**64).encode()), (DEDICATED_SIZE_THRESHOLD_KEY, "１２".encode()),
])
def test_invalid_thresholds_are_refused(key: str, value: bytes) -> None:
    with pytest.raises(InvalidBlobThreshold, match=key if value in (b"-1", b"1k", b"") else "threshold"):
        Thresholds.from_metadata({key: value}, "somewhere")
    assert issubclass(InvalidBlobThreshold, ValidationError)


# --- routing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("size", "kind"), [
    (0, INLINE), (1, INLINE), (65536, INLINE), (65537, PACKED), (4194304, PACKED), (4194305, DEDICATED),
])
def test_default_edges(size: int, kind: BlobKind) -> None:
    assert route(size, Thresholds()) is kind


def test_configured_edges_and_dedicated_first() -> None:
    t = Thresholds(inline=100, dedicated=1000)
    assert [route(n, t) for n in (100, 101, 1000, 1001)] == [INLINE, PACKED, PACKED, DEDICATED]
    upside_down = Thresholds(inline=1000, dedicated=10)
    assert [route(n, upside_down) for n in (10, 11, 999, 1000, 2000)] == [INLINE] + [DEDICATED] * 4
    only_empty = Thresholds(inline=0)
    assert [route(n, only_empty) for n in (0, 1)] == [INLINE, PACKED]
    with pytest.raises(ValueError, match="negative"):
        route(-1, Thresholds())


thresholds_st = st.builds(Thresholds, inline=st.integers(0, 5000), dedicated=st.integers(1, 5000),
                          pack_file=st.integers(1, 5000))


@given(size=st.integers(0, 10_000), t=thresholds_st)
def test_kind_is_a_function_of_size_and_thresholds(size: int, t: Thresholds) -> None:
    kind = route(size, t)
    assert kind is route(size, Thresholds(t.inline, t.dedicated, t.pack_file))  # same inputs, same kind
    assert kind is route(size, Thresholds(t.inline, t.dedicated, t.pack_file + 1))  # the pack size is no input
    expected = DEDICATED if size > t.dedicated else PACKED if size > t.inline else INLINE
    assert kind is expected


@given(a=st.integers(0, 10_000), b=st.integers(0, 10_000), t=thresholds_st)
def test_bigger_blobs_never_go_to_a_smaller_kind(a: int, b: int, t: Thresholds) -> None:
    small, large = sorted((a, b))
    assert route(small, t) <= route(large, t)


# --- sidecar allocation -------------------------------------------------------------------------------


def test_allocation_in_write_order() -> None:
    t = Thresholds(inline=50, dedicated=200)
    plan = plan_placements([100, 300, None, 100, 10, 300, 100], t)
    assert plan == [
        Placement(PACKED, 1, 0, 100), Placement(DEDICATED, 2, 0, 300), None, Placement(PACKED, 1, 100, 100),
        Placement(INLINE, 0, None, 10), Placement(DEDICATED, 3, 0, 300), Placement(PACKED, 1, 200, 100),
    ]


def test_pack_splitting() -> None:
    t = Thresholds(inline=10, dedicated=5000, pack_file=2500)
    plan = plan_placements([1000] * 5 + [3000, 100], t)
    assert [(p.blob_id, p.position) for p in plan if p] == [(1, 0), (1, 1000), (2, 0), (2, 1000), (3, 0), (4, 0),
                                                            (5, 0)]
    exact = plan_placements([1000] * 3, Thresholds(inline=10, dedicated=5000, pack_file=2000))
    assert [p.blob_id for p in exact if p] == [1, 1, 2]  # filling a pack exactly is allowed


def test_columns_with_equal_pack_thresholds_share_a_pack() -> None:
    a, b = Thresholds(inline=10, dedicated=100, pack_file=1000), Thresholds(inline=10, dedicated=100, pack_file=100)
    shared = plan_placements([60, 60], [a, a])
    assert [(p.blob_id, p.position) for p in shared if p] == [(1, 0), (1, 60)]
    separate = plan_placements([60, 60], [a, b])
    assert [(p.blob_id, p.position) for p in separate if p] == [(1, 0), (2, 0)]
    with pytest.raises(ValueError, match="thresholds for"):
        plan_placements([1, 2], [a])


@given(sizes=st.lists(st.one_of(st.none(), st.integers(0, 3000)), max_size=60), t=thresholds_st)
def test_allocation_invariants(sizes: list[int | None], t: Thresholds) -> None:
    plan = plan_placements(sizes, t)
    assert len(plan) == len(sizes)
    ids: list[int] = []
    packs: dict[int, list[Placement]] = {}
    for size, placement in zip(sizes, plan, strict=True):
        assert (placement is None) == (size is None)
        if placement is None or size is None:
            continue
        assert placement.kind is route(size, t) and placement.size == size
        if placement.kind is INLINE:
            assert placement.blob_id == 0 and placement.position is None
            continue
        if placement.blob_id not in ids:
            ids.append(placement.blob_id)
        if placement.kind is DEDICATED:
            assert placement.position == 0
            assert placement.blob_id not in packs
        else:
            packs.setdefault(placement.blob_id, []).append(placement)
    assert ids == list(range(1, len(ids) + 1))  # ids from 1, allocated in write order, none skipped
    for members in packs.values():
        positions = [p.position for p in members]
        assert positions == [sum(m.size for m in members[:i]) for i in range(len(members))]  # no padding
        total = sum(m.size for m in members)
        assert total <= t.pack_file or len(members) == 1


# --- names --------------------------------------------------------------------------------------------


def test_sidecar_names() -> None:
    assert reversed_blob_id(1) == "1" + "0" * 31
    assert reversed_blob_id(2) == "01" + "0" * 30
    assert reversed_blob_id(5) == "101" + "0" * 29
    assert reversed_blob_id(2**32 - 1) == "1" * 32
    stem = "0" * 24 + "a" * 26
    assert sidecar_uri(f"/d/data/{stem}.lance", 3) == f"/d/data/{stem}/11{'0' * 30}.blob"
    assert sidecar_uri(f"s3://b/base/{stem}.lance", 4) == f"s3://b/base/{stem}/001{'0' * 29}.blob"


@given(blob_id=st.integers(0, 2**32 - 1))
def test_reversed_name_round_trips(blob_id: int) -> None:
    name = reversed_blob_id(blob_id)
    assert len(name) == 32 and set(name) <= {"0", "1"} and int(name[::-1], 2) == blob_id


# --- external URIs ------------------------------------------------------------------------------------

BASES = [Base(1, "ext", "/data/ext", False), Base(2, "nested", "/data/ext/deep", False),
         Base(3, "s3", "s3://bucket/media", False), Base(4, "root", "/data/rootlike", True)]


@pytest.mark.parametrize(("uri", "stored"), [
    ("/data/ext/a.bin", (1, "a.bin")),
    ("file:///data/ext/sub/a.bin", (1, "sub/a.bin")),
    ("/data/ext/deep/x/y.bin", (2, "x/y.bin")),  # the most specific base wins
    ("s3://bucket/media/v/1.mp4", (3, "v/1.mp4")),
])
def test_uris_inside_a_base_are_stored_relative(uri: str, stored: tuple[int, str]) -> None:
    assert map_external_uri(uri, BASES) == stored


@pytest.mark.parametrize("uri", [
    "/elsewhere/a.bin", "/data/ext", "/data/ext/", "/data/extra/a.bin", "/data/rootlike/a.bin", "a.bin",
    "s3://bucket/mediax/a", "s3://other/media/a",
])
def test_uris_outside_every_base_are_refused(uri: str) -> None:
    with pytest.raises(ExternalBlobOutsideBases, match=f"External blob URI '{uri}' is outside registered") as info:
        map_external_uri(uri, BASES)
    assert "allow_external_blob_outside_bases" in str(info.value)
    assert issubclass(ExternalBlobOutsideBases, ValidationError)


def test_opting_in_stores_absolute_uris_as_given() -> None:
    assert map_external_uri("file:///elsewhere/a.bin", BASES, True) == (0, "file:///elsewhere/a.bin")
    assert map_external_uri("s3://other/k", [], True) == (0, "s3://other/k")
    assert map_external_uri("/data/ext/a.bin", BASES, True) == (1, "a.bin")  # a base still wins
    for bare in ("/elsewhere/a.bin", "a.bin"):
        with pytest.raises(ExternalBlobOutsideBases, match="not a valid absolute URI"):
            map_external_uri(bare, BASES, True)
