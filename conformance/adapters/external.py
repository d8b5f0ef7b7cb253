"""A writer or reader in another process, behind the JSON-lines contract (docs/writer-contract.md):
``cmd:COMMAND``.

The process reads one JSON object per line on stdin and answers each with one line on stdout:
``{"id": n, "ok": true, "result": {...}}`` or ``{"id": n, "ok": false, "error": {"kind", "message"}}``.
The first message is ``hello`` (contract version, storage options); the last is ``bye``. Anything the
process writes to stderr is kept and shown when it breaks the contract. ``message`` writes an operation of
the language as the contract's message (locations resolved to URIs, rows to explicit columns).
"""

from __future__ import annotations

import base64
import contextlib
import json
import queue
import shlex
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from typing import IO, Any

import pyarrow as pa

from conformance import operations as lang
from conformance.payload import columns

from . import base
from .base import CONTRACT, Capabilities, ContractError, Implementation, Site, WriterRefusal

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

    def _broken(self, what: str) -> ContractError:
        self._stderr.seek(0)
        tail = self._stderr.read()[-600:].strip()
        return ContractError(f"{what}" + (f"; stderr: {tail}" if tail else ""), self.command)

    def request(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Send one message and return the answer object (``ok`` true or false)."""
        self._next_id += 1
        payload = {**message, "id": self._next_id}
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
                self._lines.put(None)  # the end stays seen: a later request (the ``bye`` of close) fails at once
                raise self._broken(f"the process exited (status {self._proc.poll()}) before answering "
                                   f"{payload['op']!r}")
            if not line.strip():
                continue
            try:
                answer = json.loads(line)
            except json.JSONDecodeError as exc:
                raise self._broken(f"answer is not JSON: {line.strip()[:200]!r}") from exc
            if not isinstance(answer, dict) or answer.get("id") != payload["id"] \
                    or not isinstance(answer.get("ok"), bool):
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
    return proc.call({"op": "hello", "contract": CONTRACT, "role": role, "storage_options": dict(storage_options)})


def message(op: lang.Operation, site: Site) -> dict[str, Any]:
    """The contract message of ``op`` (docs/writer-contract.md "Writer operations"): its wire name, the root it
    acts on, and its arguments in the contract's words."""
    if not op.external:
        raise WriterRefusal("invalid_input", f"the JSON-lines contract has no {type(op).__name__} operation")
    root = op.root
    family, branch = lang.split_root(root)
    uri = base.resolve(site, root)
    out: dict[str, Any] = {"op": op.wire, "dataset": root, "uri": uri, "main_uri": base.resolve(site, family),
                           "on_branch": branch}
    if isinstance(op, lang.Create | lang.Append | lang.Overwrite):
        out["data"] = columns(op.start, op.count, op.data, lambda location: base.resolve(site, location))
        out.update(base.write_targets(site, op, uri))
    if isinstance(op, lang.Create):
        out.update(manifest_naming=op.manifest_naming, data_storage_version=op.data_storage_version)
    if isinstance(op, lang.Create | lang.AddBase | lang.AddBases):
        out["bases"] = [{"path": base.registered_path(site, b), "name": b.name, "is_dataset_root": b.is_dataset_root,
                         "id": b.id} for b in op.bases]
    if isinstance(op, lang.Delete):
        out["predicate"] = op.predicate
    if isinstance(op, lang.Tag | lang.DeleteTag):
        out["tag"] = op.name
    if isinstance(op, lang.Branch | lang.DeleteBranch):
        out["branch"] = op.name
    if isinstance(op, lang.Tag | lang.Branch | lang.ShallowClone | lang.DeepClone):
        ref = lang.reference_of(op)
        out["reference"] = ref if isinstance(ref, str) else {"branch": ref[0], "version": ref[1]}
    if isinstance(op, lang.ShallowClone | lang.DeepClone):
        out["target_uri"] = base.resolve(site, op.target)
    if isinstance(op, lang.Relocate):
        from reference.table import Dataset

        keys = base.base_keys(site, [old for old, _ in op.moves], lambda: Dataset(uri, site.storage).snapshot().bases)
        out["moves"] = {key: base.resolve(site, new) for key, (_, new) in zip(keys, op.moves, strict=True)}
        out["adopt_from"] = None if op.adopt_from is None else base.resolve(site, op.adopt_from)
    if isinstance(op, lang.Cleanup):
        out.update(retain_versions=op.retain_versions, delete_unverified=op.delete_unverified,
                   error_if_tagged_old_versions=op.error_if_tagged)
        if op.older_than_zero:
            out["older_than_seconds"] = 0
    return out


class ExternalSession:
    def __init__(self, command: str, site: Site) -> None:
        self.site = site
        self.proc = JsonLinesProcess(command)
        try:
            self.info = hello(self.proc, site.options, "writer")
        except (ContractError, WriterRefusal):
            self.proc.close()
            raise

    def apply(self, operation: lang.Operation) -> dict[str, Any]:
        return self.proc.call(message(operation, self.site))

    def close(self) -> None:
        self.proc.close()


class CommandReader:
    """The reader half of the contract: ``read`` answers ``{"num_rows", "columns": [{"name", "values"}], "blobs":
    {col: [base64 | null]}}``, ``files`` (optional) ``{"files": [...]}``; binary values are ``{"base64": ...}``."""

    def __init__(self, command: str) -> None:
        self.name = f"cmd:{command}"
        self.proc = JsonLinesProcess(command)
        hello(self.proc, {}, "reader")

    def read(self, target: base.Target) -> base.ReadResult:
        request = {"op": "read", "uri": target.root, "version": target.version, "tag": target.tag,
                   "branch": target.branch, "blob_columns": list(target.blob_columns)}
        try:
            result = self.proc.call(request)
        except WriterRefusal as exc:
            raise base.ReaderError(exc.message) from exc
        arrays = {}
        for col in result.get("columns", []):
            arrays[col["name"]] = pa.array([base64.b64decode(v["base64"]) if isinstance(v, dict) and "base64" in v
                                            else v for v in col["values"]])
        blobs = {name: [None if v is None else base64.b64decode(v) for v in values]
                 for name, values in dict(result.get("blobs", {})).items()}
        try:
            files: list[str] | None = sorted(self.proc.call({**request, "op": "files"}).get("files", []))
        except WriterRefusal:
            files = None
        return base.ReadResult(pa.table(arrays) if arrays else pa.table({}), blobs, files)

    def close(self) -> None:
        self.proc.close()


class ExternalImplementation(Implementation):
    """``cmd:COMMAND``: a writer in any language (one process per session). Without a capability file it is
    taken to support every operation of the contract."""

    def __init__(self, command: str, capabilities: Capabilities | None = None) -> None:
        super().__init__(capabilities or Capabilities(
            f"cmd:{command}", {"two_phase": "the JSON-lines contract has no two-phase write"}))
        self.command = command
        self.name = f"cmd:{command}"
        self._version: str | None = None

    def version(self) -> str:
        if self._version is None:
            session = ExternalSession(self.command, base.Folder(""))
            try:
                self._version = f"{session.info.get('writer', '?')} {session.info.get('version', '')}".strip()
            finally:
                session.close()
        return self._version

    def open(self, site: Site) -> ExternalSession:
        return ExternalSession(self.command, site)

    def reader(self) -> CommandReader:
        return CommandReader(self.command)
