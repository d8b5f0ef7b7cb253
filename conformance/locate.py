"""What lies at a URI that holds no dataset, said so a person knows what to do next.

A dataset root is a directory whose ``_versions/`` holds a manifest. When a URI holds none, the answer
names what is there instead: nothing at all ("does not exist"), a LanceDB database folder (the
``{name}.lance`` tables it holds, so one can be certified), or a directory holding no dataset.
"""

from __future__ import annotations

import itertools
import os

from lancespec.reference.errors import DatasetNotFound
from lancespec.reference.layout import VERSIONS_DIR
from lancespec.reference.store import Storage
from lancespec.reference.store.uri import join, local_path, relative_to, scheme_of

#: Objects listed at most to tell what a folder holds (the listing of an error path stays bounded).
MAX_LISTED = 100_000
#: Tables named at most in the answer.
MAX_NAMED = 10


def what_is_there(storage: Storage, uri: str) -> DatasetNotFound:
    """The error to raise for ``uri``, which holds no manifest in ``_versions/``."""
    if scheme_of(uri) == "file" and os.path.isfile(local_path(uri)):
        return DatasetNotFound("is a file, not a dataset root (a directory holding _versions/)", uri)
    tables: set[str] = set()
    anything = False
    for info in itertools.islice(storage.list(uri, recursive=True), MAX_LISTED):
        anything = True
        parts = (relative_to(info.uri, uri) or "").split("/")
        if len(parts) >= 3 and parts[0].endswith(".lance") and parts[1] == VERSIONS_DIR:
            tables.add(parts[0])
    if tables:
        names = sorted(tables)
        shown = ", ".join(names[:MAX_NAMED]) + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")
        return DatasetNotFound(f"is a LanceDB database folder, not a dataset: it holds the table(s) {shown}; "
                               f"certify or inspect one of them, e.g. {join(uri, names[0])}", uri)
    if not anything and not (scheme_of(uri) == "file" and os.path.isdir(local_path(uri))):
        return DatasetNotFound("does not exist", uri)
    return DatasetNotFound(f"holds no dataset: {VERSIONS_DIR}/ holds no manifest", uri)


__all__ = ["what_is_there"]
