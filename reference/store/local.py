"""The local-filesystem store.

Writes never leave a half-written object under its final name: content goes to a hidden temporary file
in the same directory first (``.tmp-{uuid}``, a name Lance readers ignore), then is renamed into place
(``put``) or hard-linked to the final name, which fails if that name exists (``put_if_absent``: the same
primitive the object_store crate uses under pylance on local disk).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import operator
import os
import platform
import shutil
import stat
import sys
import uuid
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from itertools import repeat
from typing import Any, BinaryIO, TypeVar, cast

from ..errors import AccessDenied, NotARegularFile, ObjectAlreadyExists, ObjectNotFound, StorageError
from ..limits import DEFAULT_LIMITS, Limits
from . import local_tails, tail_reader
from .base import ObjectInfo, ObjectStore, Tail
from .uri import local_path


def _info(uri: str, st: os.stat_result) -> ObjectInfo:
    return ObjectInfo(uri, st.st_size, datetime.fromtimestamp(st.st_mtime, tz=UTC))


#: What a name can hold besides a regular file, as refusals say it.
_KINDS = ((stat.S_ISLNK, "a symbolic link (lancespec follows none)"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


def _refuse_unless_regular(mode: int, uri: str) -> None:
    """Raise NotARegularFile naming what ``uri`` holds unless it is a regular file."""
    if stat.S_ISREG(mode):
        return
    kind = next((what for test, what in _KINDS if test(mode)), "not a regular file")
    if stat.S_ISDIR(mode):
        raise ObjectNotFound(f"no such object: it is {kind}", uri)
    raise NotARegularFile(f"is {kind}, not a regular file; it is not read", uri)


def _refuse_device(path: str, uri: str) -> None:
    """Raise NotARegularFile when ``path`` names a device, without opening it (``tail_reader.DEVICES``: a device's
    driver acts on open). Its kind is looked up first (``lstat``, which opens nothing); only where that says device is
    the name opened ``O_PATH`` (which runs no driver) the way ``open_no_links`` reaches it, so that a link on the way
    is refused as it always was, and its ``fstat`` decides."""
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode
    except (OSError, ValueError):
        return  # the open says why
    if stat.S_IFMT(mode) not in tail_reader.DEVICES:
        return
    fd = open_no_links(path, os.O_PATH | os.O_NOFOLLOW)
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    _refuse_unless_regular(mode, uri)


def _storage_error(exc: OSError | ValueError, uri: str) -> StorageError:
    """The lancespec error for an OS error on ``uri``: missing names are ObjectNotFound, a final symbolic
    link (``O_NOFOLLOW``'s ELOOP) is NotARegularFile, EACCES and EPERM AccessDenied (a ``CannotRead``), anything
    else (ENAMETOOLONG, ENXIO of a socket, ...) a StorageError saying what the system said."""
    if isinstance(exc, ValueError):  # a path no file can have (an embedded NUL byte)
        return ObjectNotFound("no such object (the name holds a NUL byte)", uri)
    if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR):
        return ObjectNotFound("no such object", uri)
    if exc.errno == errno.ELOOP:
        return NotARegularFile("is a symbolic link (lancespec follows none), or a loop of them; it is not read",
                               uri)
    code = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    if exc.errno in (errno.EACCES, errno.EPERM):  # the reader's rights, not the dataset: "cannot read"
        return AccessDenied(f"cannot be read: {exc.strerror or exc} ({code}): run as a user allowed to read it", uri)
    return StorageError(f"cannot be read: {exc.strerror or exc} ({code})", uri)


def _path(uri: str, directory: bool = False) -> str:
    """The filesystem path of ``uri`` to read (``directory``: to list); a path that is not absolute (nothing
    is read relative to the working directory) and a path with a ``..`` segment (after a ``file://`` URI's
    decoding) are refused, so that no name a dataset records can climb out of the directory it is joined to,
    and so is a path with a symbolic link at any directory on the way (``_no_link_on_the_way``)."""
    path = local_path(uri)
    if not path.startswith("/"):  # a name that only looks like a URI ("FILE:/x" before schemes matched in any case)
        raise StorageError("is not an absolute path; lancespec reads nothing relative to the working directory", uri)
    if ".." in path.split("/"):
        raise StorageError("the path has a '..' segment; lancespec reads nothing through '..'", uri)
    # a file directly in a directory found before (only normalized ones are kept, so this is its dirname)
    if directory or path[:path.rfind("/")] not in _REAL_DIRECTORIES:
        _no_link_on_the_way(os.path.normpath(path if directory else os.path.dirname(path) or "."), uri)
    return path


_REAL_DIRECTORIES: set[str] = set()
"""Directories found to have no symbolic link on the way (a run reads the same few thousand many times)."""
_REAL_DIRECTORIES_KEPT = 100_000


def _no_link_on_the_way(directory: str, uri: str) -> None:
    """Raise NotARegularFile when a component of ``directory`` is a symbolic link (issue 32: ``_versions``,
    ``_refs``, ``tree`` or ``data`` linked elsewhere showed another dataset's versions as this one's, and led
    to ``/proc/self/environ``). The final component of a file is opened with ``O_NOFOLLOW``; the directories
    above it are checked here, every one of them: the root the user names is made canonical by the command
    line (``lancespec.cli.options.dataset_uri``), so a link on the way is the dataset's doing."""
    if directory in _REAL_DIRECTORIES or not os.path.isabs(directory) or "\x00" in directory:
        return  # a NUL byte names no file: the open or listing that follows refuses it
    if os.path.realpath(directory) != directory:
        parts = directory.split("/")
        for end in range(2, len(parts) + 1):
            step = "/".join(parts[:end])
            if os.path.islink(step):
                raise NotARegularFile(f"the directory {step} on the way is a symbolic link (lancespec follows "
                                      "none); it is not read", uri)
    if len(_REAL_DIRECTORIES) >= _REAL_DIRECTORIES_KEPT:
        _REAL_DIRECTORIES.clear()
    _REAL_DIRECTORIES.add(directory)


_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437}.get(platform.machine())
_AT_FDCWD = -100
#: openat2's resolve flags: no symbolic link at any component, no /proc "magic" link, nothing above the directory
#: a name is opened in.
_RESOLVE_NO_SYMLINKS, _RESOLVE_NO_MAGICLINKS, _RESOLVE_BENEATH = 0x04, 0x02, 0x08
_libc = ctypes.CDLL(None, use_errno=True) if _SYS_OPENAT2 is not None else None
_openat2_works = _libc is not None


