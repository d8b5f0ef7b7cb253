"""The local-filesystem store.

Writes never leave a half-written object under its final name: content goes to a hidden temporary file
in the same directory first (``.tmp-{uuid}``, a name Lance readers ignore), then is renamed into place
(``put``) or hard-linked to the final name, which fails if that name exists (``put_if_absent``: the same
primitive the object_store crate uses under pylance on local disk).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

from ..errors import ObjectAlreadyExists, ObjectNotFound, StorageError
from .base import ObjectInfo, ObjectStore, Tail
from .uri import join, local_path


def _info(uri: str, st: os.stat_result) -> ObjectInfo:
    return ObjectInfo(uri, st.st_size, datetime.fromtimestamp(st.st_mtime, tz=UTC))


class LocalStore(ObjectStore):
    """Objects are files; directories are implicit and created on write."""

    def get(self, uri: str) -> bytes:
        try:
            with open(local_path(uri), "rb") as fh:
                return fh.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, ValueError) as exc:
            # ValueError: a path no file can have (an embedded NUL byte)
            raise ObjectNotFound("no such object", uri) from exc

    def get_range(self, uri: str, start: int, length: int) -> bytes:
        if start < 0 or length < 0:
            raise StorageError(f"invalid range start={start} length={length}", uri)
        try:
            with open(local_path(uri), "rb") as fh:
                fh.seek(start)
                return fh.read(length)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, ValueError) as exc:
            # ValueError: a path no file can have (an embedded NUL byte)
            raise ObjectNotFound("no such object", uri) from exc

    def get_tail(self, uri: str, length: int) -> Tail:
        try:
            with open(local_path(uri), "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                fh.seek(max(0, size - length))
                return Tail(fh.read(length), size)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, ValueError) as exc:
            raise ObjectNotFound("no such object", uri) from exc

    def head(self, uri: str) -> ObjectInfo:
        path = local_path(uri)
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError, ValueError) as exc:
            raise ObjectNotFound("no such object", uri) from exc
        if not os.path.isfile(path):
            raise ObjectNotFound("not a file", uri)
        return _info(uri, st)

    def list(self, prefix: str, recursive: bool = True) -> Iterator[ObjectInfo]:
        root = local_path(prefix)
        if not os.path.isdir(root):
            return iter(())
        return iter(sorted(self._walk(prefix.rstrip("/"), root, recursive), key=lambda i: i.uri))

    def _walk(self, prefix: str, root: str, recursive: bool) -> Iterator[ObjectInfo]:
        """Entries that vanish between the directory read and the stat (another writer's staging file,
        a concurrent delete) are skipped: a listing is a moment's view, not an error."""
        try:
            with os.scandir(root) as entries:
                found = list(entries)
        except FileNotFoundError:
            return
        for entry in found:
            uri = join(prefix, entry.name)
            try:
                if entry.is_file(follow_symlinks=True):
                    info = _info(uri, entry.stat())
                elif recursive and entry.is_dir(follow_symlinks=True):
                    yield from self._walk(uri, entry.path, recursive)
                    continue
                else:
                    continue
            except FileNotFoundError:
                continue
            yield info

    def _temp_beside(self, path: str, data: bytes) -> str:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".tmp-{uuid.uuid4().hex}")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        return tmp

    def put(self, uri: str, data: bytes) -> None:
        path = local_path(uri)
        tmp = self._temp_beside(path, data)
        try:
            os.replace(tmp, path)
        except OSError as exc:
            os.unlink(tmp)
            raise StorageError(f"cannot write: {exc.strerror}", uri) from exc

    def put_if_absent(self, uri: str, data: bytes) -> None:
        path = local_path(uri)
        tmp = self._temp_beside(path, data)
        try:
            os.link(tmp, path)
        except FileExistsError as exc:
            raise ObjectAlreadyExists("object already exists", uri) from exc
        finally:
            os.unlink(tmp)

    def delete(self, uri: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(local_path(uri))

    def copy(self, src: str, dst: str) -> None:
        src_path, dst_path = local_path(src), local_path(dst)
        if not os.path.isfile(src_path):
            raise ObjectNotFound("no such object", src)
        os.makedirs(os.path.dirname(dst_path), exist_ok=True)
        tmp = os.path.join(os.path.dirname(dst_path), f".tmp-{uuid.uuid4().hex}")
        shutil.copyfile(src_path, tmp)
        os.replace(tmp, dst_path)
