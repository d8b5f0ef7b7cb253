"""The table of storage option keys (``reference.store.option_keys``) and the errors that are "cannot read":
pure logic, no store."""

from __future__ import annotations

import errno

import pytest

from reference.errors import AccessDenied, CannotRead, InvalidOption, StorageError
from reference.store import Storage
from reference.store.local import _storage_error
from reference.store.option_keys import ACCEPTED_KEYS, check_storage_options, parse_storage_options


@pytest.mark.parametrize("key", ["aws_endpoint", "AWS_ENDPOINT", "endpoint", "aws_allow_http", "allow_http",
                                 "google_service_account", "azure_storage_account_name", "account_key",
                                 "google_timeout", "client_max_retries", "lancespec_io_parallelism", "timeout"])
def test_keys_pylance_or_lancespec_accept_pass(key: str) -> None:
    check_storage_options({key: "x"})


@pytest.mark.parametrize(("key", "near"), [("aws_endpont", "aws_endpoint"), ("alow_http", "allow_http"),
                                           ("aws_secret_acess_key", "aws_secret_access_key"),
                                           ("lancespec_io_paralelism", "lancespec_io_parallelism")])
def test_a_near_miss_is_refused_with_what_it_meant(key: str, near: str) -> None:
    with pytest.raises(InvalidOption) as refused:
        check_storage_options({"aws_region": "x", key: "y"})
    message = str(refused.value)
    assert f"unknown storage option {key!r} (did you mean {near}?)" in message and "\n" not in message
    assert "aws_access_key_id" in message and f"{len(ACCEPTED_KEYS)} in all" in message


def test_a_far_miss_names_no_near_key_and_a_storage_refuses_it_too() -> None:
    with pytest.raises(InvalidOption, match="unknown storage option 'colour'; accepted"):
        Storage({"colour": "blue"})


def test_parsing_names_the_flag() -> None:
    assert parse_storage_options(["aws_region=eu-west-1", "allow_http=true"]) == {"aws_region": "eu-west-1",
                                                                                  "allow_http": "true"}
    with pytest.raises(InvalidOption, match=r"^--lance-certify-option: unknown storage option 'x'"):
        parse_storage_options(["x=1"], "--lance-certify-option")
    with pytest.raises(InvalidOption, match="expects KEY=VALUE"):
        parse_storage_options(["novalue"])


def test_a_local_permission_error_is_cannot_read_and_other_errors_are_not() -> None:
    denied = _storage_error(PermissionError(errno.EACCES, "Permission denied"), "/d/x")
    assert isinstance(denied, AccessDenied) and isinstance(denied, CannotRead) and "allowed to read" in str(denied)
    other = _storage_error(OSError(errno.ENAMETOOLONG, "File name too long"), "/d/x")
    assert isinstance(other, StorageError) and not isinstance(other, CannotRead)
