"""Run one scenario against one writer on one store, step by step (docs/scenario-format.md "Results").

The runner hands each step's operation to the writer's session (the store run is the site its locations
resolve on), and judges the outcome by reading storage with the reference reader: the expected state after
a success, or an error of the expected kind with every object of the run unchanged after a refusal. A step
needing a feature the writer's capability file declares unsupported is skipped, not failed. At the end it
summarises every dataset (rows digest, versions, bases, files per location, refs) so that two writers'
results can be compared, and certifies each dataset root.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.adapters.base import (
    Capabilities,
    ContractError,
    Implementation,
    Session,
    WriterRefusal,
    needs,
)
from conformance.certify import certify
from conformance.corpus.canonical import rows_digest
from conformance.operations import split_root
from conformance.payload import Blob
from reference.blob.read import BlobReader
from reference.errors import LanceSpecError
from reference.layout import FileKind
from reference.read import read_snapshot
from reference.store.uri import normalize
from reference.table import Dataset

from .format import Location, Scenario, Step
from .stores import StoreRun

PASS, FAIL, SKIP, XFAIL, XPASS = "pass", "fail", "skip", "xfail", "xpass"

#: How much of a scenario a run applied: every step, some steps (the rest needed a feature the writer does
#: not declare), or none of the writer's steps (its first one already needed such a feature).
FULL, PARTIAL, NOT_SUPPORTED = "full", "partial", "not supported"

#: The checks after the steps, by the op name their results carry (index -1 and 0 in reports for programs).
_AFTER_STEPS = {"certify": "certification of the datasets it left", "compare": "comparison with the reference writer",
                "session": "the writer's session"}


def step_name(index: int, op: str) -> str:
    """How a report names a result for a person: ``step 3 (tag)``, or what ran after the steps."""
    return _AFTER_STEPS.get(op) or f"step {index} ({op})"


def plain(value: Any) -> str:
    """A value of an expectation or a summary as a person writes it (no Python reprs): ``none``, ``1, 2``,
    ``a: 1, b: 2``."""
    if value is None:
        return "none"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {plain(v)}" for k, v in value.items()) + "}" if value else "none"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(plain, value)) + "]"
    return str(value)


@dataclass
class StepResult:
    index: int
    op: str
    outcome: str
    detail: str = ""
    finding: str | None = None
    unsupported: str | None = None
    """The feature the writer lacks, when the step was skipped for it."""

    def to_json(self) -> dict[str, Any]:
        return {"step": self.index, "op": self.op, "outcome": self.outcome, "detail": self.detail,
                "finding": self.finding, "unsupported": self.unsupported}


@dataclass
class Handle:
    uri: str
    main_uri: str
    branch: str | None = None

    def dataset(self, run: StoreRun) -> Dataset:
        main = Dataset(self.main_uri, run.storage)
        return main.branch(self.branch) if self.branch else main


@dataclass
class ScenarioRun:
    """The outcome of one scenario on one store."""

    scenario: str
    store: str
    writer: str
    steps: list[StepResult] = field(default_factory=list)
    certify: StepResult | None = None
    compare: StepResult | None = None
    removed: list[Location] = field(default_factory=list)
    halted: bool = False
    """A step stopped the run (failed, diverged as expected, or needed a missing feature)."""
    writer_steps: int = 0
    """Steps handed to the writer (its operations; the harness's own steps not counted)."""
    stopped_by: str | None = None
    """The missing feature whose step stopped the run, when one did."""
    fell_back: tuple[str, ...] = ()
    """The shaping features the run went without (``fallback``: the scenario ran as the writer can run it)."""

    @property
    def results(self) -> list[StepResult]:
        return [*self.steps, *(r for r in (self.certify, self.compare) if r is not None)]

    @property
    def failed(self) -> bool:
        return any(r.outcome in (FAIL, XPASS) for r in self.results)

    @property
    def completed(self) -> bool:
        """Every step passed, but for refusal steps skipped for a feature the writer lacks."""
        return not self.halted and all(s.outcome in (PASS, SKIP) for s in self.steps)

    @property
    def applied(self) -> bool:
        """Whether every step applied to the writer (none needed a feature it does not declare)."""
        return not any(s.unsupported for s in self.steps)

    @property
    def coverage(self) -> str:
        """FULL (every step applied), NOT_SUPPORTED (no step reached the writer for want of a feature) or
        PARTIAL."""
        if self.applied:
            return FULL
        return PARTIAL if self.writer_steps else NOT_SUPPORTED

    def skipped_for(self) -> Counter[str]:
        """Steps not run for want of a feature, by feature: each step that needs it, and every step after it
        when it stopped the run."""
        out: Counter[str] = Counter(s.unsupported for s in self.steps if s.unsupported)
        last = max((i for i, s in enumerate(self.steps) if s.unsupported), default=None)
        if self.stopped_by is not None and last is not None:
            out[self.stopped_by] += sum(s.outcome == SKIP for s in self.steps[last + 1:])
        return out

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "store": self.store, "writer": self.writer,
                "outcome": FAIL if self.failed else PASS if self.completed else "partial", "applied": self.applied,
                "coverage": self.coverage, "skipped_for": dict(sorted(self.skipped_for().items())),
                "fell_back": list(self.fell_back),
                "steps": [s.to_json() for s in self.steps],
                "certify": self.certify.to_json() if self.certify else None,
                "compare": self.compare.to_json() if self.compare else None}


