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
