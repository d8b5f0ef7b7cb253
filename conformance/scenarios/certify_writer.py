"""``lancespec certify-writer``: every scenario, on every store, against one writer; each resulting dataset
certified and its content compared with the reference writer's result for the same scenario.

Reports follow ``conformance.report``'s style: text for a person, JSON (``lancespec.certify-writer/1``)
for programs, JUnit (one test case per scenario and store) for CI. Each says its verdict first, and the verdict
states the coverage (docs/writer-contract.md "Coverage and verdict"): CERTIFIED only when nothing failed and
every run applied every step; PARTIAL when nothing failed but some runs skipped steps needing features the
writer does not declare (the line says how many runs ran in full, in part and not at all, and for want of
which features); NOT CERTIFIED when a step, a certification or a comparison failed. Exit 0 when nothing failed
(CERTIFIED or PARTIAL), 1 otherwise.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from conformance.adapters import registry
from conformance.adapters.base import Implementation
from reference import __version__
from reference.errors import InvalidOption

from .fallback import fall_back
from .format import Scenario
from .runner import (
    FAIL,
    FULL,
    NOT_SUPPORTED,
    PARTIAL,
    PASS,
    SKIP,
    XFAIL,
    XPASS,
    ScenarioRun,
    StepResult,
    certify_handles,
    compare_summaries,
    judge,
    run_scenario,
    step_name,
    summarize,
)
from .stores import AzureRun, LocalRun, S3Run, StoreRun

REPORT_FORMAT = "lancespec.certify-writer/1"

#: The verdicts, in the words of every report (JSON: lower case).
CERTIFIED, PARTIALLY, NOT_CERTIFIED = "CERTIFIED", "PARTIAL", "NOT CERTIFIED"

#: Called as progress(done, total, description).
Progress = Callable[[int, int, str], None]


def make_writer(spec: str, capabilities: str | None = None) -> Implementation:
    """The writer named ``spec`` (a registered name or ``cmd:COMMAND``); ``capabilities`` overrides its
    capability file."""
    return registry.get(spec, capabilities)


@dataclass
class WriterReport:
    writer: str
    writer_version: str
    stores: list[str]
    runs: list[ScenarioRun] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        found = Counter(r.outcome for run in self.runs for r in run.results)
        return {k: found[k] for k in (PASS, FAIL, SKIP, XFAIL, XPASS)}

    @property
    def applied(self) -> int:
        """Runs in which every step applied (none needed a feature the writer does not declare)."""
        return sum(run.applied for run in self.runs)

    def coverage(self) -> dict[str, Any]:
        """Runs by coverage (FULL, PARTIAL, NOT_SUPPORTED), the steps skipped for want of a feature, and by
        feature (most runs first): the runs it stopped or cut short and the steps it kept from running."""
        by_run = Counter(run.coverage for run in self.runs)
        runs: Counter[str] = Counter()
        steps: Counter[str] = Counter()
        for run in self.runs:
            skipped = run.skipped_for()
            runs.update(skipped.keys())
            steps.update(skipped)
        features = sorted(runs, key=lambda f: (-runs[f], f))
        return {"runs": len(self.runs), FULL: by_run[FULL], PARTIAL: by_run[PARTIAL],
                NOT_SUPPORTED: by_run[NOT_SUPPORTED], "steps_skipped": sum(steps.values()),
                "by_feature": [{"feature": f, "runs": runs[f], "steps": steps[f]} for f in features]}

    @property
    def failed_runs(self) -> list[ScenarioRun]:
        return [r for r in self.runs if r.failed]

    @property
    def verdict(self) -> str:
        """CERTIFIED, PARTIAL or NOT CERTIFIED (the module's docstring)."""
        if self.failed_runs:
            return NOT_CERTIFIED
        return CERTIFIED if self.applied == len(self.runs) else PARTIALLY

    def verdict_line(self) -> str:
        """The verdict with its coverage, in one line (what ``--quiet`` prints)."""
        cov = self.coverage()
        head = f"{self.verdict}: {self.writer} ({self.writer_version})"
        if self.verdict == CERTIFIED:
            return f"{head}: " + ("its one run" if cov["runs"] == 1 else f"all {cov['runs']} runs") + \
                " applied every step"
        failed = f"{len(self.failed_runs)} of {cov['runs']} runs failed; " if self.failed_runs else ""
        if cov[FULL] == cov["runs"]:
            return f"{head}: {failed}every run applied every step"
        features = ", ".join(f"{f['feature']} ({f['runs']} run{'s' if f['runs'] != 1 else ''})"
                             for f in cov["by_feature"])
        return (f"{head}: {failed}{cov[FULL]} of {cov['runs']} runs applied in full, {cov[PARTIAL]} in part, "
                f"{cov[NOT_SUPPORTED]} not supported ({cov['steps_skipped']} steps skipped for want of: {features})")

    @property
    def exit_code(self) -> int:
        return 1 if self.failed_runs else 0


class S3Server(Protocol):
    """An S3-compatible server on 127.0.0.1 that certify-writer may start on first need (the command line
    hands it the simulator's ``EmbeddedS3Server``: the judge does not import the adversary)."""

    def storage_options(self) -> dict[str, str]: ...
    def create_bucket(self, name: str) -> str: ...
    def stop(self) -> None: ...


class AzureServer(Protocol):
    """An Azure Blob emulator on 127.0.0.1 (the command line hands certify-writer the simulator's
    ``AzuriteServer``)."""

    def storage_options(self) -> dict[str, str]: ...
    def create_container(self, name: str) -> str: ...
    def stop(self) -> None: ...


class _Stores:
    """Creates a fresh StoreRun per scenario run; starts the server of a store (``start_s3``'s, ``start_az``'s)
    on first need."""

    def __init__(self, workdir: Path, s3_options: dict[str, str] | None = None,
                 create_bucket: Callable[[str], object] | None = None,
                 start_s3: Callable[[], S3Server] | None = None,
                 start_az: Callable[[], AzureServer] | None = None) -> None:
        self.workdir = workdir
        self._server: S3Server | None = None
        self._azurite: AzureServer | None = None
        self._s3_options = s3_options
        self._create_bucket = create_bucket
        self._start_s3 = start_s3
        self._start_az = start_az
        self._count = 0

    def new(self, kind: str) -> StoreRun:
        self._count += 1
        if kind == "local":
            return LocalRun(self.workdir / f"run{self._count}")
        if kind == "az":
            if self._azurite is None:
                if self._start_az is None:
                    raise InvalidOption("an az store needs start_az (an Azure emulator to start)")
                self._azurite = self._start_az()
            return AzureRun(self._azurite.storage_options(), self._azurite.create_container)
        if self._s3_options is None:
            if self._start_s3 is None:
                raise InvalidOption("an s3 store needs s3_options and create_bucket, or start_s3 (a server to start)")
            self._server = self._start_s3()
            self._s3_options = self._server.storage_options()
            self._create_bucket = self._server.create_bucket
        assert self._create_bucket is not None
        return S3Run(self._s3_options, self._create_bucket)

    def close(self) -> None:
        for server in (self._server, self._azurite):
            if server is not None:
                server.stop()


def certify_writer(writer: Implementation, scenarios: Sequence[Scenario], *, stores: Sequence[str] = ("local", "s3"),
                   workdir: str | None = None, compare: bool = True, s3_options: dict[str, str] | None = None,
                   create_bucket: Callable[[str], object] | None = None, start_s3: Callable[[], S3Server] | None = None,
                   start_az: Callable[[], AzureServer] | None = None,
                   progress: Progress | None = None) -> WriterReport:
    """Run ``scenarios`` against ``writer`` on ``stores``; certify and compare every completed run. An s3 run
    uses ``s3_options`` and ``create_bucket`` when given, else the server ``start_s3`` starts on first need; an
    az run the emulator ``start_az`` starts."""
    reference = registry.get("reference")
    report = WriterReport(writer.name, writer.version(), list(stores))
    todo = [(s, kind) for s in scenarios for kind in stores if kind in s.stores]
    caps = writer.capabilities
    if workdir:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    scratch = (contextlib.nullcontext(workdir) if workdir
               else tempfile.TemporaryDirectory(prefix="lancespec-writer-", ignore_cleanup_errors=True))
    with scratch as root, contextlib.closing(
            _Stores(Path(root), s3_options, create_bucket, start_s3, start_az)) as pool:
        for done, (scenario, kind) in enumerate(todo):
            if progress:
                progress(done, len(todo), f"{scenario.name} [{kind}]")
            run = pool.new(kind)
            fallback = fall_back(scenario, caps)  # the reference runs the same fallen-back steps
            result, handles = run_scenario(fallback.scenario, writer, run)
            result.fell_back = fallback.dropped
            if result.completed:
                problems = certify_handles(handles, run, result.removed)
                result.certify = judge(-1, "certify", problems, caps, scenario.name, kind)  # -1, 0: as divergences
                if compare and writer.name != reference.name:
                    ref_run = pool.new(kind)
                    ref_result, ref_handles = run_scenario(fallback.scenario, reference, ref_run)
                    if ref_result.completed:
                        diffs = compare_summaries(summarize(handles, run), summarize(ref_handles, ref_run))
                        result.compare = judge(0, "compare", diffs, caps, scenario.name, kind)
                    elif fallback.dropped:  # the fallback itself is wrong: nothing to derive the expectations from
                        result.compare = StepResult(0, "compare", FAIL, "the reference does not complete the "
                                                    f"steps fallen back without {', '.join(fallback.dropped)}")
                    else:
                        result.compare = StepResult(0, "compare", SKIP, "the reference did not complete it")
            else:
                reason = "the scenario did not complete"
                result.certify = StepResult(-1, "certify", SKIP, reason)
                if compare and writer.name != reference.name:
                    result.compare = StepResult(0, "compare", SKIP, reason)
            report.runs.append(result)
    if progress:
        progress(len(todo), len(todo), "done")
    return report


# --- reports -------------------------------------------------------------------------------------


def to_json(report: WriterReport) -> dict[str, Any]:
    return {"format": REPORT_FORMAT, "lancespec_version": __version__, "writer": report.writer,
            "writer_version": report.writer_version, "stores": report.stores,
            "verdict": report.verdict.lower(), "verdict_line": report.verdict_line(),
            "certified": report.verdict == CERTIFIED, "exit_code": report.exit_code, "summary": report.counts(),
            "applied": report.applied, "coverage": report.coverage(),
            "runs": [r.to_json() for r in report.runs]}


def render_json(report: WriterReport) -> str:
    return json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n"


def _run_line(run: ScenarioRun) -> str:
    steps = run.steps
    passed = sum(s.outcome == PASS for s in steps)
    notes = [f"{extra.op} {extra.outcome}" for extra in (run.certify, run.compare) if extra is not None]
    xfails = sorted({r.finding for r in run.results if r.outcome == XFAIL and r.finding})
    if xfails:
        notes.append("expected divergence " + ", ".join(xfails))
    skipped = [s for s in steps if s.outcome == SKIP]
    if skipped:
        notes.append(f"{len(skipped)} skipped")
    if run.fell_back:
        notes.append(f"set up without {', '.join(run.fell_back)}")
    verdict = "FAIL" if run.failed else "PASS" if run.completed else "PART"
    return f"{verdict:5} {run.scenario:42} [{run.store:5}] {passed}/{len(steps)} steps; {'; '.join(notes)}"


def render_text(report: WriterReport) -> str:
    counts = report.counts()
    cov = report.coverage()
    scenarios = len({r.scenario for r in report.runs})
    lines = [report.verdict_line(),
             f"  {scenarios} scenarios x stores {', '.join(report.stores)}: {len(report.runs)} runs; steps, "
             "certifications and comparisons: " + ", ".join(f"{v} {k}" for k, v in counts.items()),
             f"  {report.applied} of {len(report.runs)} runs applied in full, {cov[PARTIAL]} in part, "
             f"{cov[NOT_SUPPORTED]} not supported"]
    lines += [f"    {f['feature']:24} {f['runs']:4} run{'s' if f['runs'] != 1 else ' '}, {f['steps']:5} steps skipped"
              for f in cov["by_feature"]]
    for run in report.runs:
        lines.append(_run_line(run))
        for r in run.results:
            if r.outcome in (FAIL, XPASS) or (r.outcome == XFAIL and r.detail):
                tag = f" ({r.finding})" if r.finding else ""
                lines.append(f"      {r.outcome.upper():5} {step_name(r.index, r.op)}{tag}: {r.detail}")
        lines += [f"      SKIP  {step_name(s.index, s.op)}: {s.detail}" for s in run.steps if s.unsupported]
    return "\n".join(lines) + "\n"


def render_junit(report: WriterReport) -> str:
    failures = len(report.failed_runs)
    skipped = sum(1 for r in report.runs if not r.failed and not r.completed)
    suite = ET.Element("testsuite", name=f"lancespec certify-writer {report.writer}", tests=str(len(report.runs)),
                       failures=str(failures), skipped=str(skipped), errors="0")
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="verdict", value=report.verdict_line())
    for run in report.runs:
        case = ET.SubElement(suite, "testcase", classname=f"lancespec.writer.{run.store}", name=run.scenario)
        detail = "\n".join(f"{step_name(r.index, r.op)}: {r.outcome} {r.finding or ''} {r.detail}".rstrip()
                           for r in run.results if r.outcome != PASS)
        if run.failed:
            bad = [r for r in run.results if r.outcome in (FAIL, XPASS)]
            failure = ET.SubElement(case, "failure", message=f"{len(bad)} step(s) failed", type=bad[0].op)
            failure.text = detail
        elif not run.completed:
            ET.SubElement(case, "skipped", message=detail.splitlines()[0] if detail else "partly skipped")
            ET.SubElement(case, "system-out").text = detail
        elif detail:
            ET.SubElement(case, "system-out").text = detail
    text: str = ET.tostring(suite, encoding="unicode", xml_declaration=True)
    return text + "\n"


RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit}
