"""Parsing a ListObjectsV2 answer (``reference/store/s3_http.list_page``): what a store sends, decoded, and
what no store should send refused with a StorageError naming the listing, never a crash."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lancespec.reference.errors import StorageError
from lancespec.reference.store.s3_http import list_page

NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'


def _answer(contents: str, extra: str = "", ns: str = NS) -> bytes:
    return f"<?xml version='1.0'?><ListBucketResult {ns}><Name>b</Name>{contents}{extra}</ListBucketResult>".encode()


def test_url_encoded_keys_are_decoded_and_times_are_utc() -> None:
    body = _answer("<Contents><Key>d/a+b%25c%01</Key><LastModified>2026-11-24T04:40:00.000Z</LastModified>"
                   "<Size>7</Size></Contents>", "<EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>")
    page = list_page(body, "s3://b/d")
    assert page.objects == [("d/a b%c\x01", 7, datetime(2026, 11, 24, 4, 40, tzinfo=UTC), None)]
    assert page.next_token is None


def test_keys_are_kept_as_sent_without_url_encoding_and_without_a_namespace() -> None:
    body = _answer("<Contents><Key>d/a+b</Key><LastModified>2026-11-24T04:40:00</LastModified><Size>1</Size>"
                   "</Contents>", "<IsTruncated>true</IsTruncated><NextContinuationToken>t+1</NextContinuationToken>",
                   ns="")
    page = list_page(body, "s3://b/d")
    assert page.objects == [("d/a+b", 1, datetime(2026, 11, 24, 4, 40, tzinfo=UTC), None)] and page.next_token == "t+1"


@pytest.mark.parametrize(("body", "says"), [
    (b"<html>busy</html", "not XML"),
    (b"<Error><Code>AccessDenied</Code></Error>", "'Error', not ListBucketResult"),
    (_answer("", "<IsTruncated>true</IsTruncated>"), "without a continuation token"),
    (_answer("<Contents><Key>k</Key><LastModified>2026-11-24T04:40:00Z</LastModified></Contents>"), "without a size"),
    (_answer("<Contents><Key>k</Key><Size>1</Size><LastModified>soon</LastModified></Contents>"), "without a size"),
])
def test_what_is_no_listing_is_a_storage_error(body: bytes, says: str) -> None:
    with pytest.raises(StorageError, match=says) as caught:
        list_page(body, "s3://b/d")
    assert caught.value.where == "s3://b/d"


def test_the_etag_of_each_object_is_kept() -> None:
    """The ETag a listing gives (an incremental run's proof that an object is unchanged: conformance.since)."""
    body = _answer('<Contents><Key>d/a</Key><LastModified>2026-11-24T04:40:00Z</LastModified><ETag>"9b2c"</ETag>'
                   "<Size>3</Size></Contents>", "<IsTruncated>false</IsTruncated>")
    assert list_page(body, "s3://b/d").objects == [("d/a", 3, datetime(2026, 11, 24, 4, 40, tzinfo=UTC), '"9b2c"')]
