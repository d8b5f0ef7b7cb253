"""Where a blob goes: its storage kind, its sidecar and its position there, or the base an external URI is
stored against (the Blob v2 post "Thresholds for Different Storage Semantics", "Blob file naming",
"External"; docs/lance-format.md §14.4-14.6). Pure functions: nothing here reads or writes a store.

``route`` sends bytes by size to one of three *managed* kinds, dedicated checked first::

    size > dedicated threshold  -> DEDICATED  one sidecar .blob per value
    size > inline threshold     -> PACKED     appended to the current pack sidecar
    otherwise                   -> INLINE     inside the data file

(defaults 64 KiB / 4 MiB, pack files up to 1 GiB; field-metadata keys ``lance-encoding:blob-*``). URIs are
EXTERNAL: stored relative to the registered non-root base that contains them (``blob_id`` = base id),
refused outside every base unless the caller opts in, and then stored as given with ``blob_id`` 0.
Sidecar ids count from 1 per data file (``plan_placements``); sidecar ``k`` of ``{dir}/{stem}.lance`` is
``{dir}/{stem}/{k as 32 binary digits, LSB first}.blob``.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ExternalBlobOutsideBases, InvalidBlobThreshold, InvalidBlobValue
from ..layout import Base, sidecar_relative_path
from ..proto import file_pb2
from ..store.uri import is_absolute, local_path, normalize, scheme_of
from .columns import metadata_text

INLINE_SIZE_THRESHOLD_KEY = "lance-encoding:blob-inline-size-threshold"
DEDICATED_SIZE_THRESHOLD_KEY = "lance-encoding:blob-dedicated-size-threshold"
PACK_FILE_SIZE_THRESHOLD_KEY = "lance-encoding:blob-pack-file-size-threshold"
THRESHOLD_KEYS = {"inline": INLINE_SIZE_THRESHOLD_KEY, "dedicated": DEDICATED_SIZE_THRESHOLD_KEY,
                  "pack_file": PACK_FILE_SIZE_THRESHOLD_KEY}
"""The field-metadata key of each ``Thresholds`` attribute (docs/lance-format.md §14.4)."""

DEFAULT_INLINE_SIZE_THRESHOLD = 64 * 1024
DEFAULT_DEDICATED_SIZE_THRESHOLD = 4 * 1024 * 1024
DEFAULT_PACK_FILE_SIZE_THRESHOLD = 1024 * 1024 * 1024

_U64_MAX = 2**64 - 1


class BlobKind(enum.IntEnum):
    """Storage semantics of one blob (the Blob v2 post "Unified Blob Type Representation")."""

    INLINE = 0
    PACKED = 1
    DEDICATED = 2
    EXTERNAL = 3
    MANAGED = 4  # pylance opt-in (feature flag 16384); never written here


MANAGED_KINDS = frozenset({BlobKind.INLINE, BlobKind.PACKED, BlobKind.DEDICATED})


@dataclass(frozen=True)
class Thresholds:
    """The routing thresholds of one blob column, in bytes."""

    inline: int = DEFAULT_INLINE_SIZE_THRESHOLD
    dedicated: int = DEFAULT_DEDICATED_SIZE_THRESHOLD
    pack_file: int = DEFAULT_PACK_FILE_SIZE_THRESHOLD

    def __post_init__(self) -> None:
        for name, value, minimum in (("inline", self.inline, 0), ("dedicated", self.dedicated, 1),
                                     ("pack_file", self.pack_file, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= _U64_MAX:
                raise InvalidBlobThreshold(f"blob {name} threshold must be an integer >= {minimum}, got {value!r}")

    @classmethod
    def from_metadata(cls, metadata: Mapping[Any, Any] | None, where: str | None = None) -> Thresholds:
        """Thresholds from field metadata (decimal ASCII values); absent keys take the defaults."""
        values = {}
        for name, key in THRESHOLD_KEYS.items():
            raw = metadata_text(metadata, key)
            if raw is None:
                continue
            if not raw.isascii() or not raw.isdigit():
                raise InvalidBlobThreshold(f"field metadata {key}={raw!r} is not a decimal integer", where)
            values[name] = int(raw)
        try:
            return cls(**values)
        except InvalidBlobThreshold as exc:
            raise InvalidBlobThreshold(exc.message, where) from None


def thresholds_of(field: file_pb2.Field, where: str | None = None) -> Thresholds:
    """The routing thresholds a manifest blob field declares (defaults where it declares none)."""
    return Thresholds.from_metadata(field.metadata, where)


def route(size: int, thresholds: Thresholds) -> BlobKind:
    """The kind a managed blob of ``size`` bytes gets: dedicated above the dedicated threshold, else
    packed above the inline threshold, else inline (docs/lance-format.md §14.4: dedicated is checked first,
    so with dedicated < inline every size above the dedicated threshold is dedicated)."""
    if size < 0:
        raise ValueError(f"blob size {size} is negative")
    if size > thresholds.dedicated:
        return BlobKind.DEDICATED
    if size > thresholds.inline:
        return BlobKind.PACKED
    return BlobKind.INLINE


@dataclass(frozen=True)
class Placement:
    """Where one managed blob goes: its kind, sidecar id (0 for inline) and offset in that sidecar
    (None for inline: the file writer decides the offset inside the data file)."""

    kind: BlobKind
    blob_id: int
    position: int | None
    size: int


def plan_placements(sizes: Sequence[int | None],
                    thresholds: Thresholds | Sequence[Thresholds]) -> list[Placement | None]:
    """Route the managed blobs of one data file, in write order (``None`` = a row that is not managed
    bytes), and allocate sidecar ids from 1: each dedicated blob takes the next id; a packed blob goes
    to the open pack of its pack threshold, and a new pack (the next id) is opened first when there is
    none or the blob would take it past the threshold. A pack holds one blob larger than the threshold
    on its own. ``thresholds`` is one value for all items or one per item (several blob columns of one
    data file share the id sequence, and columns with equal pack thresholds share a pack: pylance
    14.0.2's allocation, docs/lance-format.md §14.4-14.5)."""
    per_item = [thresholds] * len(sizes) if isinstance(thresholds, Thresholds) else list(thresholds)
    if len(per_item) != len(sizes):
        raise ValueError(f"{len(per_item)} thresholds for {len(sizes)} sizes")
    out: list[Placement | None] = []
    next_id = 1
    packs: dict[int, tuple[int, int]] = {}  # pack threshold -> (open pack id, bytes in it)
    for size, limits in zip(sizes, per_item, strict=True):
        if size is None:
            out.append(None)
            continue
        kind = route(size, limits)
        if kind is BlobKind.INLINE:
            out.append(Placement(kind, 0, None, size))
        elif kind is BlobKind.DEDICATED:
            out.append(Placement(kind, next_id, 0, size))
            next_id += 1
        else:
            pack = packs.get(limits.pack_file)
            if pack is None or pack[1] + size > limits.pack_file:
                pack = (next_id, 0)
                next_id += 1
            out.append(Placement(kind, pack[0], pack[1], size))
            packs[limits.pack_file] = (pack[0], pack[1] + size)
    return out


def sidecar_uri(data_file_uri: str, blob_id: int) -> str:
    """The sidecar ``blob_id`` of the data file at ``data_file_uri``: next to it, in a directory named
    after it (the Blob v2 post "Blob file naming"; docs/lance-format.md §14.5)."""
    directory, _, name = data_file_uri.rpartition("/")
    return f"{directory}/{sidecar_relative_path(name, blob_id)}"


def _below(uri: str, base_path: str) -> str | None:
    """The part of ``uri`` strictly below directory ``base_path`` (local paths and ``file://`` URIs
    compare as paths), or None."""
    if scheme_of(uri) == "file" and scheme_of(base_path) == "file":
        if not is_absolute(uri):
            return None
        child, parent = os.path.normpath(local_path(uri)), os.path.normpath(local_path(base_path))
    else:
        child, parent = normalize(uri), normalize(base_path)
    prefix = parent.rstrip("/") + "/"
    if not child.startswith(prefix) or len(child) == len(prefix):
        return None
    return child[len(prefix):]


def _has_scheme(uri: str) -> bool:
    head, sep, _ = uri.partition("://")
    return bool(sep) and len(head) > 1 and head.replace("+", "").replace("-", "").replace(".", "").isalnum()


def map_external_uri(uri: str, bases: Sequence[Base], allow_outside_bases: bool = False) -> tuple[int, str]:
    """``(blob_id, blob_uri)`` to store for an external reference (the Blob v2 post "External"; docs/lance-format.md
    §14.6): the URI relative to the registered *non-root* base containing it (the most specific one when
    bases nest) with that base's id; outside every such base it is refused, unless
    ``allow_outside_bases``, and then stored as given with id 0, which requires an absolute URI with a
    scheme (``file:///x``, ``s3://b/k``): pylance 14.0.2 refuses a bare path there too."""
    if not uri:
        raise InvalidBlobValue("Blob uri cannot be empty")
    best: tuple[int, str, int] | None = None
    for base in bases:
        if base.is_dataset_root:
            continue
        relative = _below(uri, base.path)
        if relative is not None and (best is None or len(base.path) > best[2]):
            best = (base.id, relative, len(base.path))
    if best is not None:
        return best[0], best[1]
    if not allow_outside_bases:
        raise ExternalBlobOutsideBases(
            f"External blob URI {uri!r} is outside registered external bases (dataset root is not allowed). "
            "Set allow_external_blob_outside_bases=True to store it as an absolute external URI.")
    if not _has_scheme(uri):
        raise ExternalBlobOutsideBases(
            f"External URI {uri!r} is outside registered external bases and is not a valid absolute URI "
            "(give a URI with a scheme, e.g. file:///path or s3://bucket/key)")
    return 0, uri
