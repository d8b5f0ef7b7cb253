"""A pytest plugin so a writer's own test suite can certify what it writes.

Installed with lancespec (entry point ``pytest11``). It offers:

- the ``lance_certify`` fixture: ``lance_certify(uri, version=None, all_versions=True, storage_options=None,
  areas=None)`` certifies a dataset and fails the test with a readable list when a MUST requirement is
  breached (or a version cannot be read); it returns the ``Report`` otherwise. A setup that keeps it from
  reading (``errors.CannotRead``: storage options, access, a missing bucket or dataset, a limit) raises that
  error, which names no requirement;
- the option ``--lance-certify URI`` (repeatable): each URI becomes a test item of its own, so
  ``pytest --lance-certify /data/ds1 --lance-certify s3://b/ds2 -p no:cacheprovider`` certifies datasets
  with pytest's reporting (JUnit with ``--junitxml``). ``--lance-certify-option KEY=VALUE`` passes storage
  options to them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from lancespec.reference.errors import CannotRead, InvalidOption
from lancespec.reference.store.option_keys import parse_storage_options

from .certify import certify
from .findings import Report
from .report import render_text


class CertificationFailed(AssertionError):
    """A dataset breaches MUST requirements; the message lists every finding."""


def certify_or_fail(uri: str, *, version: int | None = None, all_versions: bool = True,
                    storage_options: Mapping[str, str] | None = None,
                    areas: Iterable[str] | None = None) -> Report:
    """Certify ``uri``; raise CertificationFailed (an AssertionError) unless it is conformant."""
    report = certify(uri, version=version, all_versions=all_versions and version is None,
                     storage_options=storage_options, areas=areas)
    if not report.conformant:
        raise CertificationFailed(render_text(report))
    return report


@pytest.fixture
def lance_certify() -> Callable[..., Report]:
    """Certify a dataset inside a test; fails the test when a MUST requirement is breached."""
    return certify_or_fail


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lancespec", "Lance dataset certification (lancespec)")
    group.addoption("--lance-certify", action="append", default=[], metavar="URI",
                    help="certify the Lance dataset at URI as a test item; repeat for more")
    group.addoption("--lance-certify-option", action="append", default=[], metavar="KEY=VALUE",
                    help="a storage option for --lance-certify datasets (aws_endpoint=..., ...)")


class CertifyItem(pytest.Item):
    """One dataset given with --lance-certify."""

    def __init__(self, *, uri: str, storage_options: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.uri = uri
        self.storage_options = dict(storage_options)

    def runtest(self) -> None:
        certify_or_fail(self.uri, storage_options=self.storage_options)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, CertificationFailed):
            return str(excinfo.value)
        if isinstance(excinfo.value, CannotRead):  # the setup, not the dataset: one line, no requirement id
            return f"cannot read: {excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return self.uri, None, f"lance-certify {self.uri}"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    uris: list[str] = config.getoption("--lance-certify")
    if not uris:
        return
    try:
        options = parse_storage_options(config.getoption("--lance-certify-option"), "--lance-certify-option")
    except InvalidOption as exc:
        raise pytest.UsageError(str(exc)) from None
    for uri in uris:
        items.append(CertifyItem.from_parent(session, name=f"lance-certify[{uri}]", uri=uri,
                                             storage_options=options))
