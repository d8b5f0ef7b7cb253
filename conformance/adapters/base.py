"""What every implementation (a writer, and the reader beside it) shares: where operations land (``Site``),
how a session applies them and refuses with an error kind, how a reader reads a target, and capability
files at the granularity of features.

An implementation is one module of this package plus one capability file beside it (``{module}.toml``):
it applies the operations of ``conformance.operations`` through ``Session.apply`` and maps its
own errors to the refusal kinds of the scenario format (``ERROR_KINDS``). ``registry`` finds it by name.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib
import sys
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from conformance import operations as lang
from conformance.scenarios.format import STORES
from reference.errors import ERROR_KINDS, LanceSpecError
from reference.layout import Base
from reference.store import Storage, open_store
from reference.store.uri import join, normalize
from reference.table import Dataset


class ContractError(LanceSpecError):
    """A writer or reader broke the contract (bad JSON, wrong id, died, timed out), or its capability file
    is unusable."""


class WriterRefusal(Exception):
    """The writer under test refused an operation: ``kind`` (one of ERROR_KINDS; anything else is read as
    ``invalid_input``) and its own message; ``certain``: nothing was committed for certain (False: a transport
    error or a lost answer, the outcome is unknown). An answer of the writer, not an error of lancespec."""

    def __init__(self, kind: str, message: str, certain: bool = True) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind if kind in ERROR_KINDS else "invalid_input"
        self.message = message
        self.certain = certain


class ReaderError(Exception):
    """The reader under test could not read the target (what a must-reject fixture expects)."""


CONTRACT = "lancespec.writer/1"


# --- where operations land ----------------------------------------------------------------------------


class Site(Protocol):
    """Resolves the site-relative locations of operations, with the store they live on."""

    @property
    def options(self) -> Mapping[str, str]: ...

    @property
    def storage(self) -> Storage: ...

    def locate(self, text: str) -> str | None:
        """The URI of location ``text``, or None when ``text`` is not a location of this site."""


@dataclass
class Folder:
    """A site whose locations are paths below one directory or URI (``s3://bucket``)."""

    root: str
    options: Mapping[str, str] = field(default_factory=dict)

    def locate(self, text: str) -> str:
        return join(self.root, text)

    @cached_property
    def storage(self) -> Storage:
        return open_store(dict(self.options))


def first_line(exc: BaseException, limit: int | None = None) -> str:
    """The first line of an error's message (its class name when it has none), cut at ``limit`` characters."""
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else type(exc).__name__


def resolve(site: Site, location: str) -> str:
    uri = site.locate(location)
    if uri is None:
        raise ContractError(f"{location!r} is not a location of this run")
    return uri


def registered_path(site: Site, base: Any) -> str:
    """The path a ``BaseSpec`` is registered with: as written (``raw``), or its URI (``file://`` form)."""
    if base.raw:
        return str(base.dir)
    uri = resolve(site, base.dir)
    return f"file://{uri}" if base.file_uri else uri


def base_keys(site: Site, entries: Iterable[str], registered: Callable[[], Iterable[Any]]) -> list[str]:
    """How a writer's API names each base: an entry that is the location of a registered base (``registered()``
    yields objects with ``name`` and ``path``) becomes its name, or its path when unnamed; any other entry (a
    name) stays as written."""
    out: list[str] = []
    bases: list[Any] | None = None
    for entry in entries:
        uri = site.locate(entry)
        if uri is not None:
            bases = list(registered()) if bases is None else bases
            match = [b for b in bases if normalize(b.path) in (normalize(uri), f"file://{normalize(uri)}")]
            if match:
                entry = match[0].name if match[0].name is not None else match[0].path
        out.append(entry)
    return out


def write_targets(site: Site, op: lang.Create | Any, root_uri: str) -> dict[str, Any]:
    """``target_bases`` / ``target_all_bases`` / ``max_rows_per_file`` keywords of a create, append or overwrite."""
    kwargs: dict[str, Any] = {}
    if op.max_rows_per_file is not None:
        kwargs["max_rows_per_file"] = op.max_rows_per_file
    if op.targets in ("all", "bases"):
        kwargs["target_all_bases"] = op.targets == "all"
    elif op.targets is not None:
        if isinstance(op, lang.Create):
            specs = [Base(0, b.name, registered_path(site, b), b.is_dataset_root) for b in op.bases]
            kwargs["target_bases"] = base_keys(site, op.targets, lambda: specs)
        else:
            kwargs["target_bases"] = base_keys(site, op.targets,
                                               lambda: Dataset(root_uri, site.storage).snapshot().bases)
    return kwargs


# --- sessions, readers, implementations -----------------------------------------------------------------


class Session(Protocol):
    """One connection to a writer on one site (one scenario run, one simulator process, one shape)."""

    def apply(self, operation: lang.Operation) -> dict[str, Any]:
        """Carry out ``operation``; raise WriterRefusal when the writer refuses it. The result may say
        ``version`` (the version committed), ``noop`` (nothing committed), ``attempts``, ``tag_version``,
        ``removed_versions`` and ``read_version``."""

    def close(self) -> None:
        """Release what the session holds (nothing, unless a subclass holds something)."""


@dataclass(frozen=True)
class Target:
    """What a reader opens: ``root`` (a URI), at most one of ``version``/``tag``, and ``branch`` (None = main);
    the reader returns the bytes of ``blob_columns`` apart."""

    root: str
    version: int | None = None
    tag: str | None = None
    branch: str | None = None
    blob_columns: tuple[str, ...] = ()


@dataclass
class ReadResult:
    table: pa.Table
    blobs: dict[str, list[bytes | None]]
    files: list[str] | None = None


class Reader(Protocol):
    name: str

    def read(self, target: Target) -> ReadResult: ...

    def close(self) -> None:
        """Release what the reader holds (nothing, unless a subclass holds something)."""


class Implementation:
    """A writer (and its reader) under one name: ``name``, ``version()``, a ``session`` class opened on a site,
    a ``reading`` class; the capability file is ``{module}.toml`` beside the subclass's module unless given.
    ``package``: the module whose ``__version__`` is the writer's version (``version()`` is then
    ``"{name} {version}"``), imported when the implementation is made."""

    name: str = ""
    package: str = ""
    session: Callable[[Site], Session]
    reading: Callable[[], Reader]

    def __init__(self, capabilities: Capabilities | None = None) -> None:
        if capabilities is None:
            module = Path(str(sys.modules[type(self).__module__].__file__))
            capabilities = Capabilities.load(module.with_suffix(".toml"))
        if self.package:
            version = str(importlib.import_module(self.package).__version__)
            capabilities = dataclasses.replace(capabilities, version=version)
        self.capabilities = capabilities

    def version(self) -> str:
        if not self.package:
            raise NotImplementedError
        return f"{self.name} {self.capabilities.version}"

    def open(self, site: Site) -> Session:
        return type(self).session(site)

    def reader(self) -> Reader:
        return type(self).reading()


# --- capabilities ----------------------------------------------------------------------------------------

FEATURES = (*dict.fromkeys(cls.feature for cls in lang.OPERATIONS.values()), "base_ids", "target_bases",
            "target_all_bases", "max_rows_per_file", "blobs", "manifest_v1", "data_storage_version",
            "clone_from_branch", *(f"refuses.{kind}" for kind in ERROR_KINDS))
"""Every feature a capability file may declare unsupported (docs/writer-contract.md "Capability files"): the
one each operation declares (``operations``), and those its arguments take."""


def needs(op: lang.Operation, refusal: str | None = None) -> list[str]:
    """The features applying ``op`` takes, read off the operation and its arguments; ``refusal``: the error
    kind a correct writer refuses it with."""
    out = [op.feature]
    bases = getattr(op, "bases", ())
    out += ["bases"] * bool(bases) + ["base_ids"] * any(b.id is not None for b in bases)
    targets = getattr(op, "targets", None)
    if targets is not None:
        out.append("target_all_bases" if targets in ("all", "bases") else "target_bases")
    out += ["max_rows_per_file"] * (getattr(op, "max_rows_per_file", None) is not None)
    out += ["blobs"] * (getattr(op, "data", None) is not None)
    out += ["manifest_v1"] * (getattr(op, "manifest_naming", "v2") == "v1")
    out += ["data_storage_version"] * (getattr(op, "data_storage_version", None) is not None)
    on_branch = any(getattr(op, key, None) is not None for key in ("branch", "parent"))
    out += ["branches"] * (on_branch or lang.split_root(op.root)[1] is not None)
    out += ["clone_from_branch"] * (isinstance(op, lang.ShallowClone | lang.DeepClone) and op.branch is not None)
    out += [f"refuses.{refusal}"] * (refusal is not None)
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Divergence:
    """A listed, expected divergence: ``scenario`` (a glob on scenario names), ``step`` (an index, or 0 for
    the content comparison with the reference, -1 for certification), the finding id and why."""

    scenario: str
    step: int
    finding: str
    reason: str
    stores: tuple[str, ...] = STORES
    versions: tuple[str, ...] = ()  # globs on the writer's version; empty: every version


@dataclass(frozen=True)
class Capabilities:
    """What a writer declares about itself (a TOML file; docs/writer-contract.md "Capability files"): the
    features it lacks (``unsupported``: feature -> reason) and its expected divergences."""

    writer: str
    unsupported: Mapping[str, str] = field(default_factory=dict)
    divergences: tuple[Divergence, ...] = ()
    source: str = ""
    version: str = ""  # the version of the writer under test (set by its implementation), for ``versions`` globs
    root_suffix: str = ""
    """What the writer's dataset roots end in (``".lance"``: LanceDB keeps a table at ``{database}/{name}.lance``);
    certify-writer then stores a scenario's root ``main:ds`` at ``{main}/ds.lance``."""

    def missing(self, features: Iterable[str]) -> tuple[str, str] | None:
        """The first of ``features`` the writer lacks, with its reason."""
        return next(((f, self.unsupported[f]) for f in features if f in self.unsupported), None)

    def divergence(self, scenario: str, step: int, store: str) -> Divergence | None:
        for d in self.divergences:
            if d.step == step and store in d.stores and fnmatch.fnmatchcase(scenario, d.scenario) and (
                    not d.versions or any(fnmatch.fnmatchcase(self.version, v) for v in d.versions)):
                return d
        return None

    @classmethod
    def load(cls, path: str | Path) -> Capabilities:
        text = Path(path).read_text(encoding="utf-8")
        return cls.parse(tomllib.loads(text), str(path))

    @classmethod
    def parse(cls, doc: Mapping[str, Any], source: str = "<capabilities>") -> Capabilities:
        known = {"writer", "exact_error_kinds", "unsupported", "divergence", "root_suffix"}
        unknown = set(doc) - known
        if unknown:
            raise ValueError(f"{source}: unknown key(s) {sorted(unknown)}; known: {sorted(known)}")
        unsupported = {f"refuses.{kind}": "the writer reports no exact error kinds" for kind in ERROR_KINDS
                       if not doc.get("exact_error_kinds", True)}
        for feature, reason in _flat(dict(doc.get("unsupported", {}))):
            if feature not in FEATURES:
                raise ValueError(f"{source}: unknown feature {feature!r}; features: {', '.join(FEATURES)}")
            if not isinstance(reason, str) or not reason:
                raise ValueError(f"{source}: unsupported.{feature} must be a reason (a sentence)")
            unsupported[feature] = reason
        divergences = []
        for entry in doc.get("divergence", []):
            missing = {"scenario", "step", "finding", "reason"} - set(entry)
            if missing:
                raise ValueError(f"{source}: a [[divergence]] needs {sorted(missing)}")
            divergences.append(Divergence(str(entry["scenario"]), int(entry["step"]), str(entry["finding"]),
                                          str(entry["reason"]), tuple(entry.get("stores", STORES)),
                                          tuple(entry.get("versions", ()))))
        suffix = doc.get("root_suffix", "")
        if not isinstance(suffix, str) or "/" in suffix or (suffix.strip(".") == "" and suffix):
            raise ValueError(f"{source}: root_suffix must be a name ending such as '.lance', got {suffix!r}")
        return cls(str(doc.get("writer", "")), unsupported, tuple(divergences), source, root_suffix=suffix)


def _flat(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``refuses.ref_exists = "..."`` in TOML is a nested table; features are its dotted keys."""
    return [pair for key, value in table.items()
            for pair in (_flat(value, f"{prefix}{key}.") if isinstance(value, dict) else [(prefix + key, value)])]


__all__ = [
    "CONTRACT", "ERROR_KINDS", "FEATURES", "Capabilities", "ContractError", "Divergence", "Folder", "Implementation",
    "ReadResult", "Reader", "ReaderError", "Session", "Site", "Target", "WriterRefusal", "base_keys",
    "first_line", "needs", "registered_path", "resolve", "write_targets",
]
