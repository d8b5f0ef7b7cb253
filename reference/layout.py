"""Pure rules of where Lance files live and what they are called (no I/O).

Sources: the Lance Storage Layout Specification ("Dataset Root", "Base Path System", "File Naming Conventions"),
the Lance Table Format specification (Manifest.transaction_file, DataFile.base_id), the Lance blog post on
Blob v2 (sidecar naming) and pylance 14.0.2 behaviour recorded in
docs/lance-format.md (manifest naming V1/V2, detached versions, refs).
"""

from __future__ import annotations

import enum
import functools
import re
import uuid as uuidlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote

from .errors import InvalidRefName, UnresolvableFile
from .store.uri import is_absolute, join

# --- containment: names a dataset records may not leave where they are resolved ---------------------

_ENCODED_SEPARATORS = ("%2f", "%5c", "%2e", "%00")


def path_escape(path: str) -> str | None:
    """Why a path a dataset records (a file path, a ref name, a transaction file name) could leave the
    directory it is resolved in, or None when it cannot: a ``..`` or ``.`` segment, a backslash, a NUL,
    or a percent-encoded separator or dot (a ``file://`` URI decodes those). Such a path is a finding
    and is never opened or listed."""
    if "\x00" in path:
        return "holds a NUL byte"
    if "\\" in path:
        return "holds a backslash"
    lowered = path.lower()
    encoded = next((e for e in _ENCODED_SEPARATORS if e in lowered), None)
    if encoded is not None:
        return f"holds the percent-encoded {encoded.upper()}"
    if any(segment in (".", "..") for segment in path.split("/")):
        return "has a '.' or '..' segment"
    return None


def bare_name_escape(name: str) -> str | None:
    """``path_escape`` for a name that must be a single file name (no ``/``), such as a transaction file."""
    return "is a path, not a file name" if "/" in name else path_escape(name)


# --- directories of a dataset root (Storage Layout spec "Dataset Root") -------------------------------------

DATA_DIR = "data"
VERSIONS_DIR = "_versions"
TRANSACTIONS_DIR = "_transactions"
DELETIONS_DIR = "_deletions"
INDICES_DIR = "_indices"
REFS_DIR = "_refs"
TAGS_DIR = "_refs/tags"
BRANCHES_DIR = "_refs/branches"
TREE_DIR = "tree"
VERSION_HINT_NAME = "latest_version_hint.json"

STANDARD_DIRS = (DATA_DIR, VERSIONS_DIR, TRANSACTIONS_DIR, DELETIONS_DIR, INDICES_DIR, REFS_DIR, TREE_DIR)



def transaction_uri(root: str, name: str) -> str | None:
    """The URI of the transaction file ``name`` a manifest of ``root`` names (``transaction_file``, under
    ``_transactions/``), or None when it names none or the name could leave ``_transactions/``: such a file is
    never opened (LAYOUT-004 says why; docs/security.md)."""
    if not name or bare_name_escape(name) is not None:
        return None
    return join(root, TRANSACTIONS_DIR, name)


# --- manifest names ---------------------------------------------------------------------------------

U64_MAX = 2**64 - 1
DETACHED_BIT = 1 << 63
_V2_DIGITS = 20


class ManifestNaming(enum.Enum):
    """V1: ``{version}.manifest``. V2: ``{u64::MAX - version:020}.manifest`` (newest sorts first)."""

    V1 = "v1"
    V2 = "v2"


@dataclass(frozen=True)
class ManifestName:
    """A parsed ``_versions/`` entry."""

    version: int
    naming: ManifestNaming
    detached: bool = False


_MANIFEST_RE = re.compile(r"^(d?)(\d+)\.manifest$")


def manifest_name(version: int, naming: ManifestNaming = ManifestNaming.V2) -> str:
    """The file name of ``version`` under ``_versions/``; detached versions (top bit set) get ``d{n}``."""
    if version < 0 or version > U64_MAX:
        raise ValueError(f"version {version} is outside u64")
    if version & DETACHED_BIT:
        return f"d{version}.manifest"
    if naming is ManifestNaming.V2:
        return f"{U64_MAX - version:0{_V2_DIGITS}d}.manifest"
    return f"{version}.manifest"


