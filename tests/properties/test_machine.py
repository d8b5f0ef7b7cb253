"""The writer machine (lancespec.conformance.machine): random sequences of appends to target bases, deletes,
bases, tags, branches, shallow and deep clones, relocations and cleanups on the reference writer and on
pylance 14.0.2 side by side, compared with the model after every step; and the regression scenarios its
shrunk failures became: ``machine-*`` scenarios of the writer-certification corpus
(conformance/scenarios/data/, ``lancespec.scenario/1`` with the machine trace in ``origin``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from lancespec.conformance.machine import (
    Divergence,
    WriterMachine,
    load_trace,
    main,
    replay,
    scenario_trace,
    to_scenario,
    write_trace,
)
from lancespec.conformance.operations import KNOWN_FINDINGS, Append, Tag, operation_from_dict, operation_to_dict
from lancespec.conformance.scenarios import builtin_dir, load_scenario, parse_scenario

pytestmark = pytest.mark.interop

CORPUS = sorted(p for p in builtin_dir().glob("*.json")
                if json.loads(p.read_text()).get("origin", {}).get("source") == "property-test")
# Regressions the reference cannot certify either (kept out of the writer-certification corpus): F-031 arises
# only where a branch wrote into its parent's root by the F-027 rotation, which the reference mirrors and
# certify reports as CLONE-003.
OUTSIDE = sorted((Path(__file__).parent / "regressions").glob("*.json"))
REGRESSIONS = CORPUS + OUTSIDE


def test_every_modelled_finding_has_a_regression() -> None:
    """Every shrunk divergence is kept: the ``machine-*`` scenarios of the corpus (certify-writer runs them)
    and the ones outside it, one per finding the model branches on."""
    assert {p.stem for p in CORPUS} == {p.stem for p in builtin_dir().glob("machine-*.json")}
    findings = {json.loads(p.read_text())["origin"]["finding"] for p in REGRESSIONS}
    assert findings == set(KNOWN_FINDINGS)


class TestWriterMachine(WriterMachine.TestCase):  # type: ignore[misc, valid-type]
    """Examples and sequence length come from the Hypothesis profile (tests/conftest.py); rules whose
    precondition fails are redrawn, which is no reason to stop."""

    settings = settings(settings.default, suppress_health_check=[*settings.default.suppress_health_check,
                                                                  HealthCheck.filter_too_much])


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_scenario_replays_side_by_side(path: Path, tmp_path: Path) -> None:
    """Each shrunk failure: a valid scenario; its trace replays with reference, pylance and the model in
    agreement while the model knows the finding, and diverges without it (the finding still stands; when
    pylance changes, this fails and the finding is revisited)."""
    document = json.loads(path.read_text())
    parse_scenario(document, str(path))
    ops, finding = scenario_trace(document)
    assert finding is not None and finding in KNOWN_FINDINGS
    replay(ops, tmp_path / "modelled")
    with pytest.raises(Divergence):
        replay(ops, tmp_path / "unmodelled", known=KNOWN_FINDINGS - {finding})
    # the export is a function of the trace: the file holds what exporting it again gives
    again = to_scenario(ops, document["name"], document["description"], finding=finding,
                        requirements=document["requirements"], error=document["origin"]["error"])
    assert again["steps"] == document["steps"]


def test_operations_round_trip_through_json() -> None:
    for path in REGRESSIONS:
        for raw in json.loads(path.read_text())["origin"]["trace"]:
            op = operation_from_dict(raw)
            assert operation_from_dict(json.loads(json.dumps(operation_to_dict(op)))) == op


def test_the_command_shrinks_a_failing_trace_and_exports_it_as_a_scenario(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``shrink`` drops the steps a divergence does not need (here: F-028 unmodelled, three padding steps
    around it) and ``export`` writes a scenario the corpus loader accepts, never over an existing file."""
    (path,) = [p for p in REGRESSIONS if p.stem == "machine-second-unnamed-base"]
    minimal, _ = scenario_trace(json.loads(path.read_text()))
    padded = [minimal[0], Append("ds", 100, 3, max_rows_per_file=2), Tag("ds", "t9", None, 1), *minimal[1:],
              Append("ds", 200, 1)]
    trace = tmp_path / "trace.json"
    write_trace(trace, padded, "padded")
    assert main(["replay", str(trace)]) == 0
    assert main(["replay", str(trace), "--unmodelled", "F-028"]) == 1
    assert main(["shrink", str(trace), "--unmodelled", "F-028"]) == 0
    assert load_trace(trace)[0] == minimal
    out = tmp_path / "corpus"
    args = ["export", str(trace), "--name", "machine-again", "--finding", "F-028", "--requirement", "BASE-006",
            "--to", str(out)]
    assert main(args) == 0
    exported = load_scenario(out / "machine-again.json")
    assert [s.op for s in exported.steps] == ["create", "add_bases"]
    assert scenario_trace(json.loads((out / "machine-again.json").read_text())) == (minimal, "F-028")
    capsys.readouterr()
    assert main(args) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "missing.json")]) == 2
