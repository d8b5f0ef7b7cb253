"""The writer machine (conformance.properties): random programs of appends to target bases, deletes,
bases, tags, branches, shallow and deep clones, relocations and cleanups on the reference writer and on
pylance 14.0.2 side by side, compared with the model after every step; the shrunk programs Hypothesis prints,
read back, replayed and exported; and the regression scenarios its failures became: ``machine-*`` scenarios
of the writer-certification corpus (conformance/scenarios/data/, ``lancespec.scenario/1`` with the program
in ``origin``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test
from property_kit import run_all

from conformance.adapters import registry
from conformance.adapters.base import Capabilities, WriterRefusal, resolve, write_targets
from conformance.adapters.reference import ReferenceImplementation, ReferenceSession
from conformance.model import KNOWN_FINDINGS
from conformance.operations import (
    AddBase,
    Append,
    BaseSpec,
    Cleanup,
    Create,
    Tag,
    operation_from_dict,
    operation_to_dict,
)
from conformance.payload import table
from conformance.properties.command import main
from conformance.properties.export import scenario_trace, to_scenario
from conformance.properties.machine import WriterMachine, read_program
from conformance.properties.side_by_side import Divergence, SideBySide, replay
from conformance.scenarios import builtin_dir, load_scenario, parse_scenario
from conformance.scenarios.certify_writer import certify_writer, make_writer
from reference import ops as reference_ops
from reference.table import Dataset

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
    """Examples and program length come from the Hypothesis profile (tests/conftest.py); rules whose
    precondition fails are redrawn, which is no reason to stop."""

    settings = settings(settings.default, suppress_health_check=[*settings.default.suppress_health_check,
                                                                  HealthCheck.filter_too_much])


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_scenario_replays_side_by_side(path: Path, tmp_path: Path) -> None:
    """Each shrunk failure: a valid scenario; its program replays with reference, pylance and the model in
    agreement while the model knows the finding, and diverges without it (the finding still stands; when
    pylance changes, this fails and the finding is revisited)."""
    document = json.loads(path.read_text())
    parse_scenario(document, str(path))
    ops, finding = scenario_trace(document)
    assert finding is not None and finding in KNOWN_FINDINGS
    replay(ops, tmp_path / "modelled")
    with pytest.raises(Divergence):
        replay(ops, tmp_path / "unmodelled", known=KNOWN_FINDINGS - {finding})
    # the export is a function of the program: the file holds what exporting it again gives
    again = to_scenario(ops, document["name"], document["description"], finding=finding,
                        requirements=document["requirements"], error=document["origin"]["error"])
    assert again["steps"] == document["steps"]


def test_operations_round_trip_through_json() -> None:
    for path in REGRESSIONS:
        for raw in json.loads(path.read_text())["origin"]["trace"]:
            op = operation_from_dict(raw)
            assert operation_from_dict(json.loads(json.dumps(operation_to_dict(op)))) == op


# F-028's program (machine-second-unnamed-base) as pytest shows the program Hypothesis printed: pytest's "E"
# margin, a root bound to a name and used by a later step, the invariants; and the same padded with steps the
# divergence does not need.
PRINTED = """\
E       Falsifying example:
E       state = WriterMachine()
E       roots_0 = state.create(op=Create(root='ds', start=0, count=1, bases=(BaseSpec(dir='bases/b1', name=None,
E                                is_dataset_root=False, file_uri=False),), targets=None, max_rows_per_file=1))
E       state.worlds_match_the_model()
E       state.worlds_match_each_other()
E       state.add_base(op=AddBase(root=roots_0, base=BaseSpec(dir='bases/b2', name=None, is_dataset_root=False,
E                                 file_uri=False)))
E       state.worlds_match_the_model()
E       state.teardown()
"""
PADDED = """\
state = WriterMachine()
roots_0 = state.create(op=Create(root='ds', start=0, count=1, bases=(BaseSpec(dir='bases/b1', name=None,
                         is_dataset_root=False, file_uri=False),), targets=None, max_rows_per_file=1))
state.worlds_match_the_model()
state.append(op=Append(root=roots_0, start=100, count=3, targets=None, max_rows_per_file=2))
tags_0 = state.tag(op=Tag(family=roots_0, name='t9', branch=None, version=1))
state.add_base(op=AddBase(root=roots_0, base=BaseSpec(dir='bases/b2', name=None, is_dataset_root=False,
                          file_uri=False)))
state.append(
    op=Append(
        root=roots_0,
        start=200,
        count=1,  # or any other generated value
        targets=None,
        max_rows_per_file=1024,
    ),
)
state.teardown()
"""
MINIMAL = [Create("ds", 0, 1, (BaseSpec("bases/b1", None, False),), None, 1),
           AddBase("ds", BaseSpec("bases/b2", None, False))]


def test_a_printed_program_reads_back_as_its_operations() -> None:
    assert read_program(PRINTED) == MINIMAL
    assert read_program(PADDED) == [MINIMAL[0], Append("ds", 100, 3, max_rows_per_file=2), Tag("ds", "t9", None, 1),
                                    MINIMAL[1], Append("ds", 200, 1)]
    with pytest.raises(ValueError, match="not a value of the operation language"):
        read_program("state = WriterMachine()\nstate.append(op=__import__('os').getcwd())\n")
    with pytest.raises(ValueError, match="no program"):
        read_program("Falsifying example:\n")


def test_the_command_replays_a_printed_program_and_exports_it_as_a_scenario(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``replay`` runs a printed program side by side (here: F-028 unmodelled, with padding around it) and
    ``export`` writes a scenario the corpus loader accepts, recording the divergence the program shows with
    the finding unmodelled; never over an existing file."""
    padded = tmp_path / "padded.txt"
    padded.write_text(PADDED)
    assert main(["replay", str(padded)]) == 0
    assert main(["replay", str(padded), "--unmodelled", "F-028"]) == 1
    program = tmp_path / "program.txt"
    program.write_text(PRINTED)
    out = tmp_path / "corpus"
    args = ["export", str(program), "--name", "machine-again", "--finding", "F-028", "--requirement", "BASE-006",
            "--to", str(out)]
    assert main(args) == 0
    exported = load_scenario(out / "machine-again.json")
    assert [s.op for s in exported.steps] == ["create", "add_bases"]
    document = json.loads((out / "machine-again.json").read_text())
    assert scenario_trace(document) == (MINIMAL, "F-028")
    assert "pylance refused AddBase" in document["origin"]["error"]
    capsys.readouterr()
    assert main(args) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["export", str(program), "--name", "machine-other", "--finding", "F-022", "--to", str(out)]) == 2
    assert "does not diverge" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "missing.txt")]) == 2


