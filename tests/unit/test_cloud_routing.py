"""Which cloud store serves a URI, and what each refuses before it sends anything (``reference.store.cloud``,
``cloud_options``): one store per family, the rule of configuration per family, and a store that does not
answer named by its own endpoint option (a closed port on loopback)."""

from __future__ import annotations

import socket

import pytest

from reference.errors import StoreConfigError, StoreUnavailable, UnsupportedURI
from reference.store import open_store
from reference.store.cloud_options import CloudOptions


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


AZURE = {"account_name": "devstoreaccount1", "account_key": "a2V5", "allow_http": "true",
         "lancespec_max_attempts": "1"}
GCS = {"google_skip_signature": "true", "allow_http": "true", "lancespec_max_attempts": "1"}


def test_one_store_per_family() -> None:
    storage = open_store({"aws_region": "eu-west-1", **AZURE})
    assert storage.backend("s3://b/k") is storage.backend("s3a://b/k")
    assert storage.backend("az://c/k") is storage.backend("abfss://c@acct.dfs.core.windows.net/k")
    assert storage.backend("s3://b/k") is not storage.backend("az://c/k")
    with pytest.raises(UnsupportedURI, match=r"no store for scheme 'hdfs'.*gs://.*memory://"):
        storage.backend("hdfs://nn/k")


@pytest.mark.parametrize("uri, options, named", [
    ("gs://bucket/k", {}, "no GCS store is configured"),
    ("gs://bucket/k", {"aws_region": "eu-west-1"}, "no GCS store is configured"),  # S3's key configures S3 only
    ("az://container/k", {"google_skip_signature": "true"}, "no Azure store is configured"),
    ("s3://bucket/k", {"account_name": "a", "allow_http": "true"}, "no S3 store is configured"),
    ("s3://bucket/k", {"lancespec_io_parallelism": "8", "timeout": "5s"}, "no S3 store is configured"),
])
def test_a_store_nobody_configured_sends_nothing(uri: str, options: dict[str, str], named: str) -> None:
    with pytest.raises(StoreConfigError, match=named) as caught:
        open_store(options).get(uri)
    assert caught.value.where == uri


def test_a_family_is_configured_by_its_own_keys_and_prefixed_client_keys() -> None:
    assert CloudOptions({"azure_allow_http": "true", "azure_endpoint": "http://x"}).configured("az")
    assert CloudOptions({"google_proxy_url": "http://proxy"}).configured("gs")
    assert not CloudOptions({"allow_http": "true", "account_name": "a"}).configured("gs")
    assert CloudOptions({}).configured("memory")


@pytest.mark.parametrize("uri, options, endpoint_key", [
    ("az://container/k", AZURE, "azure_endpoint"),
    ("gs://bucket/k", GCS, "google_base_url"),
])
def test_an_unreachable_store_is_named_by_its_endpoint_option(uri: str, options: dict[str, str],
                                                              endpoint_key: str) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}" + ("/devstoreaccount1" if endpoint_key == "azure_endpoint" else "")
    with pytest.raises(StoreUnavailable, match=f"storage option {endpoint_key}") as caught:
        open_store({**options, endpoint_key: endpoint, "connect_timeout": "2s"}).get(uri)
    assert caught.value.where == uri
