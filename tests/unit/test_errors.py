"""Errors carry their writer-contract kind as data (reference/errors.py): every kind is one of the
contract's, the refusals the scenarios tell apart have kinds of their own, and the faults of lancespec
itself are no ``LanceSpecError`` (the command line exits 3 for them, 2 for a ``LanceSpecError``)."""

from __future__ import annotations

import inspect

from lancespec.reference import errors
from lancespec.reference.errors import ERROR_KINDS, LanceSpecError


def _classes() -> list[type[BaseException]]:
    return [c for _, c in inspect.getmembers(errors, inspect.isclass)
            if issubclass(c, BaseException) and c.__module__ == errors.__name__]


def test_every_kind_is_a_contract_kind() -> None:
    kinds = {c.kind for c in _classes() if issubclass(c, LanceSpecError)}
    assert kinds <= set(ERROR_KINDS)
    assert kinds == set(ERROR_KINDS)  # and every contract kind has a class that refuses with it


def test_the_refusals_the_scenarios_tell_apart() -> None:
    assert errors.DuplicateBase.kind == "duplicate_base" and issubclass(errors.DuplicateBase, errors.InvalidBasePath)
    assert errors.InvalidBasePath.kind == "invalid_base_path"
    assert errors.EmptyOperation.kind == "empty_operation" and issubclass(errors.EmptyOperation,
                                                                          errors.ValidationError)
    for cls in (errors.RefNotFound, errors.VersionNotFound, errors.DatasetNotFound):
        assert cls.kind == "ref_not_found"
    assert errors.ValidationError.kind == errors.CleanupError.kind == "invalid_input"


def test_the_faults_of_lancespec_are_no_lancespec_error() -> None:
    for cls in (errors.CertifyError, errors.CatalogueError, errors.MatrixError, errors.WriterRefusal,
                errors.ReaderError):
        assert not issubclass(cls, LanceSpecError), cls
    assert issubclass(errors.InvalidOption, LanceSpecError)