# --- expectations --------------------------------------------------------------------------------


def _sorted_ids(dataset: Dataset, run: StoreRun) -> list[int]:
    snapshot = dataset.snapshot()
    table = read_snapshot(snapshot, dataset.storage, run.options)
    return sorted(table.column("id").to_pylist()) if "id" in table.column_names else []


def _loc(run: StoreRun, uri: str) -> str:
    return run.location_of(uri) or uri


def bases_of(dataset: Dataset, run: StoreRun) -> dict[str, str]:
    """Named bases: name -> location (unnamed ones are ``unnamed_bases``: their ids are layout, not content)."""
    return {b.name: _loc(run, b.path) for b in dataset.snapshot().bases if b.name is not None}


def unnamed_bases_of(dataset: Dataset, run: StoreRun) -> list[str]:
    return sorted(_loc(run, b.path) for b in dataset.snapshot().bases if b.name is None)


def files_per_location(dataset: Dataset, run: StoreRun) -> dict[str, int]:
    """Data files of the latest version, counted per directory location (``bucket:path`` of the root or
    base they resolve into)."""
    snapshot = dataset.snapshot()
    roots = {normalize(path): _loc(run, path) for path in (snapshot.root, *(b.path for b in snapshot.bases))}
    out: Counter[str] = Counter()
    for f in snapshot.files():
        if f.kind is FileKind.DATA and f.uri is not None:
            owner = max((r for r in roots if f.uri.startswith(r.rstrip("/") + "/")), key=len, default=None)
            out[roots[owner] if owner else _loc(run, f.uri)] += 1
    return dict(out)


def blob_sizes(dataset: Dataset, column: str, run: StoreRun) -> list[int | None]:
    snapshot = dataset.snapshot()
    table = read_snapshot(snapshot, dataset.storage, run.options)
    ids = table.column("id").to_pylist()
    files = BlobReader(snapshot, dataset.storage).take_blobs(column, list(range(len(ids))))
    sizes = [None if f is None else len(f.readall()) for f in files]
    return [size for _, size in sorted(zip(ids, sizes, strict=True), key=lambda p: p[0])]


