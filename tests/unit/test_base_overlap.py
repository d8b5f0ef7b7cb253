"""BASE-007's pairs found by sorting agree with the pairwise ``relation`` (the definition), and stay fast."""

from __future__ import annotations

import random
import time

from conformance.checks.bases import MAX_OVERLAPS, _overlapping_pairs, relation


def test_sorted_pairs_are_the_pairwise_relations() -> None:
    rng = random.Random(7)
    parts = ["a", "b", "ab", "a b", "a-b", "c"]
    for _ in range(200):
        paths = []
        for _ in range(rng.randint(0, 12)):
            depth = rng.randint(0, 3)
            tail = "/".join(rng.choice(parts) for _ in range(depth))
            paths.append(rng.choice(["/", "s3://bkt/", "file:///", "s3://bkt2/"]) + tail + rng.choice(["", "/"]))
        expected = sorted((i, j) for i in range(len(paths)) for j in range(i + 1, len(paths))
                          if relation(paths[i], paths[j]) is not None)
        assert _overlapping_pairs(paths) == expected, paths


def test_a_hundred_thousand_distinct_bases_take_well_under_a_second_each_thousand() -> None:
    paths = [f"s3://bucket/base-{i}" for i in range(100_000)]
    started = time.monotonic()
    assert _overlapping_pairs(paths) == []
    assert time.monotonic() - started < 10


def test_the_listing_stops_at_its_limit() -> None:
    assert len(_overlapping_pairs(["/same"] * 1000)) == MAX_OVERLAPS
