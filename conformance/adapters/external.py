"""An external process behind the JSON-lines contract (docs/writer-contract.md): ``cmd:COMMAND``.

The process reads one JSON object per line on stdin and answers each with one line on stdout:
``{"id": n, "ok": true, "result": {...}}`` or ``{"id": n, "ok": false, "error": {"kind", "message"}}``.
The first message is ``hello`` (contract version, storage options); the last is ``bye``. Anything the
process writes to stderr is kept and shown when it breaks the contract.
"""

from __future__ import annotations

import contextlib
import json
import queue
import shlex
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from typing import IO, Any

from .base import CONTRACT, Capabilities, ContractError, WriterRefusal

DEFAULT_TIMEOUT = 120.0


class JsonLinesProcess:
    """One running process speaking the contract."""

    def __init__(self, command: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.command = command
        self.timeout = timeout
        self._stderr: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed in close())
        try:
            self._proc = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, text=True, encoding="utf-8", bufsize=1)
        except OSError as exc:
            raise ContractError(f"cannot start {command!r}: {exc}") from exc
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 0

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def stderr_tail(self, limit: int = 600) -> str:
        self._stderr.seek(0)
        text = self._stderr.read()
        return text[-limit:].strip()

    def _broken(self, what: str) -> ContractError:
        tail = self.stderr_tail()
        return ContractError(f"{what}" + (f"; stderr: {tail}" if tail else ""), self.command)

    def request(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Send one message and return the answer object (``ok`` true or false)."""
        self._next_id += 1
        payload = dict(message)
        payload["id"] = self._next_id
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(payload, ensure_ascii=False) + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise self._broken(f"the process closed its input ({exc})") from exc
        while True:
            try:
                line = self._lines.get(timeout=self.timeout)
            except queue.Empty:
                raise self._broken(f"no answer to {payload['op']!r} within {self.timeout:.0f}s") from None
            if line is None:
                raise self._broken(f"the process exited (status {self._proc.poll()}) before answering "
                                   f"{payload['op']!r}")
            if not line.strip():
                continue
            try:
                answer = json.loads(line)
            except json.JSONDecodeError as exc:
                raise self._broken(f"answer is not JSON: {line.strip()[:200]!r}") from exc
            if not isinstance(answer, dict) or answer.get("id") != payload["id"] or not isinstance(answer.get("ok"),
                                                                                                   bool):
                raise self._broken(f"answer must be {{'id': {payload['id']}, 'ok': true|false, ...}}, got "
                                   f"{line.strip()[:200]!r}")
            return answer

    def call(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """``request``, raising WriterRefusal for an error answer; returns ``result``."""
        answer = self.request(message)
        if answer["ok"]:
            result = answer.get("result") or {}
            return dict(result) if isinstance(result, dict) else {"value": result}
        error = answer.get("error") or {}
        if not isinstance(error, dict):
            error = {"message": str(error)}
        raise WriterRefusal(str(error.get("kind", "invalid_input")), str(error.get("message", "")))

    def close(self) -> None:
        if self._proc.poll() is None:
            with contextlib.suppress(ContractError, WriterRefusal):
                self.request({"op": "bye"})
            try:
                if self._proc.stdin:
                    self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._stderr.close()


def hello(proc: JsonLinesProcess, storage_options: Mapping[str, str], role: str) -> dict[str, Any]:
    result = proc.call({"op": "hello", "contract": CONTRACT, "role": role, "storage_options": dict(storage_options)})
    return result


class ExternalSession:
    def __init__(self, command: str, storage_options: Mapping[str, str]) -> None:
        self.proc = JsonLinesProcess(command)
        try:
            self.info = hello(self.proc, storage_options, "writer")
        except (ContractError, WriterRefusal):
            self.proc.close()
            raise

    def apply(self, message: Mapping[str, Any]) -> dict[str, Any]:
        return self.proc.call(message)

    def close(self) -> None:
        self.proc.close()


class ExternalWriter:
    """``cmd:COMMAND``: a writer in any language (one process per scenario run)."""

    def __init__(self, command: str, capabilities: Capabilities | None = None) -> None:
        self.command = command
        self.name = f"cmd:{command}"
        self.capabilities = capabilities or Capabilities(writer=self.name)
        self._version: str | None = None

    def version(self) -> str:
        if self._version is None:
            session = ExternalSession(self.command, {})
            try:
                self._version = f"{session.info.get('writer', '?')} {session.info.get('version', '')}".strip()
            finally:
                session.close()
        return self._version

    def open(self, storage_options: Mapping[str, str]) -> ExternalSession:
        return ExternalSession(self.command, storage_options)