def check_expect(expect: Mapping[str, Any], handle: Handle, run: StoreRun) -> list[str]:
    """What differs from ``expect`` (empty: as expected)."""
    problems: list[str] = []
    try:
        dataset = handle.dataset(run)
        main = Dataset(handle.main_uri, run.storage)
        if "version" in expect and (got := dataset.latest_version()) != expect["version"]:
            problems.append(f"latest version {got}, expected {expect['version']}")
        if "versions" in expect and (got_v := dataset.versions()) != expect["versions"]:
            problems.append(f"versions {plain(got_v)}, expected {plain(expect['versions'])}")
        if "rows" in expect and (got := dataset.snapshot().num_rows) != expect["rows"]:
            problems.append(f"{got} rows, expected {expect['rows']}")
        if "ids" in expect and (got_ids := _sorted_ids(dataset, run)) != expect["ids"]:
            problems.append(f"ids {plain(got_ids)}, expected {plain(expect['ids'])}")
        if "bases" in expect and (got_b := bases_of(dataset, run)) != expect["bases"]:
            problems.append(f"bases {plain(got_b)}, expected {plain(expect['bases'])}")
        if "unnamed_bases" in expect and (got_u := unnamed_bases_of(dataset, run)) != sorted(expect["unnamed_bases"]):
            problems.append(f"unnamed bases {plain(got_u)}, expected {plain(sorted(expect['unnamed_bases']))}")
        for loc, n in expect.get("files", {}).items():
            prefix = run.uri(Location.parse(loc, "files")).rstrip("/") + "/"
            got = sum(1 for f in dataset.snapshot().files() if f.kind is FileKind.DATA and f.uri
                      and f.uri.startswith(prefix))
            if got != n:
                problems.append(f"{got} data files under {loc}, expected {n}")
        if "tags" in expect or "no_tags" in expect:
            tags = {name: rec.version for name, rec in main.tags().items()}
            problems += [f"tag {name!r} -> {plain(tags.get(name))}, expected {version}"
                         for name, version in expect.get("tags", {}).items() if tags.get(name) != version]
            problems += [f"tag {name!r} exists, expected none" for name in expect.get("no_tags", []) if name in tags]
        if "branches" in expect or "no_branches" in expect:
            branches = set(main.branches())
            problems += [f"branch {name!r} missing" for name in expect.get("branches", []) if name not in branches]
            problems += [f"branch {name!r} exists, expected none" for name in expect.get("no_branches", [])
                         if name in branches]
        if "blobs" in expect:
            got_s = blob_sizes(dataset, expect["blobs"]["column"], run)
            if got_s != expect["blobs"]["sizes"]:
                problems.append(f"blob sizes {plain(got_s)}, expected {plain(expect['blobs']['sizes'])}")
        for loc in expect.get("absent", []):
            if left := run.objects(Location.parse(loc, "absent")):
                problems.append(f"{len(left)} object(s) remain under {loc}, e.g. {_loc(run, left[0])}")
    except (LanceSpecError, OSError, ValueError) as exc:  # a file the writer's result names may be missing
        problems.append(f"cannot read the result: {exc}")
    return problems


def _fingerprint_diff(before: Mapping[str, tuple[int, str]], after: Mapping[str, tuple[int, str]],
                      run: StoreRun) -> list[str]:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    out = []
    for label, names in (("added", added), ("removed", removed), ("changed", changed)):
        if names:
            shown = ", ".join(_loc(run, n) for n in names[:3])
            out.append(f"storage changed: {len(names)} object(s) {label} ({shown}{', ...' if len(names) > 3 else ''})")
    return out


# --- the run -------------------------------------------------------------------------------------


def handle_of(root: str, run: StoreRun) -> Handle:
    """The dataset a root location names on ``run``."""
    family, branch = split_root(root)
    return Handle(run.uri(Location.parse(root, "root")), run.uri(Location.parse(family, "root")), branch)


def _harness(step: Step, run: StoreRun, removed: list[Location]) -> None:
    a = step.args
    if step.op == "copy_location":
        run.copy(Location.parse(a["from"], "from"), Location.parse(a["to"], "to"))
    elif step.op == "remove_location":
        run.remove(Location.parse(a["at"], "at"))
        removed.append(Location.parse(a["at"], "at"))
    elif step.op == "put_object":
        content = Blob(text=a["data"].get("bytes"), fill=a["data"].get("fill"), size=a["data"].get("size")).content()
        run.put(Location.parse(a["at"], "at"), content or b"")


