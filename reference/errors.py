"""The reference's exceptions, and the roots every other part of lancespec derives its own from.

Every error names what was wrong and where (a URI, a version, a file), so that a command-line front end
can print it as one line and a test can match on the class rather than on the words.

* ``LanceSpecError`` and its subclasses are about the input (a dataset, a file, an option, the machine):
  the command line prints one line and exits 2. ``CannotRead`` and its subclasses are about the reader's
  setup, never the dataset (configuration, access, a missing bucket, a store that does not answer, a limit,
  an unsupported scheme): certify stops on one with the outcome "cannot read", naming no requirement.
  Each carries ``kind``, its writer-contract error kind (``ERROR_KINDS``; docs/writer-contract.md), as
  data: an adapter reports ``exc.kind``, never the words.
* Each part of lancespec defines its own errors beside the code that raises them, as subclasses of
  ``LanceSpecError`` when they are about the input or the machine (the harnesses' ``ScenarioError``,
  ``ContractError``, ``SparkUnavailable``, ``S3ServerError``, the diagrams' ``GraphvizError``, ...), and as
  plain exceptions when they are faults of lancespec itself (``CertifyError``, ``CatalogueError``, ...):
  the command line exits 2 for the first and 3 for the others, so it needs no other class than these roots.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

#: The error kinds of the writer contract (docs/writer-contract.md, docs/scenario-format.md "refuse").
ERROR_KINDS = (
    "invalid_base_path",
    "duplicate_base",
    "unknown_target_base",
    "invalid_ref_name",
    "ref_exists",
    "ref_not_found",
    "dataset_exists",
    "empty_operation",
    "invalid_input",
)


class LanceSpecError(Exception):
    """Root of every deliberate lancespec error. ``where`` is the URI or path the problem is about;
    ``kind`` is the writer-contract error kind of a writer refusing for this reason (``invalid_input`` unless
    a subclass names a more precise one: ``class X(Base, kind="...")``)."""

    kind: ClassVar[str] = "invalid_input"

    def __init_subclass__(cls, kind: str | None = None, **rest: Any) -> None:
        super().__init_subclass__(**rest)
        if kind is not None:
            cls.kind = kind

    def __init__(self, message: str, where: str | None = None) -> None:
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


# --- options -------------------------------------------------------------------------------------


class InvalidOption(LanceSpecError, ValueError):
    """An option (a command-line flag, a storage option, a run setting) has a value lancespec does not
    accept; the message names the option. The command line prints it as argparse prints its own errors."""


# --- storage -------------------------------------------------------------------------------------


class StorageError(LanceSpecError):
    """An object store refused or failed an operation."""


class ObjectNotFound(StorageError, FileNotFoundError):
    """The object does not exist."""


class ObjectAlreadyExists(StorageError, FileExistsError):
    """An atomic create found the name taken (the commit primitive's 'lost race' answer)."""


class CannotRead(LanceSpecError):
    """Lancespec cannot read the input because of the reader's setup, whatever the dataset holds: a storage
    option (``StoreConfigError``), access refused (``AccessDenied``), a bucket that does not exist
    (``BucketNotFound``), a store that does not answer (``StoreUnavailable``), a limit reached
    (``LimitExceeded``), an unsupported scheme or a malformed URI (``UnsupportedURI``), no dataset at the URI
    given (``DatasetNotFound``). Never a finding: certify stops with the outcome "cannot read" (exit 2, one line
    naming the cause and what to do, no requirement id; docs/exit-codes.md). A file of the dataset that is
    missing or malformed is no setup problem: ``ObjectNotFound`` and ``FormatError`` stay findings.
    ``report``: the report certify attaches (a ``conformance.findings.Report`` saying ``cannot_read``)."""

    report: Any = None


class UnsupportedURI(StorageError, CannotRead):
    """The URI's scheme has no store here, or the URI is malformed (``s3:/x`` names no bucket)."""


class StoreConfigError(StorageError, CannotRead):
    """The storage options cannot be used as given (a plain-HTTP endpoint without ``allow_http``, half a
    key pair, a timeout that is no duration); the message names the option to fix."""


class AccessDenied(StorageError, CannotRead):
    """The store refused the request (HTTP 401/403): wrong or missing credentials, or a policy."""


class BucketNotFound(ObjectNotFound, CannotRead):
    """The bucket does not exist at the endpoint. Also an ``ObjectNotFound``, so a writer probing a name
    sees it absent; a reader cannot tell a bucket the dataset wrongly names from an endpoint that serves
    other buckets, so certify stops ("cannot read") rather than declare the dataset in breach."""


class StoreUnavailable(StorageError, CannotRead):
    """The store did not answer, or kept failing (connection refused, timeouts, HTTP 5xx) through every
    attempt."""


class NotARegularFile(StorageError):
    """The name holds something other than a regular file (a FIFO, a device, a socket, a symbolic link):
    lancespec reads none of those, so that a dataset cannot make it block, read forever or leave its tree."""


class ScratchSpaceError(CannotRead):
    """lancespec's own temporary space cannot hold what it copies there to decode (a full disk, a file-size
    limit): the machine's setup, not the dataset's fault."""


class LimitExceeded(CannotRead):
    """Something is larger than a limit lancespec keeps (``reference.limits``); the message names the
    limit and the option that raises it."""


# --- reading -------------------------------------------------------------------------------------


class FormatError(LanceSpecError):
    """A file does not follow the format: bad framing, bad footer, undecodable protobuf or JSON."""


class UnsupportedFeatureError(LanceSpecError):
    """The dataset requires a feature (a feature-flag bit) this implementation does not know."""


class DatasetNotFound(CannotRead, kind="ref_not_found"):
    """No dataset (no manifest) at the URI."""


class VersionNotFound(LanceSpecError, kind="ref_not_found"):
    """The requested version has no manifest."""


class RefNotFound(LanceSpecError, kind="ref_not_found"):
    """The requested tag or branch does not exist."""


class UnresolvableFile(LanceSpecError):
    """A file's base_id names no base, or names a base its file kind may not live in."""


# --- writing -------------------------------------------------------------------------------------


class ValidationError(LanceSpecError):
    """A write was refused before anything was written: the input breaks a rule of the format."""


class EmptyOperation(ValidationError, kind="empty_operation"):
    """An operation that would change nothing: no base to add, no base to relocate."""


class InvalidBasePath(ValidationError, kind="invalid_base_path"):
    """A base path is not absolute (or not a path at all)."""


class DuplicateBase(InvalidBasePath, kind="duplicate_base"):
    """A base repeats another base's id, name or path."""


class BaseNotCopied(InvalidBasePath):
    """A relocation names a location that does not hold the base's files (with their recorded sizes):
    the new version would reference files that are not there."""


class UnknownTargetBase(ValidationError, kind="unknown_target_base"):
    """A write targets a base that is not registered."""


class InvalidRefName(ValidationError, kind="invalid_ref_name"):
    """A tag or branch name breaks the naming rules."""


class RefAlreadyExists(ValidationError, kind="ref_exists"):
    """A tag or branch of that name already exists."""


class DatasetAlreadyExists(ValidationError, kind="dataset_exists"):
    """A create, clone or branch target already holds a dataset (the source itself included)."""


class SchemaMismatch(ValidationError):
    """Appended data does not have the dataset's schema."""


class RefInUse(ValidationError):
    """A branch cannot be deleted while tags or other branches depend on it."""


class CleanupError(LanceSpecError):
    """A cleanup was refused: a bad policy, a tagged version selected for cleanup, or a stale plan.
    ``tags``: the tags (name -> version) that stopped it."""

    def __init__(self, message: str, where: str | None = None, tags: Mapping[str, int] | None = None) -> None:
        super().__init__(message, where)
        self.tags: dict[str, int] = dict(tags or {})


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