@functools.lru_cache(maxsize=1 << 16)
def parse_manifest_name(name: str) -> ManifestName | None:
    """The version a ``_versions/`` file name denotes, or None for anything that is not a manifest. Kept for
    the last 65,536 names: the checks of one run list the same ``_versions/`` many times."""
    match = _MANIFEST_RE.match(name)
    if not match:
        return None
    detached, digits = match.groups()
    number = int(digits)
    if number > U64_MAX:  # no u64 version has this name
        return None
    if detached:
        return ManifestName(number, ManifestNaming.V2, detached=True)
    if len(digits) == _V2_DIGITS:
        return ManifestName(U64_MAX - number, ManifestNaming.V2)
    return ManifestName(number, ManifestNaming.V1)


# --- data files (Storage Layout spec "File Naming Conventions / Data Files") ----------------------------------

DATA_FILE_STEM_RE = re.compile(r"^[01]{24}[0-9a-f]{26}$")


def data_file_stem(raw: bytes) -> str:
    """The 50-character stem made from 16 UUID bytes: 3 bytes as 24 binary digits, 13 as 26 hex digits."""
    if len(raw) != 16:
        raise ValueError("a data-file stem is made from exactly 16 bytes")
    return "".join(f"{b:08b}" for b in raw[:3]) + raw[3:].hex()


def new_data_file_name() -> str:
    """A fresh ``{stem}.lance`` name from a random UUID."""
    return data_file_stem(uuidlib.uuid4().bytes) + ".lance"


def is_data_file_name(name: str) -> bool:
    """Whether ``name`` is ``{50-character stem}.lance``."""
    return name.endswith(".lance") and bool(DATA_FILE_STEM_RE.match(name[: -len(".lance")]))


# --- deletion files (Storage Layout spec "Deletion Files") ------------------------------------------------------

DELETION_ARROW = 0  # DeletionFile.DeletionFileType.ARROW_ARRAY
DELETION_BITMAP = 1  # DeletionFile.DeletionFileType.BITMAP
DELETION_EXTENSIONS = {DELETION_ARROW: "arrow", DELETION_BITMAP: "bin"}


def deletion_file_name(fragment_id: int, read_version: int, file_id: int, file_type: int) -> str:
    """``{fragment_id}-{read_version}-{id}.{arrow|bin}``."""
    return f"{fragment_id}-{read_version}-{file_id}.{DELETION_EXTENSIONS[file_type]}"


# --- transaction files (Storage Layout spec "Transaction Files") -----------------------------------------------

TRANSACTION_FILE_RE = re.compile(
    r"^(\d+)-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.txn$"
)


def transaction_file_name(read_version: int, txn_uuid: str) -> str:
    """``{read_version}-{uuid}.txn``."""
    return f"{read_version}-{txn_uuid}.txn"


# --- blob v2 sidecars (the Blob v2 post "File and Table Format Integration") -------------------------------


def reversed_blob_id(blob_id: int) -> str:
    """The 32 binary digits of ``blob_id``, least significant first."""
    if not 0 <= blob_id < 2**32:
        raise ValueError(f"blob id {blob_id} is outside u32")
    return format(blob_id, "032b")[::-1]


def sidecar_relative_path(data_file_path: str, blob_id: int) -> str:
    """``{data file without .lance}/{reversed blob id}.blob``, relative to the data file's directory."""
    stem = data_file_path[: -len(".lance")] if data_file_path.endswith(".lance") else data_file_path
    return f"{stem}/{reversed_blob_id(blob_id)}.blob"


# --- indices -------------------------------------------------------------------------------------------


def index_directory_name(raw_uuid: bytes) -> str:
    """An index's directory under ``_indices/``: its UUID in lowercase hyphenated form."""
    h = raw_uuid.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}" if len(h) == 32 else h


