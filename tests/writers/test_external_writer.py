"""The JSON-lines contract: the example writer (pylance in a separate process) is certified like the
others, on every scenario and both stores, and a process that breaks the contract fails the step with a
reason instead of hanging."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.adapters.base import Capabilities, ContractError, Site, WriterRefusal
from conformance.adapters.external import ExternalImplementation, ExternalSession, JsonLinesProcess
from conformance.operations import Operation
from conformance.scenarios import builtin_scenarios
from conformance.scenarios.certify_writer import certify_writer, make_writer, render_text
from conformance.scenarios.runner import FAIL, XFAIL

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "external_writer.py"
EXAMPLE_CAPABILITIES = ROOT / "examples" / "external_writer.capabilities.toml"

SUBSET = ("bases-round-robin", "blobs-all-kinds", "clone-after-tag", "branch-of-branch", "refuse-missing-refs",
          "tag-unusual-names", "cleanup-keeps-tags", "relocate-base")


@pytest.mark.interop
def test_example_writer_is_certified(tmp_path: Path) -> None:
    writer = make_writer(f"cmd:{sys.executable} {EXAMPLE}", str(EXAMPLE_CAPABILITIES))
    scenarios = [s for s in builtin_scenarios() if s.name in SUBSET]
    report = certify_writer(writer, scenarios, stores=["local"], workdir=str(tmp_path))
    assert report.exit_code == 0, render_text(report)
    assert report.writer_version.startswith("external-pylance-example")
    runs = {r.scenario: r for r in report.runs}
    assert runs["clone-after-tag"].compare is not None and runs["clone-after-tag"].compare.outcome == "pass"
    assert any(r.outcome == XFAIL and r.finding == "F-006" for r in runs["tag-unusual-names"].results)


class _OneProcess(ExternalImplementation):
    """The example writer kept in one process for every run of a test: the same messages without starting
    Python and pylance once per scenario (the contract allows one process per run, not more)."""

    def __init__(self) -> None:
        super().__init__(f"{sys.executable} {EXAMPLE}", Capabilities.load(EXAMPLE_CAPABILITIES))
        self.session: ExternalSession | None = None

    def open(self, site: Site) -> ExternalSession:
        if self.session is None:
            self.session = ExternalSession(self.command, site)
        self.session.site = site
        return _Kept(self.session)  # type: ignore[return-value]


class _Kept:
    def __init__(self, session: ExternalSession) -> None:
        self.session = session

    def apply(self, operation: Operation) -> dict[str, Any]:
        return self.session.apply(operation)

    def close(self) -> None:
        pass


@pytest.mark.interop
@pytest.mark.parametrize("store", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_example_writer_on_every_scenario(store: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Every scenario on each store through the contract, without the comparison with the reference (made by
    ``test_example_writer_is_certified`` and, for the pylance underneath, by test_certify_writer.py)."""
    scenarios = [s for s in builtin_scenarios() if store in s.stores]
    options: dict[str, Any] = {}
    if store == "s3":
        server = request.getfixturevalue("s3_server")
        options = {"s3_options": server.storage_options(), "create_bucket": server.create_bucket}
    writer = _OneProcess()
    try:
        report = certify_writer(writer, scenarios, stores=[store], workdir=str(tmp_path), compare=False, **options)
    finally:
        if writer.session is not None:
            writer.session.close()
    assert report.exit_code == 0, render_text(report)
    assert len(report.runs) == len(scenarios)
    assert any(r.outcome == XFAIL for run in report.runs for r in run.results)


def test_contract_violations_are_reported(tmp_path: Path) -> None:
    silent = tmp_path / "silent.py"
    silent.write_text("import sys\nfor line in sys.stdin:\n    print('not json', flush=True)\n")
    proc = JsonLinesProcess(f"{sys.executable} {silent}", timeout=10)
    with pytest.raises(ContractError, match="not JSON"):
        proc.call({"op": "hello"})
    proc.close()
    dying = tmp_path / "dying.py"
    dying.write_text("import sys\nsys.stderr.write('boom: no lance here')\nsys.exit(3)\n")
    proc = JsonLinesProcess(f"{sys.executable} {dying}", timeout=10)
    with pytest.raises(ContractError, match="boom: no lance here"):
        proc.call({"op": "hello"})
    proc.close()
    refusing = tmp_path / "refusing.py"
    refusing.write_text("import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n"
                        "    print(json.dumps({'id': m['id'], 'ok': False, 'error': {'kind': 'ref_exists', "
                        "'message': 'no'}}), flush=True)\n")
    proc = JsonLinesProcess(f"{sys.executable} {refusing}", timeout=10)
    with pytest.raises(WriterRefusal) as info:
        proc.call({"op": "create"})
    assert info.value.kind == "ref_exists"
    proc.close()


def test_a_writer_that_dies_fails_the_scenario(tmp_path: Path) -> None:
    dying = tmp_path / "dying.py"
    dying.write_text("import sys\nsys.exit(0)\n")
    writer = ExternalImplementation(f"{sys.executable} {dying}")
    writer._version = "test"  # skip the hello of version()
    report = certify_writer(writer, builtin_scenarios("tags-lifecycle"), stores=["local"], workdir=str(tmp_path),
                            compare=False)
    assert report.exit_code == 1
    assert report.runs[0].steps[0].outcome == FAIL
