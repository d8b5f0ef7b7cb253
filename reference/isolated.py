"""The Lance file codec (``lance.file.LanceFileReader``) run in a child process, so that untrusted bytes
cannot kill the judge.

The codec is native code: some damaged data files make it panic and abort the whole process (a NUL in a
schema field name is one). Every decode of a data file therefore happens in one long-lived child
(``python -m reference.isolated``), started on first use, limited in address space
(``Limits.codec_memory_bytes``) and in time per file (``Limits.codec_seconds``). A child that dies by a
signal, runs out of memory or time, is replaced by a fresh one for the next file, and the file it was
decoding is a FormatError naming it: a finding, not a crash (docs/security.md). The child reads its
requests from a pipe and exits when the pipe closes, so it never outlives its parent.

Protocol: one JSON line per request (``path``, ``columns``, ``storage_options``); the answer is one
status byte (``T`` a table as an Arrow IPC stream, ``E`` an error message in UTF-8), an 8-byte
little-endian length and the payload.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

import pyarrow as pa
import pyarrow.ipc as ipc

from .errors import FormatError
from .limits import DEFAULT_LIMITS, Limits

_HEADER = struct.Struct("<cQ")


def _answer(out: IO[bytes], status: bytes, payload: bytes) -> None:
    out.write(_HEADER.pack(status, len(payload)) + payload)
    out.flush()


def _decode_request(request: Mapping[str, Any]) -> bytes:
    from lance.file import LanceFileReader

    columns = request.get("columns")
    reader = LanceFileReader(request["path"], storage_options=request.get("storage_options") or None,
                             columns=list(columns) if columns is not None else None)
    table = reader.read_all().to_table()
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def serve(memory_bytes: int) -> None:
    """The child's loop: decode each requested file and answer, until standard input closes."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:  # a parent already limited below what was asked: keep its limit
        memory_bytes = min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; Ctrl-C reaches it, and it closes us
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            payload = _decode_request(json.loads(line))
        except MemoryError:
            _answer(out, b"E", f"the file codec needed more than {memory_bytes} bytes of memory".encode())
        except BaseException as exc:  # the codec's errors, pyo3 panics that unwind included
            _answer(out, b"E", f"{type(exc).__name__}: {exc}".encode("utf-8", "replace"))
        else:
            _answer(out, b"T", payload)


class CodecWorker:
    """One child process serving decodes, one at a time (a lock orders callers of several threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._memory: int | None = None

    def _start(self, memory_bytes: int) -> subprocess.Popen[bytes]:
        if self._child is not None and (self._child.poll() is not None or self._memory != memory_bytes):
            self._stop()
        if self._child is None:
            self._child = subprocess.Popen(
                [sys.executable, "-m", "reference.isolated", str(memory_bytes)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
            self._memory = memory_bytes
        return self._child

    def _stop(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        if child.stdin is not None:
            child.stdin.close()
        if child.poll() is None:
            child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()

    def close(self) -> None:
        """Stop the child (it is started again on the next decode)."""
        with self._lock:
            self._stop()

    def decode(self, path: str, columns: Sequence[str] | None, where: str,
               storage_options: Mapping[str, str] | None = None, limits: Limits = DEFAULT_LIMITS) -> pa.Table:
        """The table the codec reads from ``path`` (a local file or a URI with ``storage_options``): all
        columns, or ``columns``. Raises FormatError naming ``where`` when the codec refuses the file,
        crashes on it, or exceeds its memory or time."""
        request = json.dumps({"path": path, "columns": None if columns is None else list(columns),
                              "storage_options": dict(storage_options or {})}).encode() + b"\n"
        with self._lock:
            child = self._start(limits.codec_memory_bytes)
            try:
                assert child.stdin is not None and child.stdout is not None
                child.stdin.write(request)
                child.stdin.flush()
                status, payload = self._receive(child.stdout, time.monotonic() + limits.codec_seconds)
            except (OSError, EOFError, TimeoutError) as exc:
                why = (f"took more than {limits.codec_seconds} s (raise it with --codec-seconds)"
                       if isinstance(exc, TimeoutError) else self._death(child))
                self._stop()
                raise FormatError(f"the file codec {why} on this data file; the file is not decodable",
                                  where) from exc
        if status == b"E":
            raise FormatError(f"the file codec cannot decode the data file: {payload.decode('utf-8', 'replace')}",
                              where)
        return ipc.open_stream(pa.BufferReader(payload)).read_all()

    @staticmethod
    def _death(child: subprocess.Popen[bytes]) -> str:
        try:
            code = child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        if code < 0:
            return f"died by signal {signal.Signals(-code).name}"
        return f"exited with status {code}"

    @staticmethod
    def _receive(stream: IO[bytes], deadline: float) -> tuple[bytes, bytes]:
        fd = stream.fileno()
        buffer = bytearray()
        wanted = _HEADER.size
        header: tuple[bytes, int] | None = None
        while len(buffer) < wanted:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, max(65536, wanted - len(buffer)))
            if not chunk:
                raise EOFError
            buffer += chunk
            if header is None and len(buffer) >= _HEADER.size:
                header = _HEADER.unpack_from(buffer)
                wanted = _HEADER.size + header[1]
        assert header is not None
        return header[0], bytes(buffer[_HEADER.size:wanted])


_WORKER = CodecWorker()
atexit.register(_WORKER.close)


def decode_data_file(path: str, columns: Sequence[str] | None, where: str,
                     storage_options: Mapping[str, str] | None = None, limits: Limits = DEFAULT_LIMITS) -> pa.Table:
    """``CodecWorker.decode`` on the process's one worker."""
    return _WORKER.decode(path, columns, where, storage_options, limits)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
