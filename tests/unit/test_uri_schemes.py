"""A URI's scheme is matched in any case (RFC 3986, section 3.1; Lance's URL parser lower-cases it): the pure
helpers of ``reference.store.uri`` agree on ``FILE:`` and ``file:`` (issue 32: ``FILE:///x`` was taken as
absolute by one and as a relative path by another)."""

from __future__ import annotations

import pytest

from reference.store.uri import is_absolute, is_file_uri, local_path, normalize, same_location, scheme_of


@pytest.mark.parametrize("uri", ["file:///data/x", "FILE:///data/x", "File:///data/x", "fIlE:///data/x"])
def test_every_spelling_of_the_file_scheme_is_one_location(uri: str) -> None:
    assert is_file_uri(uri) and scheme_of(uri) == "file" and is_absolute(uri)
    assert local_path(uri) == "/data/x"
    assert normalize(uri) == uri  # kept in the form given: Lance records base paths verbatim
    assert same_location(uri, "/data/x")


@pytest.mark.parametrize("uri", ["FILE:x", "file:x", "fiLe:outside"])
def test_a_file_uri_without_a_root_names_a_relative_path_and_is_not_absolute(uri: str) -> None:
    assert scheme_of(uri) == "file" and not is_absolute(uri)
    assert not local_path(uri).startswith("/")


@pytest.mark.parametrize("uri, scheme", [("S3://b/k", "s3"), ("Gs://b/k", "gs"), ("/x", "file"), ("x", "file")])
def test_other_schemes_are_lower_cased(uri: str, scheme: str) -> None:
    assert scheme_of(uri) == scheme
    assert not is_file_uri(uri) or scheme == "file"
