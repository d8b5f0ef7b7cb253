"""What lies at a URI that holds no dataset, said so a person knows what to do next.

A dataset root is a directory whose ``_versions/`` holds a manifest. When a URI holds none, the answer
names what is there instead: nothing at all ("does not exist"), a LanceDB database folder (the
``{name}.lance`` tables it holds, so one can be certified), or a directory holding no dataset.
"""

from __future__ import annotations

import itertools
import os

from reference.errors import DatasetNotFound
from reference.layout import VERSIONS_DIR
from reference.store import Storage
from reference.store.uri import join, local_path, relative_to, scheme_of

#: Objects listed at most to tell what a folder holds (the listing of an error path stays bounded).
MAX_LISTED = 100_000
#: Tables named at most in the answer.
MAX_NAMED = 10


def what_is_there(storage: Storage, uri: str) -> DatasetNotFound:
    """The error to raise for ``uri``, which holds no manifest in ``_versions/``."""
    if scheme_of(uri) == "file" and os.path.isfile(local_path(uri)):
        return DatasetNotFound("is a file, not a dataset root (a directory holding _versions/)", uri)
    if scheme_of(uri) == "file":
        anything, tables = _local_tables(local_path(uri))
    else:
        anything, tables = _listed_tables(storage, uri)
    if tables:
        names = sorted(tables)
        shown = ", ".join(names[:MAX_NAMED]) + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")
        return DatasetNotFound(f"is a LanceDB database folder, not a dataset: it holds the table(s) {shown}; "
                               f"certify or inspect one of them, e.g. {join(uri, names[0])}", uri)
    if not anything and not (scheme_of(uri) == "file" and os.path.isdir(local_path(uri))):
        return DatasetNotFound("does not exist", uri)
    return DatasetNotFound(f"holds no dataset: {VERSIONS_DIR}/ holds no manifest", uri)


def _listed_tables(storage: Storage, uri: str) -> tuple[bool, set[str]]:
    """Whether anything is stored under ``uri``, and the ``{name}.lance`` tables with a ``_versions/`` among
    the first ``MAX_LISTED`` objects of a recursive listing (object stores list 1,000 keys a request)."""
    tables: set[str] = set()
    anything = False
    for info in itertools.islice(storage.list(uri, recursive=True), MAX_LISTED):
        anything = True
        parts = (relative_to(info.uri, uri) or "").split("/")
        if len(parts) >= 3 and parts[0].endswith(".lance") and parts[1] == VERSIONS_DIR:
            tables.add(parts[0])
    return anything, tables


def _local_tables(directory: str) -> tuple[bool, set[str]]:
    """The same for a local directory, looking two levels down only (``{name}.lance/_versions/``), at most
    ``MAX_LISTED`` entries of each and no link followed: a walk of the whole tree under ``/`` would enter
    /proc and every mounted file system."""
    tables: set[str] = set()
    try:
        with os.scandir(directory) as entries:
            children = list(itertools.islice(entries, MAX_LISTED))
    except OSError:
        return False, tables
    for child in children:
        if child.name.endswith(".lance") and child.is_dir(follow_symlinks=False):
            versions = os.path.join(child.path, VERSIONS_DIR)
            if os.path.islink(versions):
                continue
            try:
                with os.scandir(versions) as found:
                    if any(e.name.endswith(".manifest") for e in itertools.islice(found, MAX_LISTED)):
                        tables.add(child.name)
            except OSError:
                continue
    return bool(children), tables


__all__ = ["what_is_there"]
