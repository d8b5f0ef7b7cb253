"""A pytest plugin so a writer's own test suite can certify what it writes.

Installed with lancespec (entry point ``pytest11``). It offers:

- the ``lance_certify`` fixture: ``lance_certify(uri, version=None, all_versions=True, storage_options=None,
  areas=None, ignore=(), baseline=(), since=None)`` certifies a dataset and fails the test with the report
  (what breaches a MUST requirement, what was set aside) when it is not conformant; it returns the ``Report``
  otherwise (``since``: an earlier run's JSON report, an incremental run: ``conformance.since``);
- the option ``--lance-certify URI`` (repeatable): each URI becomes a test item of its own, node id
  ``lance-certify::URI`` (JUnit classname ``lance-certify``, name the URI), so
  ``pytest --lance-certify=/data/ds1 --lance-certify=s3://b/ds2 -p no:cacheprovider`` certifies datasets
  with pytest's reporting (JUnit with ``--junitxml``). Write ``--lance-certify=URI`` as one word: pytest
  chooses its rootdir and configuration file before it loads plugins, and takes a separate local path for a
  test path (a warning says so).

Settings, in any pytest configuration file (``[tool.pytest.ini_options]`` of pyproject.toml, pytest.ini,
tox.ini, setup.cfg), one value a line, used by the items and as the fixture's defaults (an argument given to
the fixture replaces the setting): ``lance_certify_storage_options`` (KEY=VALUE), ``lance_certify_areas``,
``lance_certify_ignore`` (requirement or known divergence ids) and ``lance_certify_baseline`` (baseline
files, relative to the configuration file). ``--lance-certify-option KEY=VALUE``,
``--lance-certify-ignore ID`` and ``--lance-certify-baseline FILE`` add to them from the command line.

A mistake in these (a malformed option, an unknown area or id, a baseline that cannot be read, a local
dataset that does not exist) is a usage error: one line, exit 4. A failure shows the certify report only,
without the plugin's frames; a dataset that cannot be read fails its item with one line saying why.

A setup that keeps the plugin from reading a dataset (``errors.CannotRead``: storage options, access, a
missing bucket or dataset, a limit) is no breach: the fixture raises that error, which names no requirement,
and an item fails with one line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reference.errors import CannotRead, InvalidOption, LanceSpecError
from reference.store.option_keys import parse_storage_options

from .findings import Report

ITEM_PREFIX = "lance-certify"


class CertificationFailed(AssertionError):
    """A dataset breaches MUST requirements (or cannot be read or judged); the message is the certify report."""


#: One baseline file, or several.
Baselines = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def certify_or_fail(uri: str, *, version: int | None = None, all_versions: bool = True,
                    storage_options: Mapping[str, str] | None = None, areas: Iterable[str] | None = None,
                    ignore: Iterable[str] = (), baseline: Baselines = (),
                    since: str | os.PathLike[str] | None = None) -> Report:
    """Certify ``uri``; raise CertificationFailed (an AssertionError) unless it is conformant. ``ignore``:
    requirement or known divergence ids to set aside (``--ignore``); ``baseline``: baseline files
    (``--baseline``), one or several (``conformance.baseline``); ``since``: an earlier run's JSON report
    (``--since``: ``conformance.since``; write one with ``report.render_json``). InvalidOption for an
    unknown id or a baseline that cannot be read; ``since.SinceRefused`` for a report that cannot be the
    basis of an incremental run."""
    __tracebackhide__ = True
    from .baseline import set_aside_ids
    from .certify import certify
    from .report import render_text

    files = [baseline] if isinstance(baseline, str | os.PathLike) else list(baseline)
    set_aside = set_aside_ids(list(ignore), [os.fspath(f) for f in files])
    report = certify(uri, version=version, all_versions=all_versions and version is None,
                     storage_options=storage_options, areas=areas, set_aside=set_aside,
                     since=os.fspath(since) if since is not None else None)
    if not report.conformant:
        raise CertificationFailed(render_text(report))
    return report


@dataclass(frozen=True)
class Settings:
    """What the configuration and the command line set for every certification of the session."""

    storage_options: dict[str, str] = field(default_factory=dict)
    areas: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    baseline: list[str] = field(default_factory=list)

    def arguments(self) -> dict[str, Any]:
        """``certify_or_fail``'s keyword arguments."""
        return {"storage_options": self.storage_options, "areas": self.areas, "ignore": self.ignore,
                "baseline": self.baseline}


_SETTINGS = pytest.StashKey[Settings]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lancespec", "Lance dataset certification (lancespec)")
    group.addoption("--lance-certify", action="append", default=[], metavar="URI",
                    help="certify the Lance dataset at URI as a test item; repeat for more")
    group.addoption("--lance-certify-option", action="append", default=[], metavar="KEY=VALUE",
                    help="a storage option for the datasets certified (aws_endpoint=..., ...); repeat")
    group.addoption("--lance-certify-ignore", action="append", default=[], metavar="ID",
                    help="set aside the findings of a requirement or known divergence (as certify --ignore)")
    group.addoption("--lance-certify-baseline", action="append", default=[], metavar="FILE",
                    help="set aside the findings a baseline file lists (as certify --baseline)")
    parser.addini("lance_certify_storage_options", "storage options for certified datasets, KEY=VALUE a line",
                  type="linelist", default=[])
    parser.addini("lance_certify_areas", "the check areas to run (default: all), one a line", type="linelist",
                  default=[])
    parser.addini("lance_certify_ignore", "requirement or known divergence ids to set aside, one a line",
                  type="linelist", default=[])
    parser.addini("lance_certify_baseline", "baseline files (relative to the configuration file), one a line",
                  type="linelist", default=[])


