"""Errors carry their writer-contract kind as data (reference/errors.py): every kind is one of the
contract's, the refusals the scenarios tell apart have kinds of their own, and the faults of lancespec
itself are no ``LanceSpecError`` (the command line exits 3 for them, 2 for a ``LanceSpecError``)."""

from __future__ import annotations

import inspect

from conformance.adapters.base import ContractError, ReaderError, WriterRefusal
from conformance.catalogue import CatalogueError
from conformance.certify import CertifyError
from conformance.corpus.breaches import CaseBuildError
from conformance.corpus.corpus import CorpusError
from conformance.divergences import DivergenceFileError
from conformance.scenarios.format import ScenarioError
from conformance.spark.session import SparkUnavailable
from conformance.traceability import MatrixError
from lancespec.render.dot import GraphvizError
from reference import errors
from reference.errors import ERROR_KINDS, LanceSpecError
from simulator.s3 import S3ServerError


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
    for cls in (CertifyError, CatalogueError, MatrixError, DivergenceFileError, WriterRefusal, ReaderError):
        assert not issubclass(cls, LanceSpecError), cls
    assert issubclass(errors.InvalidOption, LanceSpecError)


def test_each_part_owns_its_errors_under_the_common_root() -> None:
    """The harnesses' and tools' errors live beside the code that raises them (not in the reference) and
    are ``LanceSpecError``s, so the command line maps them to exit 2 without knowing them."""
    owned = (ScenarioError, ContractError, CaseBuildError, CorpusError, SparkUnavailable, S3ServerError, GraphvizError)
    for cls in owned:
        assert issubclass(cls, LanceSpecError), cls
        assert cls.__module__ != errors.__name__, cls
    reference_names = {c.__name__ for c in _classes()}
    faults = (CertifyError, CatalogueError, MatrixError, DivergenceFileError, WriterRefusal, ReaderError)
    assert reference_names.isdisjoint({c.__name__ for c in owned + faults})
