"""LanceDB for Python (``pip install 'lancespec[lancedb]'``, 0.40.0) as an implementation, through its public API
only: ``lancedb.connect``, ``create_table``, ``open_table(name, branch=)``, ``clone_table``, and a table's ``add``,
``delete``, ``tags``, ``branches`` and ``checkout``.

LanceDB keeps a table at ``{database}/{name}.lance``: a dataset root ``.../main/ds.lance`` is the table ``ds`` of
the database ``.../main``, and the capability file says ``root_suffix = ".lance"`` so that certify-writer stores a
scenario's roots so. A branch root ``{main}/tree/{branch}`` is the table opened on that branch.

The rows written are ``payload.table``'s Arrow table, a blob column included (built with pylance's ``blob_field`` and
``blob_array``: ``lancedb.blob(name)`` declares the same ``lance.blob.v2`` type but takes no thresholds); LanceDB
writes it. What LanceDB's API cannot say is declared in lancedb.toml, feature by feature, so those steps are skipped.

LanceDB's refusals are exceptions whose class or leading words are the error's variant: LanceDB's own
(``ValueError`` "Table '...' already exists", ``NotImplementedError``) and the Lance core's, which LanceDB passes
on as ``RuntimeError("lance error: {variant}: ...")``. ``classify`` maps each variant to a refusal kind: that table
is the one place the adapter reads an error's text, and it reads only the variant, never the words after it.
"""

from __future__ import annotations

import re
from typing import Any

from conformance import operations as lang
from conformance.payload import table
from reference.errors import InvalidOption

from . import base, registry
from .base import Capabilities, Implementation, ReaderError, ReadResult, Site, Target, WriterRefusal

SUFFIX = ".lance"

_VARIANTS: dict[str, str] = {
    "Dataset already exists error": "dataset_exists",
    "Ref conflict error": "ref_exists",
    "Ref is invalid": "invalid_ref_name",
    "Ref not found error": "ref_not_found",
    "Version not found error": "ref_not_found",
    "Invalid user input": "invalid_input",
}
"""The Lance core's error variants as LanceDB passes them on (``lance error: {variant}: ...``), and their kinds."""


def classify(exc: BaseException, op: lang.Operation | None = None) -> str:
    """The refusal kind of a LanceDB error, by its class and the variant it names; a ref conflict is
    ``ref_exists`` when ``op`` creates a ref, else the ref is in use (a branch with children: ``invalid_input``)."""
    if isinstance(exc, ValueError) and re.fullmatch(r"Table '.*' already exists", str(exc).strip(), re.DOTALL):
        return "dataset_exists"  # LanceDB's own TableAlreadyExists
    if re.search(r"/_versions/\d+\.manifest was not found", str(exc)):
        return "ref_not_found"  # a version that does not exist, named by the manifest the Lance core looked for
    variant = re.match(r"lance error: ([^:.]+)", str(exc).strip())
    kind = _VARIANTS.get(variant.group(1), "invalid_input") if variant is not None else "invalid_input"
    creates = isinstance(op, lang.Branch) or (isinstance(op, lang.Tag) and not op.move)
    return "invalid_input" if kind == "ref_exists" and not creates else kind


def split_table(uri: str) -> tuple[str, str]:
    """``(database, table name)`` of a dataset root ``{database}/{name}.lance``."""
    folder, _, name = uri.rstrip("/").rpartition("/")
    if not name.endswith(SUFFIX) or name == SUFFIX or not folder:
        raise WriterRefusal("invalid_input", f"LanceDB keeps a table at {{database}}/{{name}}{SUFFIX}; {uri!r} is "
                            "no such root (the capability file's root_suffix names roots so)")
    return folder, name[: -len(SUFFIX)]


