"""The sizes lancespec trusts before it reads: what a hostile or broken dataset can make it allocate.

A dataset names sizes and counts (a manifest's fragments, a bitmap's cardinality, a file's length) that a
reader would otherwise take at their word. Each limit below is checked before the bytes are read or the
structure is expanded; going past one is a ``LimitExceeded`` error naming the file, the limit and the
command-line option that raises it (docs/security.md). A ``Storage`` carries its limits, so every reader
of one certify run sees the same ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import LimitExceeded

MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """``max_object_bytes``: the largest object read whole (manifests, deletion, transaction and ref
    files, counted as the bytes arrive, never inflated), and the largest read a data file's own metadata
    asks for (its FileDescriptor, column metadata, pages). ``max_fragments``: the most fragments one manifest may hold
    (refused before decoding; decoded, a fragment costs about 130 bytes of protobuf and 700 bytes of
    snapshot, so the default bounds one manifest at about 0.85 GB). ``max_manifest_entries``: the most
    elements one manifest's other repeated fields may hold together (schema fields, schema and table
    metadata, config, base paths, and the data files of all its fragments), counted before decoding.
    ``max_versions``: the most manifests one ``_versions/`` may list, counted from the listing before any is
    read (each listed version is one more object certify reads). ``max_refs``: the most tag or branch files
    one ``_refs/`` folder may list, counted before any is read.
    ``codec_memory_bytes`` and
    ``codec_seconds``: the address space and the time per data file of the child process that runs the
    Lance file codec (``reference.isolated``)."""

    max_object_bytes: int = 256 * MIB
    max_fragments: int = 1_000_000
    max_manifest_entries: int = 1_000_000
    max_versions: int = 1_000_000
    max_refs: int = 100_000
    codec_memory_bytes: int = 4096 * MIB
    codec_seconds: int = 120

    def check(self, name: str, value: int, where: str, what: str) -> None:
        """Raise LimitExceeded when ``value`` (of ``what`` at ``where``) is above the limit ``name``."""
        check_limit(name, getattr(self, name), value, where, what)


def check_limit(name: str, limit: int, value: int, where: str, what: str) -> None:
    """Raise LimitExceeded naming ``where``, ``what``, the limit and its option when ``value > limit``."""
    if value > limit:
        option = "--" + name.replace("_", "-")
        raise LimitExceeded(f"{what} is {value}, above the limit of {limit} (raise it with {option})", where)


DEFAULT_LIMITS = Limits()

#: The command-line options of each limit, with their help (lancespec.cli adds them to certify and inspect).
LIMIT_OPTIONS = {
    "max_object_bytes": "the largest object read whole (manifests, deletion, transaction and ref files) and the "
                        "largest read a data file's metadata asks for",
    "max_fragments": "the most fragments one manifest may hold (about 830 bytes of memory each)",
    "max_manifest_entries": "the most schema fields, base paths, metadata entries and data files one manifest "
                            "may hold together",
    "max_versions": "the most manifests one _versions/ folder may list (counted before any is read)",
    "max_refs": "the most tag or branch files one _refs/ folder may list (counted before any is read)",
    "codec_memory_bytes": "the address space of the child process that decodes data files",
    "codec_seconds": "the time the child process may take to decode one data file",
}
