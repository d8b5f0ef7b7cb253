"""The JSON-lines writer contract's loop (docs/writer-contract.md), shared by the adapters beside it.

Each adapter runs as a script in its writer's own environment (tools/thirdparty_writers.py), so it imports
this module from its own folder and nothing from lancespec. An adapter is a ``Writer`` with one ``op_{name}``
method per operation it can express; ``serve`` answers each request line with one answer line, a ``Refused``
as a refusal of its kind, any other failure the writer raises as ``invalid_input`` (``dataset_exists`` when it
says so) in one line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

CONTRACT = "lancespec.writer/1"


class Refused(Exception):
    """A refusal with its writer-contract error kind (docs/writer-contract.md, "Errors")."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def failure(exc: BaseException, typed: bool = True) -> dict[str, str]:
    """A writer's own failure as the contract's error: its first line (``typed``: after its type's name)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    kind = "dataset_exists" if "already exists" in text else "invalid_input"
    return {"kind": kind, "message": f"{type(exc).__name__}: {text}" if typed else text}


class ModeWriter:
    """A writer whose create, append and overwrite are one call with a mode (``write(m, mode)``), as the
    dataframe engines' ``write_lance`` is: ``hello`` checks the contract and keeps the storage options,
    ``bye`` answers nothing. A subclass names itself (``writer``), says its version (``version``) and writes."""

    writer = ""
    #: The mode a ``create`` is written with (polars-lance calls it ``error``: fail when the dataset exists).
    create_mode = "create"

    def __init__(self) -> None:
        self.options: dict[str, str] = {}

    def version(self) -> str:
        raise NotImplementedError

    def write(self, m: dict[str, Any], mode: str) -> dict[str, Any]:
        raise NotImplementedError

    def op_hello(self, m: dict[str, Any]) -> dict[str, Any]:
        if m.get("contract") != CONTRACT:
            raise Refused("invalid_input", f"this writer speaks {CONTRACT}, not {m.get('contract')}")
        self.options = dict(m.get("storage_options") or {})
        return {"writer": self.writer, "version": self.version()}

    def op_bye(self, m: dict[str, Any]) -> dict[str, Any]:
        return {}

    def op_create(self, m: dict[str, Any]) -> dict[str, Any]:
        return self.write(m, self.create_mode)

    def op_append(self, m: dict[str, Any]) -> dict[str, Any]:
        return self.write(m, "append")

    def op_overwrite(self, m: dict[str, Any]) -> dict[str, Any]:
        return self.write(m, "overwrite")


def serve(writer: Any, unsupported: Callable[[str], str], *,
          caught: type[BaseException] | tuple[type[BaseException], ...] = Exception, typed: bool = True,
          out: TextIO | None = None) -> int:
    """Answer the requests on stdin until ``bye``: ``unsupported(op)`` says why an operation without a method is
    refused; ``caught``: the failures of the writer answered as errors (others end the process, as they
    should: a bug of the adapter); ``out``: where answers go (default stdout)."""
    answers = out or sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        op = message.get("op")
        handler = getattr(writer, f"op_{op}", None)
        try:
            if handler is None:
                raise Refused("unsupported", unsupported(op))
            answer = {"id": message.get("id"), "ok": True, "result": handler(message)}
        except Refused as exc:
            answer = {"id": message.get("id"), "ok": False, "error": {"kind": exc.kind, "message": str(exc)}}
        except (KeyboardInterrupt, SystemExit):
            raise
        except caught as exc:
            answer = {"id": message.get("id"), "ok": False, "error": failure(exc, typed)}
        answers.write(json.dumps(answer, ensure_ascii=False, default=str) + "\n")
        answers.flush()
        if op == "bye":
            break
    return 0