#: The ``open_how`` of each set of flags asked for (the kernel only reads it), and what ``os.fsencode`` encodes with.
_HOW: dict[int, tail_reader.OpenHow] = {}
_HOW_SIZE = ctypes.sizeof(tail_reader.OpenHow)
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def open_no_links(path: str, flags: int) -> int:
    """``os.open(path, flags)`` with no symbolic link followed at any component of ``path``, by the kernel
    (Linux ``openat2`` with ``RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS``, Linux 5.6 and later): a link
    swapped in after ``_no_link_on_the_way`` looked is refused too (ELOOP). Where the system call is missing,
    ``os.open`` after the component checks of ``_path`` (containment by checking, not by construction)."""
    global _openat2_works
    if _openat2_works and _libc is not None:
        sys.audit("open", path, None, flags)  # what os.open announces: audit hooks (the fuzzer's) see every open
        how = _HOW.get(flags)
        if how is None:
            how = _HOW[flags] = tail_reader.OpenHow(flags | os.O_CLOEXEC, 0,
                                                    _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
        fd = _libc.syscall(_SYS_OPENAT2, _AT_FDCWD, path.encode(_FS_ENCODING, _FS_ERRORS), ctypes.byref(how),
                           _HOW_SIZE)
        if fd >= 0:
            return int(fd)
        code = ctypes.get_errno()
        if code != errno.ENOSYS:
            raise OSError(code, os.strerror(code), path)
        _openat2_works = False  # an older kernel, or a sandbox that filters the call: checks only from now on
    return os.open(path, flags | os.O_CLOEXEC)


#: How a file is opened for reading: without following a link, without blocking (a FIFO).
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW
#: The ``open_how`` of a file opened for reading in a directory opened before (``local_tails``).
_READ_BENEATH = tail_reader.OpenHow(_READ_FLAGS | os.O_CLOEXEC, 0,
                         _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS | _RESOLVE_BENEATH)


def _directory_fd(directory: str, uri: str) -> int | None:
    """A descriptor (``O_PATH``) of ``directory``, opened as ``_path`` would let a file in it be read (no ``..``
    segment, no symbolic link on the way), to open its files by name; None where the files must be opened one
    by one instead (``openat2`` missing, or anything about the directory to refuse: each file's read then says
    what, as it always has)."""
    if not _openat2_works or not os.path.isabs(directory) or ".." in directory.split("/") or "\x00" in directory:
        return None
    try:
        if directory not in _REAL_DIRECTORIES:
            _no_link_on_the_way(os.path.normpath(directory), uri)
        fd = open_no_links(directory, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
    except (OSError, StorageError):
        return None
    if not _openat2_works:  # the call turned out missing just now: opened by os.open
        os.close(fd)
        return None
    return fd


#: Files of one directory from which ``get_tails`` shares the reading with a helper process (``local_tails``).
_SHARED_FROM = 16_384
#: A file of a batch: its position in the batch, its name in its directory, its path.
_File = tuple[int, str, str]
_Row = TypeVar("_Row")


def _tails_in(directory_fd: int, files: Sequence[_File], uris: Sequence[str], length: int,
              stats: dict[str, ObjectInfo] | None, found: list[Tail | StorageError | None], share: bool) -> bool:
    """Read the tail of each of ``files`` (all in the directory ``directory_fd``, opened by ``_directory_fd``) into
    ``found`` at its position, as ``get_tail`` answers it, and keep in ``stats`` what the ``fstat`` of each regular
    file read found: chunk by chunk (``tail_reader.read_chunk``: per file ``openat2`` relative to the directory with
    ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS``, ``fstat``, one ``pread``, ``close``), each
    path announced to audit hooks first as ``open_no_links`` announces its opens; ``share``: a helper process reads
    a share of the chunks (``local_tails``). False, nothing read, when a name cannot be encoded as the system's
    file names are (the caller reads each alone)."""
    try:
        blob = "\0".join(name for _, name, _ in files).encode(_FS_ENCODING, _FS_ERRORS)
    except UnicodeEncodeError:
        return False
    names = blob.split(b"\0")
    chunk = local_tails.CHUNK
    chunks = [files[at:at + chunk] for at in range(0, len(files), chunk)]
    assert _libc is not None and _SYS_OPENAT2 is not None  # a directory descriptor is opened only where it works
    syscall, how = _libc.syscall, ctypes.byref(_READ_BENEATH)

    def announce(number: int) -> None:
        for _, _, path in chunks[number]:
            sys.audit("open", path, None, _READ_BENEATH.flags)

    def read_here(number: int) -> None:
        columns = tail_reader.read_chunk(names[number * chunk:(number + 1) * chunk], directory_fd, length, syscall,
                                         how, _HOW_SIZE, _SYS_OPENAT2)
        if not take(number, columns):
            raise AssertionError("the run's own reads answered a file twice or not at all")

    def take(number: int, columns: tail_reader.Columns) -> bool:
        return _take(chunks[number], columns, uris, stats, found)

    opening = (_SYS_OPENAT2, _READ_BENEATH.flags, _READ_BENEATH.resolve)
    helper = local_tails.Helper.start(directory_fd, blob, len(files), length, opening) if share else None
    local_tails.read_shared(len(chunks), helper, announce, read_here, take)
    return True


def _made(kind: type[_Row], rows: Iterable[tuple[Any, ...]]) -> Iterator[_Row]:
    """Named tuples of ``kind`` from ``rows`` of their fields, made without a Python frame each."""
    return cast("Iterator[_Row]", map(tuple.__new__, repeat(kind), rows))


def _take(chunk: Sequence[_File], columns: tail_reader.Columns, uris: Sequence[str],
          stats: dict[str, ObjectInfo] | None, found: list[Tail | StorageError | None]) -> bool:
    """Put in ``found`` (and ``stats``) the answers ``columns`` gives for ``chunk``: a ``Tail``, or the error
    ``get_tail`` raises for the file; False, nothing put, when ``columns`` does not answer each file once."""
    kinds, codes, sizes, mtimes, tails = columns
    count = len(chunk)
    if len(kinds) != count or len(sizes) != count or len(mtimes) != count or len(codes) != count:
        return False
    if kinds.count(tail_reader.READ) == count:  # all read: the answers made in a few passes
        if len(tails) != count:
            return False
        first, last = chunk[0][0], chunk[-1][0]
        made = list(_made(Tail, zip(tails, sizes, strict=True)))
        if last - first + 1 == count:  # positions in a row (a batch of one directory): put by one slice
            found[first:last + 1] = made
            chunk_uris = uris[first:last + 1]
        else:
            for (at, _, _), tail in zip(chunk, made, strict=True):
                found[at] = tail
            chunk_uris = [uris[at] for at, _, _ in chunk]
        if stats is not None:
            times = map(datetime.fromtimestamp, mtimes, repeat(UTC))
            stats.update(zip(chunk_uris, _made(ObjectInfo, zip(chunk_uris, sizes, times, repeat(None))), strict=True))
        return True
    answers: list[Tail | StorageError] = []
    read = iter(tails)
    kept: list[ObjectInfo] = []
    for (at, _, path), kind, code, size, mtime in zip(chunk, kinds, codes, sizes, mtimes, strict=True):
        uri = uris[at]
        if kind == tail_reader.READ:
            data = next(read, None)
            if data is None:
                return False
            answers.append(Tail(data, size))
            kept.append(ObjectInfo(uri, size, datetime.fromtimestamp(mtime, tz=UTC)))
        elif kind == tail_reader.OPEN_FAILED:
            answers.append(_storage_error(OSError(code, os.strerror(code), path), uri))
        elif kind == tail_reader.READ_FAILED:
            answers.append(_storage_error(OSError(code, os.strerror(code)), uri))
        elif kind == tail_reader.NOT_REGULAR:
            try:
                _refuse_unless_regular(code, uri)
            except StorageError as exc:
                answers.append(exc)
            else:
                return False  # a regular file said not to be one
        else:
            return False
    if next(read, None) is not None:
        return False
    for (at, _, _), answer in zip(chunk, answers, strict=True):
        found[at] = answer
    if stats is not None:
        stats.update((info.uri, info) for info in kept)
    return True


class LocalStore(ObjectStore):
    """Objects are regular files; directories are implicit and created on write. Reads open no symbolic
    link (the last component) and no device, never block (a FIFO is refused, not waited on) and check the size before
    reading (``limits.max_object_bytes`` for whole objects); listings never enter a linked directory; no read
    or listing goes through a directory that is a symbolic link at any step of its path."""

    limits: Limits = DEFAULT_LIMITS

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._stats: dict[str, ObjectInfo] | None = None

    def remember_stats(self) -> None:
        """From now on, what ``get_tails`` found of each regular file it read (its size and time, from the
        ``fstat`` of the open file) answers for that file in the next recursive listing that meets it as a
        regular file, instead of a second ``fstatat`` (a million data files read, then listed with the root:
        3 s). For one read-only run's own store only (``conformance.fetch.RunStorage``), which assumes nothing
        changes under it: a store shared between runs, or one that writes, keeps nothing."""
        self._stats = {}

    @staticmethod
    def _open_fd(uri: str) -> tuple[int, int]:
        """A descriptor of the regular file at ``uri``, opened without following a symbolic link at any
        component and without blocking, and its size; the caller closes it. A device is refused unopened
        (``_refuse_device``)."""
        try:
            path = _path(uri)
            _refuse_device(path, uri)
            fd = open_no_links(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except (OSError, ValueError) as exc:
            raise _storage_error(exc, uri) from exc
        try:  # checked before any read (fdopen refuses a directory with its own error)
            st = os.fstat(fd)
            _refuse_unless_regular(st.st_mode, uri)
        except BaseException:
            os.close(fd)
            raise
        return fd, st.st_size

    @contextlib.contextmanager
    def _open(self, uri: str) -> Iterator[tuple[BinaryIO, int]]:
        """The regular file at ``uri`` (``_open_fd``) as a file object, with its size."""
        fd, size = self._open_fd(uri)
        with os.fdopen(fd, "rb") as fh:
            yield fh, size

    def get(self, uri: str) -> bytes:
        with self._open(uri) as (fh, size):
            self.limits.check("max_object_bytes", size, uri, "the object's size in bytes")
            return self._read(fh, size, uri)

    def get_range(self, uri: str, start: int, length: int) -> bytes:
        if start < 0 or length < 0:
            raise StorageError(f"invalid range start={start} length={length}", uri)
        with self._open(uri) as (fh, size):
            fh.seek(min(start, size))
            return self._read(fh, max(0, min(length, size - start)), uri)

    @staticmethod
    def _read(fh: BinaryIO, n: int, uri: str) -> bytes:
        try:
            return fh.read(n)
        except OSError as exc:
            raise _storage_error(exc, uri) from exc

    def get_tail(self, uri: str, length: int, size: int | None = None) -> Tail:
        """One ``pread`` of the file's last ``length`` bytes, at the size the open file has, whatever the
        caller knew (a million data files' tails are read this way: no file object per read)."""
        fd, size = self._open_fd(uri)
        try:
            return Tail(os.pread(fd, min(length, size), max(0, size - length)), size)
        except OSError as exc:
            raise _storage_error(exc, uri) from exc
        finally:
            os.close(fd)

    def get_tails(self, uris: Sequence[str], length: int) -> list[Tail | StorageError]:
        """``get_tail`` of each of ``uris``, with the same refusals: the files of one directory are opened by
        name relative to the directory, opened once (``_directory_fd``, ``_tails_in``), so that the
        kernel walks the directory's path once, not once per file (a million data files' tails: 3 s of system
        time less); from ``_SHARED_FROM`` files of one directory, a helper process reads a share of them on the
        second core. A name that is not one plain component, or a directory that cannot be opened so, is read
        as ``get_tail`` reads it."""
        found: list[Tail | StorageError | None] = [None] * len(uris)
        in_directory: dict[str, list[_File]] = {}
        for at, uri in enumerate(uris):
            path = local_path(uri)
            directory, _, name = path.rpartition("/")
            if name in ("", ".", "..") or "\x00" in name:
                found[at] = self._tail_or_failure(uri, length)
            else:
                in_directory.setdefault(directory, []).append((at, name, path))
        for directory, files in in_directory.items():
            directory_fd = _directory_fd(directory, uris[files[0][0]])
            read = False
            if directory_fd is not None:
                try:
                    read = _tails_in(directory_fd, files, uris, length, self._stats, found,
                                     share=len(files) >= _SHARED_FROM)
                finally:
                    os.close(directory_fd)
            if not read:
                for at, _, _ in files:
                    found[at] = self._tail_or_failure(uris[at], length)
        return cast("list[Tail | StorageError]", found)

    def _tail_or_failure(self, uri: str, length: int) -> Tail | StorageError:
        try:
            return self.get_tail(uri, length)
        except StorageError as exc:
            return exc

    def head(self, uri: str) -> ObjectInfo:
        try:  # O_PATH: the name itself, opened for its status only (a FIFO does not block, a final link is seen)
            fd = open_no_links(_path(uri), os.O_PATH | os.O_NOFOLLOW)
            try:
                st = os.fstat(fd)
            finally:
                os.close(fd)
        except (OSError, ValueError) as exc:
            raise _storage_error(exc, uri) from exc
        _refuse_unless_regular(st.st_mode, uri)
        return _info(uri, st)

    def list(self, prefix: str, recursive: bool = True) -> Iterator[ObjectInfo]:
        root = local_path(prefix)
        if os.path.islink(root):
            raise NotARegularFile("is a symbolic link to a directory; lancespec lists nothing through links",
                                  prefix)
        root = _path(prefix, directory=True)
        if not os.path.isdir(root):
            return iter(())
        found = sorted(self._walk(prefix.rstrip("/"), root, recursive), key=operator.attrgetter("uri"))
        if recursive and self._stats:
            self._stats = {}  # taken by the walk (a later listing lists as any would)
        return iter(found)

    def _walk(self, prefix: str, root: str, recursive: bool) -> Iterator[ObjectInfo]:
        """Every entry that is not a directory is listed (symbolic links, FIFOs and devices too, with their
        own size, so that a reader meets the refusal and says so); only real directories are entered,
        never a symbolic link to one, so a listing stays inside the tree. Entries that vanish between the
        directory read and the stat (another writer's staging file, a concurrent delete) are skipped: a
        listing is a moment's view, not an error. The walk keeps its own stack of directories to enter, so
        a tree nested thousands deep costs no recursion (issue 32: 2,000 levels under ``data/`` were a
        RecursionError)."""
        pending = [(prefix, root)]
        known = self._stats if recursive and self._stats else None
        while pending:
            directory_uri, directory = pending.pop()
            listed: list[ObjectInfo] = []  # each file's info made as its entry is read: nothing else kept per file
            below: list[str] = []
            try:
                fd = open_no_links(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
                try:
                    with os.scandir(fd) as entries:
                        for entry in entries:
                            name = entry.name
                            if entry.is_dir(follow_symlinks=False):
                                below.append(name)
                                continue
                            if known is not None and entry.is_file(follow_symlinks=False):  # the type read, no call
                                info = known.get(f"{directory_uri}/{name}")
                                if info is not None:  # read as a regular file by get_tails in this run
                                    listed.append(info)
                                    continue
                            with contextlib.suppress(FileNotFoundError):  # gone since the read: not listed
                                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                                # join's result: a name read from a directory holds no slash; interned, so
                                # that a large listing shares the URI strings of the files a manifest names
                                # (``reference.plain_fragments``): a million of them, 150 MB
                                listed.append(_info(sys.intern(f"{directory_uri}/{name}"), st))
                finally:
                    os.close(fd)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise _storage_error(exc, directory_uri) from exc
            if recursive:
                pending.extend((f"{directory_uri}/{name}", os.path.join(directory, name)) for name in below)
            yield from listed

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

    def put_if_absent(self, uri: str, data: bytes, *, resend: bool = True) -> None:
        path = local_path(uri)  # one system call: there is no answer to lose, so nothing is ever resent
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