@pytest.mark.parametrize("writer", ["reference", "pylance"])
def test_an_exported_refusal_mentions_what_was_refused(writer: str, tmp_path: Path) -> None:
    """A refused step of an exported program names what its refusal must mention, derived from the refused
    operation (a cleanup held back by an old tagged version: the tag's name), not one word for every refusal;
    each writer's own message says it, and every step passes certify-writer."""
    ops = [Create("ds", 0, 2), Tag("ds", "keep", None, 1), Append("ds", 2, 1), Cleanup("ds", error_if_tagged=True)]
    document = to_scenario(ops, "machine-refusal", "A cleanup refused for a tagged old version.")
    assert document["steps"][-1]["refuse"] == {"kind": "invalid_input", "mentions": ["keep"]}
    report = certify_writer(make_writer(writer), [parse_scenario(document)], stores=["local"], workdir=str(tmp_path))
    assert [step.outcome for step in report.runs[0].steps] == ["pass"] * 4


# --- Hypothesis shrinks the machine's failures ---------------------------------------------------------------


class LiarSession(ReferenceSession):
    """The reference, except that once its dataset has a tag every append writes its last row twice: a
    divergence only a program with a tag, then an append, shows."""

    def _apply(self, op: Any) -> dict[str, Any]:
        if isinstance(op, Append) and Dataset(resolve(self.site, op.root)).tags():
            dataset = self._dataset(op.root)
            data = table(op.start, op.count, None, self._locate)
            doubled = pa.concat_tables([data, data.slice(data.num_rows - 1)])
            return {"version": reference_ops.append(dataset, doubled,
                                                    **write_targets(self.site, op, dataset.uri)).version}
        return super()._apply(op)


@registry.register
class Liar(ReferenceImplementation):
    """The liar as an implementation of the registry: the machine drives it as it drives every writer."""

    name = "liar"
    session = LiarSession

    def __init__(self, capabilities: Capabilities | None = None) -> None:
        super().__init__(capabilities or Capabilities("liar"))


class LiarMachine(WriterMachine):
    writers = ("liar",)


def test_hypothesis_shrinks_a_divergence_to_the_steps_that_show_it(tmp_path: Path) -> None:
    """A failing program of up to ten steps is shrunk by Hypothesis itself (no shrinker of lancespec's) to the
    three steps the divergence needs (create, tag, append), printed, read back as operations and replayed: it
    fails with the liar and passes on the reference alone."""
    with pytest.raises(Divergence, match="written by liar") as failure:
        run_state_machine_as_test(LiarMachine, settings=settings(
            max_examples=100, stateful_step_count=10, deadline=None, database=None, derandomize=True,
            report_multiple_bugs=False, phases=[Phase.explicit, Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck)))
    ops = read_program("\n".join(failure.value.__notes__))
    assert [type(op) for op in ops] == [Create, Tag, Append], ops
    with pytest.raises(Divergence, match="written by liar"):
        run_all(SideBySide(tmp_path / "liar", writers=("liar",)), ops)
    run_all(SideBySide(tmp_path / "reference", writers=("reference",)), ops)


class CrasherSession(ReferenceSession):
    """The reference, except that a cleanup crashes (a RuntimeError, no refusal) or, once a tag named
    ``wrong-kind`` exists, refuses as ``ref_exists``."""

    def _apply(self, op: Any) -> dict[str, Any]:
        if isinstance(op, Cleanup):
            if "wrong-kind" in Dataset(resolve(self.site, op.root)).tags():
                raise WriterRefusal("ref_exists", "a refusal of the wrong kind")
            raise RuntimeError("the writer crashed")
        return super()._apply(op)


@registry.register
class Crasher(ReferenceImplementation):
    name = "crasher"
    session = CrasherSession

    def __init__(self, capabilities: Capabilities | None = None) -> None:
        super().__init__(capabilities or Capabilities("crasher"))


@pytest.mark.parametrize("tag", ["keep", "wrong-kind"])
def test_a_crash_is_no_refusal_and_a_refusal_has_the_models_kind(tag: str, tmp_path: Path) -> None:
    """Where the model refuses a cleanup (a tagged old version), a writer that crashes is not taken as refusing
    (its exception propagates), and one that refuses with another kind than the model's diverges."""
    side = SideBySide(tmp_path, writers=("crasher",))
    for op in (Create("ds", 0, 2), Tag("ds", tag, None, 1), Append("ds", 2, 1)):
        side.run(op)
    refused = Cleanup("ds", error_if_tagged=True)
    if tag == "keep":
        with pytest.raises(RuntimeError, match="crashed"):
            side.apply(refused)
    else:
        with pytest.raises(Divergence, match=r"refused .* \(ref_exists\)"):
            side.apply(refused)