def judge(index: int, op: str, problems: list[str], caps: Capabilities, scenario: str, store: str) -> StepResult:
    """PASS, or FAIL with ``problems``; XFAIL or XPASS (a failure) where the capability file lists a divergence."""
    divergence = caps.divergence(scenario, index, store)
    if divergence is None:
        return StepResult(index, op, FAIL if problems else PASS, "; ".join(problems))
    if problems:
        return StepResult(index, op, XFAIL, "; ".join(problems), divergence.finding)
    return StepResult(index, op, XPASS, f"listed divergence {divergence.finding} no longer diverges: remove it from "
                      f"{caps.source}", divergence.finding)


def _judge_refusal(step: Step, error: WriterRefusal | None, before: Mapping[str, tuple[int, str]],
                   run: StoreRun) -> list[str]:
    """A refusal is judged on its kind (never on the words of its message) and on storage left unchanged."""
    assert step.refuse is not None
    problems = []
    if error is None:
        problems.append(f"accepted; a correct writer refuses it ({step.refuse.kind})")
    elif error.kind != step.refuse.kind:
        problems.append(f"refused as {error.kind}, expected {step.refuse.kind}: {error.message}")
    elif not error.message.strip():
        problems.append("refused without a message")
    problems += _fingerprint_diff(before, run.fingerprint(), run)
    return problems


def run_scenario(scenario: Scenario, writer: Implementation, run: StoreRun) -> tuple[ScenarioRun, dict[str, Handle]]:
    """Run every step; stop judging at the first step that is not a plain pass (a refusal step the writer
    cannot be judged on is skipped alone: a correct refusal changes nothing)."""
    result = ScenarioRun(scenario.name, run.kind, writer.name)
    caps = writer.capabilities
    handles: dict[str, Handle] = {}
    stopped: str | None = None
    session: Session | None = None
    if caps.root_suffix:  # the writer names its roots so (LanceDB: {database}/{name}.lance), refused targets too
        targets = {str(s.args["target"]) for s in scenario.steps if s.op in ("shallow_clone", "deep_clone")}
        run.name_roots({split_root(root)[0] for root in scenario.roots.values()} | targets, caps.root_suffix)
    try:
        for step in scenario.steps:
            if stopped is not None:
                result.steps.append(StepResult(step.index, step.op, SKIP, stopped))
                continue
            if step.operation is None:
                try:
                    _harness(step, run, result.removed)
                except LanceSpecError as exc:
                    result.steps.append(StepResult(step.index, step.op, FAIL, f"harness step failed: {exc}"))
                    stopped = f"after step {step.index} failed"
                    continue
                if step.introduces:
                    handles[step.introduces] = handle_of(scenario.roots[step.introduces], run)
                result.steps.append(StepResult(step.index, step.op, PASS))
                continue
            missing = caps.missing(needs(step.operation, step.refuse.kind if step.refuse else None))
            if missing is not None:
                result.steps.append(StepResult(step.index, step.op, SKIP, f"unsupported by {writer.name}: "
                                               f"{missing[0]} ({missing[1]})", unsupported=missing[0]))
                if step.refuse is None:
                    stopped = f"after unsupported step {step.index} ({step.op})"
                    result.stopped_by = missing[0]
                continue
            before = run.fingerprint() if step.refuse else {}
            if session is None:  # opened on the first step it applies: a scenario it cannot start spawns nothing
                session = writer.open(run)
            result.writer_steps += 1
            error: WriterRefusal | None = None
            try:
                session.apply(step.operation)
            except WriterRefusal as exc:
                error = exc
            except ContractError as exc:
                error = WriterRefusal("invalid_input", f"contract broken: {exc}")
            if step.refuse is not None:
                problems = _judge_refusal(step, error, before, run)
            elif error is not None:
                problems = [f"refused ({error.kind}): {error.message}"]
            else:
                if step.introduces:
                    handles[step.introduces] = handle_of(scenario.roots[step.introduces], run)
                target = (step.expect or {}).get("dataset") or step.introduces or step.dataset
                problems = check_expect(step.expect, handles[str(target)], run) if step.expect else []
            verdict = judge(step.index, step.op, problems, caps, scenario.name, run.kind)
            result.steps.append(verdict)
            if verdict.outcome != PASS:
                stopped = (f"after expected divergence at step {step.index} ({verdict.finding})" if verdict.finding
                           else f"after step {step.index} failed")
    except ContractError as exc:
        result.steps.append(StepResult(0, "session", FAIL, f"writer session failed: {exc}"))
    finally:
        result.halted = result.halted or stopped is not None
        if session is not None:
            with contextlib.suppress(ContractError):
                session.close()
    return result, handles


