"""lancespec's SigV4 signer (``reference/store/sigv4.py``) against botocore's, the second source of truth:
for the same request, credentials and moment, every header it adds is botocore's, signature included."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from lancespec.reference.store.sigv4 import Signer

REQUESTS = [
    ("http://127.0.0.1:9000/bucket/ds/data/0101.lance", {"Range": "bytes=-65536"}),
    ("http://127.0.0.1:9000/bucket/a%20b/c~d%2Be%C3%A9", {}),
    ("http://127.0.0.1:9000/bucket?list-type=2&prefix=ds%2Fdata%2F&delimiter=%2F&encoding-type=url"
     "&continuation-token=abc%2Bdef%3D%3D", {}),
    ("https://s3.eu-west-3.amazonaws.com/bucket/k", {"Range": "bytes=0-9"}),
]


@pytest.mark.parametrize("token", [None, "session/token+=="])
@pytest.mark.parametrize(("url", "headers"), REQUESTS)
def test_the_signature_is_botocores(url: str, headers: dict[str, str], token: str | None) -> None:
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    request = AWSRequest(method="GET", url=url, headers=dict(headers))
    S3SigV4Auth(credentials.get_frozen_credentials(), "s3", "eu-west-3").add_auth(request)
    theirs = dict(request.headers.items())
    moment = datetime.strptime(theirs["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    mine = Signer(credentials.access_key, credentials.secret_key, token, "eu-west-3").headers(url, headers, moment)
    assert mine == theirs


@pytest.mark.parametrize(("method", "headers", "body"), [
    ("PUT", {"If-None-Match": "*"}, b"manifest bytes"), ("PUT", {}, b""), ("HEAD", {}, b""), ("DELETE", {}, b"")])
def test_writes_are_signed_as_botocore_signs_them(method: str, headers: dict[str, str], body: bytes) -> None:
    """Over http botocore signs the payload's SHA-256, as the lean write path does."""
    import hashlib

    url = "http://127.0.0.1:9000/bucket/ds/_versions/18446744073709551614.manifest"
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", None)
    request = AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    S3SigV4Auth(credentials.get_frozen_credentials(), "s3", "us-east-1").add_auth(request)
    theirs = dict(request.headers.items())
    moment = datetime.strptime(theirs["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    mine = Signer(credentials.access_key, credentials.secret_key, None, "us-east-1").headers(
        url, headers, moment, method=method, payload_sha256=hashlib.sha256(body).hexdigest())
    assert mine == theirs


def test_a_new_day_derives_a_new_key() -> None:
    signer = Signer("AKID", "secret", None, "us-east-1")
    url = "http://127.0.0.1:9000/b/k"
    first = signer.headers(url, {}, datetime(2026, 11, 24, 23, 59, 59, tzinfo=UTC))
    second = signer.headers(url, {}, datetime(2026, 11, 25, 0, 0, 0, tzinfo=UTC))
    fresh = Signer("AKID", "secret", None, "us-east-1").headers(url, {}, datetime(2026, 11, 25, 0, 0, 0,
                                                                                  tzinfo=UTC))
    assert "/20261124/" in first["Authorization"] and second == fresh
