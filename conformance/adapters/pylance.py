"""pylance (in process) as an implementation.

pylance's refusals are ``OSError``/``ValueError`` whose message names the problem (docs/lance-format.md §16.8:
messages end with a Rust source location); ``classify`` maps a message to a refusal kind, and says whether
nothing was committed for certain (the simulator's question after a fault). That table is the one place
pylance's words are read.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from conformance import operations as lang
from conformance.payload import table

from . import base, registry
from .base import Implementation, ReaderError, ReadResult, Site, Target, WriterRefusal

_KINDS: tuple[tuple[str, str], ...] = (
    (r"Dataset already exists", "dataset_exists"),
    (r"Duplicate base path ID|Conflict detected: Base path", "duplicate_base"),
    (r"Base reference .* not found in available bases", "unknown_target_base"),
    (r"Ref is invalid|invalid characters|is reserved for the default branch", "invalid_ref_name"),
    (r"already exists", "ref_exists"),
    (r"Ref not found|Version not found|was not found|does not exist", "ref_not_found"),
    (r"is not a valid absolute URI|relative path", "invalid_base_path"),
    (r"(?i)conflict|too many concurrent writers|retryable|incompatible|not found|no such|invalid user input"
     r"|cleanup error", "invalid_input"),
)
"""(pattern, kind), first match wins; a message that matches says pylance committed nothing."""


def classify(exc: BaseException) -> tuple[str, bool]:
    """The refusal kind of a pylance error, and whether nothing was committed for certain (a matched message,
    or an argument error raised before any I/O)."""
    message = str(exc)
    for pattern, kind in _KINDS:
        if re.search(pattern, message):
            return kind, True
    return "invalid_input", isinstance(exc, ValueError | KeyError | TypeError)


class PylanceSession(base.Session):
    def __init__(self, site: Site) -> None:
        import lance

        self.lance = lance
        self.site = site
        self.options = {k: v for k, v in site.options.items() if not k.startswith("lancespec_")} or None
        self.staged: dict[int, tuple[int, list[Any]]] = {}

    def _locate(self, location: str) -> str:
        return base.resolve(self.site, location)

    def _open(self, root: str) -> Any:
        return self.lance.dataset(base.resolve(self.site, root), storage_options=self.options)

    def _bases(self, specs: Any) -> list[Any]:
        return [self.lance.DatasetBasePath(base.registered_path(self.site, b), name=b.name,
                                           is_dataset_root=b.is_dataset_root, id=b.id) for b in specs]

    def apply(self, operation: lang.Operation) -> dict[str, Any]:
        try:
            return self._apply(operation)
        except (OSError, ValueError, TypeError, RuntimeError, KeyError) as exc:
            kind, certain = classify(exc)
            raise WriterRefusal(kind, base.first_line(exc), certain) from exc

    def _apply(self, op: lang.Operation) -> dict[str, Any]:
        if isinstance(op, lang.Create | lang.Append | lang.Overwrite):
            return self._write(op)
        if isinstance(op, lang.Delete):
            dataset = self._open(op.root)
            before = dataset.version
            dataset.delete(op.predicate)
            return {"noop": True} if dataset.version == before else {"version": dataset.version}
        if isinstance(op, lang.AddBase | lang.AddBases):
            self._open(op.root).add_bases(self._bases(op.bases))
        elif isinstance(op, lang.Tag):
            return self._tag(op)
        elif isinstance(op, lang.DropRef):
            dataset = self._open(op.family)
            (dataset.tags if isinstance(op, lang.DeleteTag) else dataset.branches).delete(op.name)
        elif isinstance(op, lang.Branch):
            self._open(op.family).create_branch(op.name, lang.reference_of(op))
        elif isinstance(op, lang.ShallowClone | lang.DeepClone):
            source = self._open(op.family)
            make = source.shallow_clone if isinstance(op, lang.ShallowClone) else source.deep_clone
            make(base.resolve(self.site, op.target), lang.reference_of(op), storage_options=self.options)
        elif isinstance(op, lang.Relocate):
            raise WriterRefusal("invalid_input", "pylance has no API that rewrites base paths "
                                "(docs/lance-format.md §10.4)")
        elif isinstance(op, lang.UpdateConfig):
            dataset = self._open(op.root)
            dataset.update_config(dict(op.values))
            return {"version": dataset.version}
        elif isinstance(op, lang.Cleanup):
            stats = self._open(op.root).cleanup_old_versions(
                older_than=timedelta(0) if op.older_than_zero else None, retain_versions=op.retain_versions,
                delete_unverified=op.delete_unverified, error_if_tagged_old_versions=op.error_if_tagged)
            return {"removed_versions": int(stats.old_versions)}
        elif isinstance(op, lang.Stage):
            import lance.fragment

            dataset = self._open(op.root)
            rows = table(op.start, op.count, None, self._locate)
            fragments = lance.fragment.write_fragments(rows, base.resolve(self.site, op.root), schema=rows.schema,
                                                       storage_options=self.options)
            self.staged[op.key] = (dataset.version, list(fragments))
            return {"read_version": dataset.version}
        elif isinstance(op, lang.CommitStaged):
            if op.key not in self.staged:
                raise WriterRefusal("invalid_input", f"stage #{op.key} wrote nothing")
            read_version, fragments = self.staged.pop(op.key)
            out = self.lance.LanceDataset.commit(base.resolve(self.site, op.root), self.lance.LanceOperation.Append(
                fragments), read_version=read_version, storage_options=self.options)
            return {"version": out.version, "read_version": read_version}
        else:  # an operation of the language this session does not know: refused, never done silently
            raise WriterRefusal("invalid_input", f"the pylance session has no {type(op).__name__} operation")
        return {}

    def _write(self, op: lang.Create | lang.Append | lang.Overwrite) -> dict[str, Any]:
        uri = base.resolve(self.site, op.root)
        kwargs: dict[str, Any] = {"storage_options": self.options, **base.write_targets(self.site, op, uri)}
        if isinstance(op, lang.Create):
            kwargs["enable_v2_manifest_paths"] = op.manifest_naming != "v1"
            if op.bases:
                kwargs["initial_bases"] = self._bases(op.bases)
            if op.data_storage_version or op.data is not None:
                kwargs["data_storage_version"] = op.data_storage_version or "2.2"
        mode = "create" if isinstance(op, lang.Create) else "append" if isinstance(op, lang.Append) else "overwrite"
        written = self.lance.write_dataset(table(op.start, op.count, op.data, self._locate), uri, mode=mode,
                                           **kwargs)
        return {"version": written.version}

    def _tag(self, op: lang.Tag) -> dict[str, Any]:
        """Tag a version; the latest of a branch is read first, so that the result names the version tagged."""
        dataset = self._open(op.family)
        reference = lang.reference_of(op)
        if isinstance(reference, tuple) and reference[1] is None:
            latest = dataset if reference[0] is None else self._open(lang.root_dir(op.family, reference[0]))
            reference = (reference[0], latest.version)
        (dataset.tags.update if op.move else dataset.tags.create)(op.name, reference)
        return {"tag_version": reference[1] if isinstance(reference, tuple) else dataset.tags.get_version(op.name)}


class PylanceReader(base.Reader):
    name = "pylance"

    def read(self, target: Target) -> ReadResult:
        import lance

        uri = f"{target.root.rstrip('/')}/tree/{target.branch}" if target.branch else target.root
        try:
            ds = lance.dataset(uri, version=target.tag if target.tag is not None else target.version)
            keep = [n for n in ds.schema.names if n not in target.blob_columns]
            rows = ds.to_table(columns=keep)
            blobs: dict[str, list[bytes | None]] = {}
            for name in target.blob_columns:
                files = ds.take_blobs(name, indices=list(range(rows.num_rows)))
                blobs[name] = [None if f is None else f.readall() for f in files]
            root = uri
            if target.tag is not None:
                branch = ds.tags.list()[target.tag].get("branch")
                root = f"{target.root.rstrip('/')}/tree/{branch}" if branch else target.root
            # pylance before 13 has no base_paths(): rows and blobs are still compared, files are not.
            files_out = _pylance_files(ds, root) if hasattr(ds, "base_paths") else None
        except (OSError, ValueError, RuntimeError) as exc:
            raise ReaderError(base.first_line(exc)) from exc
        return ReadResult(rows, blobs, files_out)


def _pylance_files(ds: Any, root: str) -> list[str]:
    """Data and deletion files of a pylance dataset: pylance's metadata resolved by the layout rules of the
    reference (``root``: the dataset root the version belongs to; a tag on a branch belongs to the branch's)."""
    from reference.layout import Base, FileKind, deletion_file_name
    from reference.layout import resolve as resolve_file

    bases = {i: Base(i, b.name, b.path, b.is_dataset_root) for i, b in ds.base_paths().items()}
    out = []
    for fragment in ds.get_fragments():
        meta = fragment.metadata
        out += [resolve_file(root, bases, f.base_id, FileKind.DATA, f.path) for f in meta.files]
        d = meta.deletion_file
        if d is not None:
            bitmap = str(d.file_type).lower() not in ("array", "arrow_array", "0")
            name = deletion_file_name(meta.id, d.read_version, d.id, int(bitmap))
            out.append(resolve_file(root, bases, d.base_id, FileKind.DELETION, name))
    return sorted(out)


class PylanceImplementation(Implementation):
    name = "pylance"
    package = "lance"
    session = PylanceSession
    reading = PylanceReader


registry.register(PylanceImplementation)
