"""What the emulator tests (tests/emulators) share."""

from __future__ import annotations

from collections.abc import Mapping


def option_flags(options: Mapping[str, str]) -> list[str]:
    """``options`` as the command line takes them: ``--storage-option KEY=VALUE`` for each."""
    return [arg for key, value in options.items() for arg in ("--storage-option", f"{key}={value}")]