def _settings(config: pytest.Config) -> Settings:
    """The session's settings, checked: InvalidOption names the first mistake."""
    from .baseline import set_aside_ids
    from .checks import all_checks

    here = config.inipath.parent if config.inipath is not None else config.rootpath
    options = parse_storage_options([*config.getini("lance_certify_storage_options"),
                                     *config.getoption("--lance-certify-option")],
                                    "lance_certify_storage_options / --lance-certify-option")
    areas = list(config.getini("lance_certify_areas")) or None
    known = sorted({c.area for c in all_checks().values()})
    if unknown := sorted(set(areas or ()) - set(known)):
        raise InvalidOption(f"unknown area(s) {', '.join(unknown)} in lance_certify_areas; choose from "
                            f"{', '.join(known)}")
    baseline = [str(here / b) for b in config.getini("lance_certify_baseline")]
    baseline += [os.path.abspath(b) for b in config.getoption("--lance-certify-baseline")]
    ignore = [*config.getini("lance_certify_ignore"), *config.getoption("--lance-certify-ignore")]
    set_aside_ids(ignore, baseline)  # reads and checks them now: a mistake stops the session, not each test
    return Settings(options, areas, ignore, baseline)


def _wanted(config: pytest.Config) -> bool:
    """Whether the session certifies anything through the plugin's options or settings."""
    names = ("lance_certify_storage_options", "lance_certify_areas", "lance_certify_ignore", "lance_certify_baseline")
    return bool(config.getoption("--lance-certify") or config.getoption("--lance-certify-option")
                or config.getoption("--lance-certify-ignore") or config.getoption("--lance-certify-baseline")
                or any(config.getini(name) for name in names))


def pytest_configure(config: pytest.Config) -> None:
    """Check the settings and the local datasets named once, before any test runs: a mistake is a usage
    error (one line, exit 4)."""
    if not _wanted(config):
        config.stash[_SETTINGS] = Settings()
        return
    from reference.store.uri import local_path, scheme_of

    try:
        config.stash[_SETTINGS] = _settings(config)
    except InvalidOption as exc:
        raise pytest.UsageError(f"lancespec: {exc.message}") from None
    for uri in config.getoption("--lance-certify"):
        if scheme_of(uri) == "file" and not Path(local_path(uri)).is_dir():
            raise pytest.UsageError(f"--lance-certify {uri}: no such directory (give a dataset root: a local "
                                    "directory, file:// or s3:// URI)")
    _warn_if_taken_for_a_test_path(config)


def _warn_if_taken_for_a_test_path(config: pytest.Config) -> None:
    """pytest chooses its rootdir and configuration file before any plugin is loaded, taking the value of
    ``--lance-certify URI`` (two words) for a test path: a local dataset outside the working directory then
    moves the rootdir up (node ids shown as ``../lance-certify::URI``) and the configuration file of the
    working directory is not read. Say so, with the fix: ``--lance-certify=URI``."""
    args = list(config.invocation_params.args)
    here = config.invocation_params.dir
    outside = [uri for i, uri in enumerate(args[1:]) if args[i] == "--lance-certify" and Path(uri).is_dir()
               and here not in (Path(uri).resolve(), *Path(uri).resolve().parents)]
    if outside:
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"pytest took --lance-certify {outside[0]} for a test path when it chose its rootdir "
            f"({config.rootpath}) and configuration file; write --lance-certify=URI (one word)"), stacklevel=2)


@pytest.fixture
def lance_certify(request: pytest.FixtureRequest) -> Callable[..., Report]:
    """Certify a dataset inside a test (``certify_or_fail``, with the session's settings as defaults); fails
    the test when a MUST requirement is breached."""
    defaults = request.config.stash.get(_SETTINGS, Settings()).arguments()

    def run(uri: str, **arguments: Any) -> Report:
        __tracebackhide__ = True
        return certify_or_fail(uri, **{**defaults, **arguments})

    return run


class CertifyItem(pytest.Item):
    """One dataset given with --lance-certify."""

    def __init__(self, *, uri: str, settings: Settings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.uri = uri
        self.settings = settings

    def runtest(self) -> None:
        certify_or_fail(self.uri, **self.settings.arguments())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        """The certify report for a failed certification, one line for a dataset that cannot be read or an
        internal error of lancespec; the traceback only for anything else."""
        from .certify import CertifyError

        if isinstance(excinfo.value, CertificationFailed):
            return str(excinfo.value)
        if isinstance(excinfo.value, CannotRead):  # the setup, not the dataset: one line, no requirement id
            return f"cannot read: {excinfo.value}"
        if isinstance(excinfo.value, LanceSpecError):
            return f"cannot certify {self.uri}: {excinfo.value}"
        if isinstance(excinfo.value, CertifyError):
            return f"lancespec internal error (a bug in lancespec) certifying {self.uri}: {excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return self.uri, None, f"{ITEM_PREFIX} {self.uri}"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    uris: list[str] = config.getoption("--lance-certify")
    settings = config.stash.get(_SETTINGS, Settings())
    for uri in uris:
        items.append(CertifyItem.from_parent(session, name=uri, nodeid=f"{ITEM_PREFIX}::{uri}", uri=uri,
                                             settings=settings))
