"""Every implementation under its name: ``get("pylance")`` wherever a writer or reader is named (certify-writer,
fixtures verify, the simulator's writer processes, the property machine).

A module of this package that defines an implementation registers it (``register(Class)`` at its end) and is
found by listing the package, so adding a writer is one module here plus its capability file beside it
(``lancedb.py`` + ``lancedb.toml`` for LanceDB). A writer kept elsewhere (a test's toy) registers itself when
its module is imported; ``origin`` names that module, so that a spawned process can import it again.
``cmd:COMMAND`` names a writer in another process (``external``), with an optional capability file.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path
from typing import TYPE_CHECKING

from reference.errors import InvalidOption

if TYPE_CHECKING:
    from .base import Implementation

__all__ = ["get", "names", "origin", "register"]

_IMPLEMENTATIONS: dict[str, type[Implementation]] = {}
_SHARED = {"base", "registry", "external"}  # modules of this package that hold no named implementation


def register(cls: type[Implementation]) -> type[Implementation]:
    """Make ``cls`` available under ``cls.name``."""
    if not cls.name or cls.name.startswith("cmd:"):
        raise ValueError(f"an implementation needs a plain name, got {cls.name!r}")
    _IMPLEMENTATIONS[cls.name] = cls
    return cls


@functools.cache
def _scan() -> None:
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name not in _SHARED:
            importlib.import_module(f"{__package__}.{module.name}")


def names() -> list[str]:
    """The registered names (every module of this package, and whatever else registered itself)."""
    _scan()
    return sorted(_IMPLEMENTATIONS)


def get(name: str, capabilities: str | None = None) -> Implementation:
    """The implementation called ``name`` (or ``cmd:COMMAND``); ``capabilities``: a capability file to use
    instead of its own. InvalidOption for an unknown name, ContractError for an unusable capability file."""
    from .base import Capabilities, ContractError

    try:
        caps = Capabilities.load(capabilities) if capabilities else None
    except OSError as exc:
        raise ContractError(f"cannot read the capability file: {exc.strerror or exc}", capabilities) from exc
    except ValueError as exc:  # its rules, or TOML syntax (tomllib's error is a ValueError)
        reason = str(exc).removeprefix(f"{capabilities}: ")
        raise ContractError(f"unusable capability file: {reason}", capabilities) from exc
    if name.startswith("cmd:") and name[4:].strip():
        from .external import ExternalImplementation

        return ExternalImplementation(name[4:].strip(), caps)
    if name not in _IMPLEMENTATIONS:
        _scan()
    if name not in _IMPLEMENTATIONS:
        raise InvalidOption(f"unknown writer {name!r}: use {', '.join(names())} or cmd:COMMAND")
    return _IMPLEMENTATIONS[name](caps)


def origin(name: str) -> str:
    """The module that registered ``name`` (import it to register it again in a new process)."""
    get(name)
    return _IMPLEMENTATIONS[name].__module__

