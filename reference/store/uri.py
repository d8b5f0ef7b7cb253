"""Pure helpers for the absolute URIs lancespec passes around.

Local locations are accepted as plain absolute paths or ``file://`` URIs and are kept in the form the
caller gave, because Lance records base paths verbatim; object-store locations are ``scheme://bucket/key``.
A scheme is matched in any case (RFC 3986, section 3.1, as Lance's URL parser does): ``FILE:///x`` is
``file:///x``, never a relative path named ``FILE:`` under the working directory (issue 32).
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlparse


def is_file_uri(uri: str) -> bool:
    """Whether ``uri`` is a ``file:`` URI, its scheme written in any case."""
    return uri[:5].lower() == "file:"


def scheme_of(uri: str) -> str:
    """``"file"`` for local paths and ``file://`` URIs, else the URI's scheme in lower case."""
    if uri.startswith("/") or is_file_uri(uri):
        return "file"
    parsed = urlparse(uri)
    if not parsed.scheme or len(parsed.scheme) == 1:  # a relative path, or a Windows drive letter
        return "file"
    return parsed.scheme.lower()


def is_absolute(uri: str) -> bool:
    """Whether ``uri`` names a location without needing a base: an absolute path or a URI with scheme."""
    if uri.startswith("/"):
        return True
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return parsed.path.startswith("/")
    return bool(parsed.scheme) and len(parsed.scheme) > 1 and bool(parsed.netloc)


def local_path(uri: str) -> str:
    """The filesystem path of a local URI (``/x`` or ``file:///x``, its scheme in any case)."""
    if is_file_uri(uri):
        return unquote(urlparse(uri).path)
    return uri


def normalize(uri: str) -> str:
    """Strip trailing slashes; make a relative local path absolute, and collapse ``.`` and ``..`` in a
    local path (the local store reads nothing through ``..``)."""
    if scheme_of(uri) == "file" and not is_file_uri(uri):
        uri = os.path.abspath(uri)
    stripped = uri.rstrip("/")
    return stripped or "/"


def join(base: str, *parts: str) -> str:
    """``base/part1/part2``, with exactly one slash between components."""
    out = base.rstrip("/")
    for part in parts:
        part = part.strip("/")
        if part:
            out = f"{out}/{part}"
    return out


def split_bucket(uri: str) -> tuple[str, str]:
    """``(bucket, key)`` of an object-store URI; the key has no leading slash."""
    parsed = urlparse(uri)
    return parsed.netloc, parsed.path.lstrip("/")


def relative_to(uri: str, base: str) -> str | None:
    """The part of ``uri`` below directory ``base``, or None when it is not below it."""
    base = base.rstrip("/") + "/"
    return uri[len(base):] if uri.startswith(base) else None


def same_location(a: str, b: str) -> bool:
    """Whether two URIs name the same location (``/x`` and ``file:///x`` are the same)."""
    if scheme_of(a) == scheme_of(b) == "file":
        return os.path.normpath(local_path(a)) == os.path.normpath(local_path(b))
    return normalize(a) == normalize(b)