class LanceDBSession(base.Session):
    def __init__(self, site: Site) -> None:
        import lancedb

        self.lancedb = lancedb
        self.site = site
        self.options = {k: v for k, v in site.options.items() if not k.startswith("lancespec_")}
        self._connections: dict[str, Any] = {}

    def _db(self, folder: str) -> Any:
        if folder not in self._connections:
            self._connections[folder] = self.lancedb.connect(folder, storage_options=self.options or None)
        return self._connections[folder]

    def _table(self, root: str) -> Any:
        """The table (on its branch) at the root location ``root``."""
        family, branch = lang.split_root(root)
        folder, name = split_table(base.resolve(self.site, family))
        return self._db(folder).open_table(name, branch=branch) if branch else self._db(folder).open_table(name)

    def _version_of(self, family: str, reference: lang.Reference) -> tuple[str | None, int]:
        """(branch, version) of a reference; a tag is checked out to learn the branch it points into."""
        if isinstance(reference, str):
            tagged = self._table(family)
            tagged.checkout(reference)
            return tagged.current_branch(), int(tagged.version)
        branch, version = reference
        return branch, int(self._table(lang.root_dir(family, branch)).version) if version is None else version

    def apply(self, operation: lang.Operation) -> dict[str, Any]:
        try:
            return self._apply(operation)
        except WriterRefusal:
            raise
        except (OSError, ValueError, TypeError, RuntimeError, KeyError, NotImplementedError) as exc:
            raise WriterRefusal(classify(exc, operation), base.first_line(exc, 500)) from exc

    def _apply(self, op: lang.Operation) -> dict[str, Any]:
        if isinstance(op, lang.Create):
            return self._create(op)
        if isinstance(op, lang.Append | lang.Overwrite):
            result = self._table(op.root).add(self._rows(op), mode="append" if isinstance(op, lang.Append)
                                              else "overwrite")
            return {"version": int(result.version)}
        if isinstance(op, lang.Delete):
            tbl = self._table(op.root)
            before = int(tbl.version)
            version = int(tbl.delete(op.predicate).version)
            return {"noop": True} if version == before else {"version": version}
        if isinstance(op, lang.Tag):
            branch, version = self._version_of(op.family, lang.reference_of(op))
            tags = self._table(lang.root_dir(op.family, branch)).tags
            (tags.update if op.move else tags.create)(op.name, version)
            return {"tag_version": version}
        if isinstance(op, lang.DropRef):
            tbl = self._table(op.family)
            (tbl.tags if isinstance(op, lang.DeleteTag) else tbl.branches).delete(op.name)
            return {}
        if isinstance(op, lang.Branch):
            reference = lang.reference_of(op)
            fork: tuple[str | None, int | None] = (self._version_of(op.family, reference) if isinstance(reference, str)
                                                   else reference)
            self._table(op.family).branches.create(op.name, *fork)
            return {}
        if isinstance(op, lang.ShallowClone):
            return self._clone(op)
        raise WriterRefusal("invalid_input", f"LanceDB's API has no {type(op).__name__} (lancedb.toml)")

    def _rows(self, op: lang.Create | lang.Append | lang.Overwrite) -> Any:
        if op.targets is not None or op.max_rows_per_file is not None or (isinstance(op, lang.Create) and op.bases):
            raise WriterRefusal("invalid_input", "LanceDB's add takes no bases, target bases or rows per file")
        return table(op.start, op.count, op.data, lambda location: base.resolve(self.site, location))

    def _create(self, op: lang.Create) -> dict[str, Any]:
        folder, name = split_table(base.resolve(self.site, op.root))
        # The table's settings are storage options (create_table's keyword arguments of the same names are
        # deprecated, and LanceDB 0.40.0 passes enable_v2_manifest_paths on as a bool, which its own check refuses).
        options = {"new_table_enable_v2_manifest_paths": "false" if op.manifest_naming == "v1" else "true"}
        if op.data_storage_version or op.data is not None:
            options["new_table_data_storage_version"] = op.data_storage_version or "2.2"
        tbl = self._db(folder).create_table(name, self._rows(op), mode="create",
                                            storage_options={**self.options, **options})
        return {"version": int(tbl.version)}

    def _clone(self, op: lang.ShallowClone) -> dict[str, Any]:
        """``clone_table`` takes a tag, or a version of the main branch: it names no branch (lancedb.toml
        ``clone_from_branch``; a tag on a branch is cloned as any tag)."""
        folder, name = split_table(base.resolve(self.site, op.target))
        reference = lang.reference_of(op)
        kwargs: dict[str, Any] = {}
        if isinstance(reference, str):
            kwargs["source_tag"] = reference
        elif reference[0] is not None:
            raise WriterRefusal("invalid_input", "clone_table names no branch")
        elif reference[1] is not None:
            kwargs["source_version"] = reference[1]
        clone = self._db(folder).clone_table(name, base.resolve(self.site, op.family), is_shallow=True, **kwargs)
        return {"version": int(clone.version)}

    def close(self) -> None:
        self._connections.clear()


class LanceDBReader(base.Reader):
    name = "lancedb"

    def read(self, target: Target) -> ReadResult:
        import lancedb

        try:
            folder, name = split_table(target.root)
            db = lancedb.connect(folder)
            tbl = db.open_table(name, branch=target.branch) if target.branch else db.open_table(name)
            if target.tag is not None:
                tbl.checkout(target.tag)
            elif target.version is not None:
                tbl.checkout(target.version)
            rows = tbl.to_arrow()
            if target.blob_columns:
                raise ReaderError("the LanceDB reader reads no blob bytes")
        except WriterRefusal as exc:
            raise ReaderError(exc.message) from exc
        except (OSError, ValueError, RuntimeError) as exc:
            raise ReaderError(base.first_line(exc, 500)) from exc
        return ReadResult(rows, {}, None)


class LanceDBImplementation(Implementation):
    name = "lancedb"
    package = "lancedb"
    session = LanceDBSession
    reading = LanceDBReader

    def __init__(self, capabilities: Capabilities | None = None) -> None:
        try:
            super().__init__(capabilities)
        except ImportError as exc:
            raise InvalidOption("LanceDB for Python is not installed: pip install 'lancespec[lancedb]'") from exc


registry.register(LanceDBImplementation)