# --- refs ----------------------------------------------------------------------------------------------


def tag_ref_path(tag: str) -> str:
    """Root-relative path of a tag's JSON (always at the main root); the name is percent-encoded as
    pylance's object store writes it (non-ASCII characters as UTF-8 escapes)."""
    return f"{TAGS_DIR}/{quote(tag, safe='')}.json"


def ref_name_from_file(file_name: str) -> str:
    """The tag or branch name a ``_refs/tags/`` or ``_refs/branches/`` file name stands for."""
    return unquote(file_name[: -len(".json")])


def branch_ref_path(branch: str) -> str:
    """Root-relative path of a branch's JSON; ``/`` in the name is written ``%2F``."""
    return f"{BRANCHES_DIR}/{quote(branch, safe='')}.json"


def branch_root(main_root: str, branch: str) -> str:
    """Where a branch's dataset lives: ``{root}/tree/{name}`` (``/`` in the name nests directories).
    Raises InvalidRefName for a name that would leave ``tree/`` (``path_escape``, an empty segment or a
    leading ``/``): no such branch root is ever listed or read."""
    reason = path_escape(branch) or ("has an empty segment" if "" in branch.split("/") else None)
    if reason is not None:
        raise InvalidRefName(f"branch name {branch!r} {reason}: its root would not lie under {TREE_DIR}/",
                             join(main_root, BRANCHES_DIR))
    return join(main_root, TREE_DIR, branch)


# --- base-path resolution (Storage Layout spec "File Metadata Base References") --------------------------------


@dataclass(frozen=True)
class Base:
    """One ``BasePath`` entry of a manifest."""

    id: int
    name: str | None
    path: str
    is_dataset_root: bool


class FileKind(enum.Enum):
    """The file kinds that carry a ``base_id``, and the subdirectory a dataset root keeps each in."""

    DATA = DATA_DIR
    DELETION = DELETIONS_DIR
    INDEX = INDICES_DIR


def base_directory(root: str, bases: Mapping[int, Base], base_id: int | None, kind: FileKind,
                   where: str = "") -> str:
    """The directory a file of ``kind`` with ``base_id`` lives in.

    Absent ``base_id``: the dataset root plus the kind's standard subdirectory. Present: the base with
    that id; a dataset-root base adds the standard subdirectory, a non-root base is the directory
    itself, for every kind (the Storage Layout's two-step resolution). The Lance readers refuse a deletion
    file in a non-root base (spec/findings.md F-032); that is BASE-005's SHOULD, not a resolution error.
    A base whose path is not absolute (BASE-002) names no location: a file in it resolves to nothing
    (UnresolvableFile), never to a path under the filesystem root or the working directory.
    """
    if base_id is None:
        return join(root, kind.value)
    base = bases.get(base_id)
    if base is None:
        known = ", ".join(str(i) for i in sorted(bases)) or "none"
        raise UnresolvableFile(f"base_id {base_id} names no base path (defined ids: {known})", where or None)
    if not base.path or not is_absolute(base.path):
        raise UnresolvableFile(f"base {base_id} has path {base.path!r}, which is not an absolute path or URI; it is "
                               "not followed", where or None)
    if base.is_dataset_root:
        return join(base.path, kind.value)
    return base.path.rstrip("/")


def resolve(root: str, bases: Mapping[int, Base], base_id: int | None, kind: FileKind, path: str,
            where: str = "") -> str:
    """The full URI of a file recorded as ``path`` with ``base_id`` (Storage Layout spec two-step resolution).
    A path that could leave its directory (``path_escape``) resolves to nothing: UnresolvableFile."""
    reason = path_escape(path)
    if reason is not None:
        raise UnresolvableFile(f"file path {path!r} {reason}; it is not followed", where or None)
    return join(base_directory(root, bases, base_id, kind, where), path)


def bases_by_id(bases: Iterable[Base]) -> dict[int, Base]:
    """Index bases by id (the caller checks uniqueness; later duplicates win here)."""
    return {b.id: b for b in bases}