def summarize(handles: Mapping[str, Handle], run: StoreRun) -> dict[str, Any]:
    """A store-independent summary of every dataset, for comparison between writers."""
    out: dict[str, Any] = {}
    for name in sorted(handles):
        handle = handles[name]
        try:
            dataset = handle.dataset(run)
            snapshot = dataset.snapshot()
            table = read_snapshot(snapshot, run.storage, run.options)
            blob_columns = [c for c in table.column_names if c == "blob"]
            main = Dataset(handle.main_uri, run.storage)
            out[name] = {
                "version": snapshot.version,
                "versions": dataset.versions(),
                "rows": snapshot.num_rows,
                "rows_digest": rows_digest(table, blob_columns),
                "blob_sizes": blob_sizes(dataset, "blob", run) if blob_columns else None,
                "bases": bases_of(dataset, run),
                "unnamed_bases": unnamed_bases_of(dataset, run),
                "files": files_per_location(dataset, run),
                "tags": {t: f"{r.branch or 'main'} v{r.version}" for t, r in main.tags().items()},
                "branches": sorted(main.branches()),
            }
        except (LanceSpecError, OSError, ValueError) as exc:  # removed or deleted: compare that, not the message
            out[name] = {"unreadable": "metadata" if isinstance(exc, LanceSpecError) else "a data file"}
    return out


def _damaged(handle: Handle, run: StoreRun, removed: list[Location]) -> bool:
    """Whether the handle's latest version reads from a location the scenario removed."""
    prefixes = [run.uri(loc).rstrip("/") + "/" for loc in removed]
    try:
        snapshot = handle.dataset(run).snapshot(strict=False)
    except LanceSpecError:
        return True
    uris = [snapshot.root.rstrip("/") + "/", *(f.uri for f in snapshot.files() if f.uri)]
    return any(u.startswith(p) for u in uris for p in prefixes)


def certify_handles(handles: Mapping[str, Handle], run: StoreRun, removed: list[Location]) -> list[str]:
    """MUST findings of certifying every dataset the scenario left behind.

    Without removals: every version of every main root (branches included). When the scenario deliberately
    removed locations (old versions then point at removed objects by design), the latest version of each
    root and branch instead, skipping datasets whose latest version reads from a removed location.
    """
    problems = []
    if removed:
        targets = sorted({h.uri for h in handles.values() if not _damaged(h, run, removed)})
    else:
        targets = sorted({h.main_uri for h in handles.values()})
    for uri in targets:
        try:
            if not Dataset(uri, run.storage).version_entries(allow_mixed=True):
                continue  # e.g. the target of a refused clone: nothing to certify
        except LanceSpecError:
            continue
        report = certify(uri, all_versions=not removed, storage_options=run.options)
        for f in report.must_findings:
            problems.append(f"{_loc(run, uri)}: {f.requirement} v{f.version} {_loc(run, f.path)}: {f.message}")
    return problems


def compare_summaries(got: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    problems = []
    for name in sorted(set(got) | set(expected)):
        a, b = got.get(name), expected.get(name)
        if a is None or b is None:
            problems.append(f"dataset {name!r} exists only in {'the reference' if a is None else 'this writer'}'s run")
            continue
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                problems.append(f"{name} {key}: {plain(a.get(key))}, the reference's {plain(b.get(key))}")
    return problems
