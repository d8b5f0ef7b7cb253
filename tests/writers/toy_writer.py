"""A toy writer for tests/writers/test_toy_writer.py: the reference writer under another name, declaring fewer
features in toy_writer.toml beside it. This module and that file are all that adding a writer takes."""

from __future__ import annotations

from conformance.adapters import registry
from conformance.adapters.reference import ReferenceImplementation


class ToyImplementation(ReferenceImplementation):
    name = "toy"

    def version(self) -> str:
        return "toy 0.1"


registry.register(ToyImplementation)
