"""One exception hierarchy for everything lancespec raises on purpose.

Every error names what was wrong and where (a URI, a version, a file), so that a command-line front end
can print it as one line and a test can match on the class rather than on the words.
"""

from __future__ import annotations


class LanceSpecError(Exception):
    """Root of every deliberate lancespec error. ``where`` is the URI or path the problem is about."""

    def __init__(self, message: str, where: str | None = None) -> None:
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


# --- storage -------------------------------------------------------------------------------------


class StorageError(LanceSpecError):
    """An object store refused or failed an operation."""


class ObjectNotFound(StorageError, FileNotFoundError):
    """The object does not exist."""


class ObjectAlreadyExists(StorageError, FileExistsError):
    """An atomic create found the name taken (the commit primitive's 'lost race' answer)."""


class UnsupportedURI(StorageError):
    """The URI's scheme has no store here."""


class NotARegularFile(StorageError):
    """The name holds something other than a regular file (a FIFO, a device, a socket, a symbolic link):
    lancespec reads none of those, so that a dataset cannot make it block, read forever or leave its tree."""


class LimitExceeded(LanceSpecError):
    """Something is larger than a limit lancespec keeps (``reference.limits``); the message names the
    limit and the option that raises it."""


# --- reading -------------------------------------------------------------------------------------


class FormatError(LanceSpecError):
    """A file does not follow the format: bad framing, bad footer, undecodable protobuf or JSON."""


class UnsupportedFeatureError(LanceSpecError):
    """The dataset requires a feature (a feature-flag bit) this implementation does not know."""


class DatasetNotFound(LanceSpecError):
    """No dataset (no manifest) at the URI."""


class VersionNotFound(LanceSpecError):
    """The requested version has no manifest."""


class RefNotFound(LanceSpecError):
    """The requested tag or branch does not exist."""


class UnresolvableFile(LanceSpecError):
    """A file's base_id names no base, or names a base its file kind may not live in."""


# --- writing -------------------------------------------------------------------------------------


class ValidationError(LanceSpecError):
    """A write was refused before anything was written: the input breaks a rule of the format."""


class InvalidBasePath(ValidationError):
    """A base path is not absolute, or duplicates another base's id, name or path."""


class UnknownTargetBase(ValidationError):
    """A write targets a base that is not registered."""


class InvalidRefName(ValidationError):
    """A tag or branch name breaks the naming rules."""


class RefAlreadyExists(ValidationError):
    """A tag or branch of that name already exists."""


class DatasetAlreadyExists(ValidationError):
    """A create, clone or branch target already holds a dataset."""


class SchemaMismatch(ValidationError):
    """Appended data does not have the dataset's schema."""


class RefInUse(ValidationError):
    """A branch cannot be deleted while tags or other branches depend on it."""


class CommitOutcomeUnknown(LanceSpecError):
    """The manifest write failed in a way that leaves open whether the version was committed (a lost
    connection, a timeout). Files the commit references must then be kept: they may be live."""


class CommitConflict(LanceSpecError):
    """A concurrent commit makes this one impossible. ``retryable``: rebuilding the transaction from the
    new latest version may succeed; otherwise the operation is incompatible for good."""

    def __init__(self, message: str, where: str | None = None, *, retryable: bool) -> None:
        super().__init__(message, where)
        self.retryable = retryable


# --- blobs ---------------------------------------------------------------------------------------


class ExternalBlobOutsideBases(ValidationError):
    """An external blob URI lies outside every registered non-root base and the caller did not opt in
    (or opted in with a URI that is not absolute)."""


class InvalidBlobThreshold(ValidationError):
    """A blob threshold in field metadata is not a valid number."""


class InvalidBlobValue(ValidationError):
    """A blob value breaks the rules of the blob type (both data and uri, half a range, ...)."""


class BlobThresholdMismatch(ValidationError):
    """Appended data declares blob thresholds that differ from those the dataset schema stores."""


class BlobReadError(LanceSpecError):
    """A blob cannot be read: unknown kind, missing base, sidecar or object too short."""


class BlobRangeError(LanceSpecError, ValueError):
    """A ranged read asks for bytes past the end of the blob."""
