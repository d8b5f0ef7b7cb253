"""The reference and pylance side by side: a stateful Hypothesis machine over the operation language of
``lancespec.conformance.strategies``.

Two *worlds*, two scratch folders with the same layout (``ds`` the first dataset, ``ds/tree/f1`` a branch,
``c2`` a clone, ``bases/b3`` a base), receive the same operations: one through the reference writer
(``lancespec.reference.api``), one through pylance 14.0.2. ``Relocate`` is done by the reference in both
worlds (pylance has no API for it, docs/lance-format.md §10.4), after the base directories are copied. After every
operation the touched roots are compared three ways:

* **rows**: the model's rows == each world read by its own reader == each world read by the other reader
  (pylance reads what the reference wrote and the reference reads what pylance wrote);
* **versions**: the versions the model keeps == the versions each world lists (after cleanup too, GC-001);
* **layout**: for the latest version, the bases (name, kind, directory) and, per fragment, its id, row
  count, the directory of its data file and of its deletion file, as the model places them (BASE-004,
  BASE-009, BASE-010, CLONE-003), in both worlds; and the number of manifests, transaction, deletion and
  data files in each root, compared between the worlds.

Cleanup compares every version of the cleaned root and the latest of every other root; the end of a run
compares every version of every root.

Known divergences are branched on explicitly (``Outcome.kind == "divergent"``: in scratch copies, pylance
must do what the finding records and the reference what the model says, and neither world changes), or
never generated; each names its finding in spec/findings.md.

When a step fails, the sequence run so far is written as JSON (``LANCESPEC_MACHINE_TRACE``, default
``{tmp}/lancespec-machine/last-failure.json``; Hypothesis replays the shrunk sequence last, so the file
ends up holding the minimal one). ``python -m lancespec.conformance.machine export TRACE`` turns it into a
regression scenario; ``replay TRACE`` runs it again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, cast

import lance
import pyarrow as pa
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from lancespec.conformance.operations import (
    KNOWN_FINDINGS,
    AddBase,
    Append,
    Branch,
    Cleanup,
    Create,
    DeepClone,
    Delete,
    Model,
    ModelError,
    Outcome,
    Relocate,
    RootModel,
    ShallowClone,
    Tag,
    Targets,
    VersionModel,
    operation_from_dict,
    operation_to_dict,
    root_dir,
)
from lancespec.conformance.operations import (
    ModelOperation as Operation,
)
from lancespec.conformance.payload import expected_rows, rows
from lancespec.conformance.scenarios import FORMAT as SCENARIO_FORMAT
from lancespec.conformance.scenarios import builtin_dir, parse_scenario
from lancespec.conformance.strategies import draw_create, draw_operation
from lancespec.reference import api as ref
from lancespec.reference.errors import LanceSpecError
from lancespec.reference.relocate import relocate
from lancespec.reference.table import Dataset

__all__ = [
    "TRACE_FORMAT",
    "Divergence",
    "ExportError",
    "SideBySide",
    "World",
    "WriterMachine",
    "export",
    "load_trace",
    "modelled_findings",
    "replay",
    "scenario_trace",
    "shrink",
    "to_scenario",
    "write_trace",
]

Writer = Literal["reference", "pylance"]
WRITERS: tuple[Writer, Writer] = ("reference", "pylance")
TRACE_FORMAT = "lancespec.machine-trace/1"


class Divergence(AssertionError):
    """What one world, reader or the model disagree on."""


# --- one world -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """A version's structure with locations made world-relative (comparable across worlds and to the model)."""

    bases: tuple[tuple[str | None, bool, str, bool], ...]
    fragments: tuple[tuple[int, int, tuple[str, ...], int, str | None], ...]


@dataclass(frozen=True)
class Census:
    """How many manifests, transaction, deletion and data files one root holds."""

    manifests: int
    transactions: int
    deletions: int
    data_files: int


def _rel(world: Path, uri: str) -> str:
    path = uri[len("file://"):] if uri.startswith("file://") else uri
    prefix = str(world) + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


def _parent(uri: str) -> str:
    return uri.rsplit("/", 1)[0]


class World:
    """One scratch folder written by one writer."""

    def __init__(self, directory: Path, writer: Writer) -> None:
        self.dir = directory
        self.writer = writer
        self.dir.mkdir(parents=True, exist_ok=True)

    def uri(self, key: str) -> str:
        return str(self.dir / key)

    # --- writing --------------------------------------------------------------------------------

    def _module(self) -> Any:
        return ref if self.writer == "reference" else lance

    def _targets(self, version: VersionModel, targets: Targets) -> dict[str, Any]:
        if targets is None:
            return {}
        if targets == "all":
            return {"target_all_bases": True}
        if targets == "bases":
            return {"target_all_bases": False}
        names = []
        for directory in targets:
            base = version.base_by_dir(directory)
            names.append(base.name if base.name is not None else self.registered(directory, base.file_uri))
        return {"target_bases": names}

    def registered(self, directory: str, file_uri: bool) -> str:
        """The path string a base at ``directory`` is registered with."""
        return f"file://{self.uri(directory)}" if file_uri else self.uri(directory)

    def _base(self, directory: str, name: str | None, is_root: bool, file_uri: bool = False) -> Any:
        return self._module().DatasetBasePath(self.registered(directory, file_uri), name=name,
                                              is_dataset_root=is_root)

    def apply(self, op: Operation, model: Model, target: str | None = None) -> None:
        """Apply ``op`` as this world's writer does it; ``model`` is the state before ``op``. ``target``
        redirects the root a create, append, delete or add_base writes, or the directory a deep clone creates
        (a scratch probe)."""
        mod = self._module()
        uri = target or self.uri(getattr(op, "root", ""))
        if isinstance(op, Create):
            mod.write_dataset(rows(op.start, op.count), uri,
                              initial_bases=[self._base(b.dir, b.name, b.is_dataset_root, b.file_uri)
                                             for b in op.bases] or None,
                              max_rows_per_file=op.max_rows_per_file,
                              **self._targets(Model.initial_version(op), op.targets))
        elif isinstance(op, Append):
            mod.write_dataset(rows(op.start, op.count), uri, mode="append",
                              max_rows_per_file=op.max_rows_per_file,
                              **self._targets(model.roots[op.root].head, op.targets))
        elif isinstance(op, Delete):
            mod.dataset(uri).delete(op.predicate)
        elif isinstance(op, AddBase):
            mod.dataset(uri).add_bases([self._base(op.base.dir, op.base.name, op.base.is_dataset_root,
                                                     op.base.file_uri)])
        elif isinstance(op, Tag):
            mod.dataset(self.uri(op.family)).tags.create(op.name, (op.branch, op.version))
        elif isinstance(op, Branch):
            mod.dataset(self.uri(op.family)).create_branch(op.name, (op.parent, op.version))
        elif isinstance(op, ShallowClone):
            mod.dataset(self.uri(op.family)).shallow_clone(self.uri(op.target), op.tag)
        elif isinstance(op, DeepClone):
            mod.dataset(self.uri(op.family)).deep_clone(target or self.uri(op.target), (op.branch, op.version))
        elif isinstance(op, Relocate):
            for old, new in op.moves:
                if os.path.isdir(self.uri(old)):
                    shutil.copytree(self.uri(old), self.uri(new))
                else:  # nothing was ever written to the base
                    os.makedirs(self.uri(new))
            # pylance 14.0.2 cannot rewrite base paths (docs/lance-format.md §10.4): the reference relocates the
            # dataset pylance wrote, as an operator would.
            head = model.roots[op.root].head
            relocate(Dataset(self.uri(op.root)),
                     {self.registered(old, head.base_by_dir(old).file_uri): self.uri(new) for old, new in op.moves})
        elif isinstance(op, Cleanup):
            mod.dataset(self.uri(op.root)).cleanup_old_versions(
                older_than=timedelta(0) if op.older_than_zero else None, retain_versions=op.retain_versions,
                delete_unverified=op.delete_unverified, error_if_tagged_old_versions=op.error_if_tagged)
        else:  # pragma: no cover - the operation language is closed
            raise TypeError(f"unknown operation {op!r}")

    # --- reading --------------------------------------------------------------------------------

    def versions(self, root: str, reader: Writer) -> list[int]:
        if reader == "reference":
            return Dataset(self.uri(root)).versions()
        return [int(v["version"]) for v in lance.dataset(self.uri(root)).versions()]

    def rows(self, root: str, version: int, reader: Writer) -> list[dict[str, Any]]:
        table: pa.Table
        if reader == "reference":
            table = ref.dataset(self.uri(root), version).to_table()
        else:
            table = lance.dataset(self.uri(root), version=version).to_table()
        return list(table.to_pylist())

    def layout(self, root: str, version: int) -> Layout:
        """The version's structure, read through the reference's resolution (which the resolution laws
        hold to Storage Layout spec)."""
        snap = Dataset(self.uri(root)).snapshot(version)
        bases = tuple(sorted(((b.name, b.is_dataset_root, _rel(self.dir, b.path), b.path.startswith("file://"))
                              for b in snap.bases), key=repr))
        frags = []
        for f in snap.fragments:
            homes = tuple(_rel(self.dir, _parent(file.uri or "?")) for file in f.files)
            deletion = None
            if f.deletion is not None:
                deletion = _rel(self.dir, _parent(_parent(f.deletion.file.uri or "?/?")))
            frags.append((f.id, f.physical_rows, homes, f.deletion.num_deleted_rows if f.deletion else 0, deletion))
        return Layout(bases, tuple(frags))

    def census(self, root: str) -> Census:
        top = self.dir / root

        def count(sub: str, suffix: str) -> int:
            folder = top / sub
            return sum(1 for p in folder.rglob(f"*{suffix}") if p.is_file()) if folder.is_dir() else 0

        return Census(count("_versions", ".manifest"), count("_transactions", ".txn"),
                      count("_deletions", ""), count("data", ".lance"))

    def tags(self, family: str) -> dict[str, tuple[str | None, int]]:
        """Tags as the reference's reader lists them (for either world)."""
        return {n: (t.branch, t.version) for n, t in Dataset(self.uri(family)).tags().items()}

    def branches(self, family: str) -> dict[str, tuple[str | None, int]]:
        return {n: (b.parent_branch, b.parent_version) for n, b in Dataset(self.uri(family)).branches().items()}


def model_layout(root: RootModel, version: int) -> Layout:
    """The layout the model says ``version`` of ``root`` has."""
    v = root.versions[version]
    bases = tuple(sorted(((b.name, b.is_dataset_root, b.dir, b.file_uri) for b in v.bases), key=repr))
    frags = tuple((f.id, len(f.rows), (f.data_home,), len(f.deleted), f.deletion_home) for f in v.fragments)
    return Layout(bases, frags)


# --- both worlds ---------------------------------------------------------------------------------------


class SideBySide:
    """The model and the two worlds, operation by operation, with the comparisons of the module docstring.

    ``run(op)`` applies ``op`` (``op`` must be valid for the model: generators guarantee it) and checks; a
    failure raises ``Divergence`` (or the writer's exception) after the sequence so far has been written to
    the trace file.

    ``writers`` picks the worlds (both by default; ``("reference",)`` holds the reference alone to the model)
    and ``readers`` the readers every world is read with (default: every writer's). With one world, an
    operation pylance alone refuses is skipped and files are not counted against another world.
    """

    def __init__(self, directory: Path, trace_path: Path | None = None,
                 known: Iterable[str] = KNOWN_FINDINGS, writers: Sequence[Writer] = WRITERS,
                 readers: Sequence[Writer] | None = None) -> None:
        self.dir = directory
        self.model = Model(known)
        self.worlds = {w: World(directory / w, w) for w in writers}
        self.readers: tuple[Writer, ...] = tuple(readers if readers is not None else writers)
        self.trace: list[Operation] = []
        self.trace_path = trace_path

    # --- running --------------------------------------------------------------------------------

    def run(self, op: Operation) -> Outcome:
        self.trace.append(op)
        try:
            return self._run(op)
        except BaseException as exc:
            where = self.dump(str(exc))
            if where is not None and isinstance(exc, Exception):
                exc.add_note(f"lancespec machine: {len(self.trace)} operations written to {where}; "
                             f"`python -m lancespec.conformance.machine export {where}` makes a scenario of them")
            raise

    def dump(self, error: str) -> Path | None:
        path = self.trace_path
        if path is None:
            return None
        write_trace(path, self.trace, error)
        return path

    def _run(self, op: Operation) -> Outcome:
        before = self.model
        snapshot = _copy_model(before)
        outcome = before.apply(op)
        if outcome.kind == "divergent":
            if "pylance" in self.worlds and "reference" in self.worlds:
                self._probe(op, snapshot, outcome)
            return outcome
        errors: dict[Writer, BaseException | None] = {}
        for writer, world in self.worlds.items():
            try:
                world.apply(op, snapshot)
                errors[writer] = None
            except Exception as exc:  # compared below
                errors[writer] = exc
        if outcome.kind == "refused":
            for writer, error in errors.items():
                if error is None:
                    raise Divergence(f"{writer} accepted {op}, which the model refuses")
            for key in self.touched(op):  # a refusal changes nothing
                self.check_versions(self.model.roots[key])
            return outcome
        for writer, error in errors.items():
            if error is not None:
                raise Divergence(f"{writer} refused {op}: {type(error).__name__}: {error}") from error
        self.check_after(op)
        return outcome

    def _scratch_target(self, op: Operation, world: World, where: Path) -> str:
        """Where a probe applies ``op`` in ``world``: a copy of the root it writes, or a fresh directory."""
        if isinstance(op, Append | Delete | AddBase):
            shutil.copytree(world.uri(op.root), where)
        return str(where)

    def _probe(self, op: Operation, model: Model, outcome: Outcome) -> None:
        """A known divergence (``outcome.finding``): each writer applies ``op`` in a scratch copy, pylance must
        do what the finding records and the reference what the model (without the finding) says; neither
        world changes, so the worlds stay comparable file by file (a refusal may leave files behind, F-020)."""
        if isinstance(op, Cleanup):
            self._probe_cleanup(op, model, outcome)
            return
        scratch = Path(tempfile.mkdtemp(prefix="probe-", dir=self.dir))
        try:
            results: dict[Writer, Exception | None] = {}
            targets: dict[Writer, str] = {}
            for writer, world in self.worlds.items():
                targets[writer] = self._scratch_target(op, world, scratch / writer)
                try:
                    world.apply(op, model, target=targets[writer])
                    results[writer] = None
                except Exception as exc:  # judged below
                    results[writer] = exc
            if results["reference"] is not None:
                raise Divergence(f"the reference refused {op} ({outcome.finding}): {results['reference']}")
            without = _copy_model(model)
            without.known = model.known - {outcome.finding or ""}
            without.apply(op)
            if isinstance(op, Delete):  # F-022: pylance commits an empty version, the reference nothing
                if results["pylance"] is not None:
                    raise Divergence(f"pylance refused {op} ({outcome.finding}): {results['pylance']}")
                root = model.roots[op.root]
                want = sorted(root.versions)
                for writer, extra in (("reference", []), ("pylance", [root.latest + 1])):
                    got = Dataset(targets[writer]).versions()
                    if got != want + extra:
                        raise Divergence(f"{writer} probe of {op} lists versions {got}, not {want + extra} "
                                         f"({outcome.finding})")
                got_rows = ref.dataset(targets["pylance"]).to_table().to_pylist()
                if got_rows != expected_rows(root.head.live_ids()):
                    raise Divergence(f"pylance's empty version of {op} changed the rows ({outcome.finding})")
                return
            if results["pylance"] is None:
                raise Divergence(f"pylance accepted {op}; the model expects it to refuse ({outcome.finding})")
            if isinstance(op, AddBase):
                added = Dataset(targets["reference"]).snapshot().bases
                registered = self.worlds["reference"].registered(op.base.dir, op.base.file_uri)
                if not any(b.path == registered for b in added):
                    raise Divergence(f"the reference did not register {op.base} ({outcome.finding})")
                return
            if isinstance(op, DeepClone):
                assert op.version is not None
                want_ids = model.roots[root_dir(op.family, op.branch)].versions[op.version].live_ids()
            else:
                want_ids = without.roots[getattr(op, "root", "")].head.live_ids()
            got_rows = ref.dataset(targets["reference"]).to_table().to_pylist()
            if got_rows != expected_rows(want_ids):
                raise Divergence(f"the reference's {type(op).__name__} reads {got_rows}, not {want_ids} "
                                 f"({outcome.finding})")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _probe_cleanup(self, op: Cleanup, model: Model, outcome: Outcome) -> None:
        """F-031: the history so far is replayed into scratch worlds (roots refer to each other by absolute
        paths, so a copy would not do) and both writers clean up there. The reference must leave every root
        that keeps files in the cleaned root reading what the model without the finding says; pylance must
        have lost one of them."""
        scratch = Path(tempfile.mkdtemp(prefix="probe-", dir=self.dir))
        try:
            replica = SideBySide(scratch, known=model.known, writers=tuple(self.worlds), readers=self.readers)
            for earlier in self.trace[:-1]:
                replica.run(earlier)
            without = _copy_model(model)
            without.known = model.known - {outcome.finding or ""}
            without.apply(op)
            readers = [r for r in without.roots.values()
                       if r.dir != op.root and any(f.data_home == f"{op.root}/data" for f in r.head.fragments)]
            for world in replica.worlds.values():
                world.apply(op, model)
            lost = []
            for root in readers:
                want = expected_rows(root.head.live_ids())
                if replica.worlds["reference"].rows(root.dir, root.latest, "reference") != want:
                    raise Divergence(f"after the reference's {op}, {root.dir} no longer reads {want} "
                                     f"({outcome.finding})")
                try:
                    replica.worlds["pylance"].rows(root.dir, root.latest, "pylance")
                except Exception:  # the file pylance deleted
                    lost.append(root.dir)
            if not lost:
                raise Divergence(f"pylance's {op} kept every file {[r.dir for r in readers]} read; the model expects "
                                 f"it to lose one ({outcome.finding})")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    # --- checks ---------------------------------------------------------------------------------

    def check_versions(self, root: RootModel) -> None:
        want = sorted(root.versions)
        for writer, world in self.worlds.items():
            got = world.versions(root.dir, writer)
            if got != want:
                raise Divergence(f"{writer} world lists versions {got} of {root.dir}; the model keeps {want}")

    def check_rows(self, root: RootModel, version: int, cross: bool = True) -> None:
        want = expected_rows(root.versions[version].live_ids())
        for writer, world in self.worlds.items():
            for reader in self.readers if cross else (writer,):
                got = world.rows(root.dir, version, reader)
                if got != want:
                    ids = [r.get("id") for r in got]
                    raise Divergence(f"{reader} reads ids {ids} from {root.dir} v{version} written by {writer}; "
                                     f"the model says {[r['id'] for r in want]}")

    def check_layout(self, root: RootModel, version: int) -> None:
        want = model_layout(root, version)
        for writer, world in self.worlds.items():
            got = world.layout(root.dir, version)
            if writer == "reference" and root.reference_only_bases:
                # F-019: the reference's deep clone keeps the source's non-root bases; pylance registers none.
                kept = root.reference_only_bases
                got = Layout(tuple(b for b in got.bases if b[1] or b[2] not in kept), got.fragments)
            if got != want:
                raise Divergence(f"{writer} world: {root.dir} v{version} has layout\n  {got}\nthe model says\n  {want}")

    def check_census(self, root: RootModel) -> None:
        if len(self.worlds) < 2:
            return
        ref_census, pyl_census = (self.worlds[w].census(root.dir) for w in WRITERS)
        if ref_census != pyl_census:
            raise Divergence(f"{root.dir} holds {ref_census} in the reference world, {pyl_census} in pylance's")

    def check_refs(self, family: str) -> None:
        for what, want in (("tags", self.model.tags[family]), ("branches", self.model.branches[family])):
            for writer, world in self.worlds.items():
                got = world.tags(family) if what == "tags" else world.branches(family)
                if got != want:
                    raise Divergence(f"{writer} world: {family} {what} {got}; the model says {want}")

    def check_root(self, root: RootModel, every_version: bool = False) -> None:
        self.check_versions(root)
        self.check_rows(root, root.latest)
        self.check_layout(root, root.latest)
        self.check_census(root)
        if every_version:
            for version in sorted(root.versions):
                if version != root.latest:
                    self.check_rows(root, version, cross=False)

    def touched(self, op: Operation) -> list[str]:
        if isinstance(op, Tag | Branch):
            return [root_dir(op.family, op.branch if isinstance(op, Tag) else op.name)]
        if isinstance(op, ShallowClone | DeepClone):
            return [op.target]
        return [op.root]

    def check_after(self, op: Operation) -> None:
        for key in self.touched(op):
            self.check_root(self.model.roots[key], every_version=isinstance(op, Cleanup))
        if isinstance(op, Tag | Branch):
            self.check_refs(op.family)
        if isinstance(op, Cleanup):  # nothing another root depends on went away
            for root in self.model.roots.values():
                if root.dir != op.root:
                    self.check_versions(root)
                    self.check_rows(root, root.latest, cross=False)

    def check_all(self) -> None:
        """Every version of every root, both readers on both worlds; refs of every family."""
        for root in self.model.roots.values():
            self.check_versions(root)
            for version in sorted(root.versions):
                self.check_rows(root, version)
                self.check_layout(root, version)
            self.check_census(root)
        for family in self.model.tags:
            self.check_refs(family)


def _copy_model(model: Model) -> Model:
    """A deep enough copy to map an operation's names and paths as they were before it."""
    copy = Model(model.known)
    copy.roots = {k: replace(r, versions=dict(r.versions)) for k, r in model.roots.items()}
    copy.tags = {k: dict(v) for k, v in model.tags.items()}
    copy.branches = {k: dict(v) for k, v in model.branches.items()}
    copy.next_row, copy.counter = model.next_row, model.counter
    return copy


# --- traces ---------------------------------------------------------------------------------------------


def modelled_findings() -> frozenset[str]:
    """``KNOWN_FINDINGS`` less those named in ``LANCESPEC_MACHINE_UNMODELLED`` (comma-separated; ``all``):
    a run that looks for them again."""
    dropped = {f.strip() for f in os.environ.get("LANCESPEC_MACHINE_UNMODELLED", "").split(",") if f.strip()}
    return frozenset() if "all" in dropped else KNOWN_FINDINGS - dropped


def default_trace_path() -> Path:
    configured = os.environ.get("LANCESPEC_MACHINE_TRACE")
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / "lancespec-machine" / "last-failure.json"


def write_trace(path: Path, ops: Sequence[Operation], error: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format": TRACE_FORMAT, "error": error, "operations": [operation_to_dict(op) for op in ops]}
    path.write_text(json.dumps(payload, indent=1) + "\n")


def load_trace(path: Path | str) -> tuple[list[Operation], dict[str, Any]]:
    data = json.loads(Path(path).read_text())
    if data.get("format") != TRACE_FORMAT:
        raise ValueError(f"{path}: not a {TRACE_FORMAT} file")
    return [cast(Operation, operation_from_dict(o)) for o in data["operations"]], data


def replay(ops: Sequence[Operation], directory: Path, check_all: bool = True,
           known: Iterable[str] = KNOWN_FINDINGS) -> SideBySide:
    """Run ``ops`` side by side in ``directory`` with every comparison; raise on the first divergence.
    ``known``: the findings the model branches on (see ``strategies.KNOWN_FINDINGS``)."""
    runner = SideBySide(directory, known=known)
    for op in ops:
        runner.run(op)
    if check_all:
        runner.check_all()
    return runner


# --- the Hypothesis machine -----------------------------------------------------------------------------


class WriterMachine(RuleBasedStateMachine):
    """Random sequences of operations on the reference and on pylance, compared after every step.

    Use ``WriterMachine.TestCase`` (settings come from the active Hypothesis profile; ``stateful_step_count``
    bounds the length of a sequence)."""

    def __init__(self) -> None:
        super().__init__()
        self._tmp = Path(tempfile.mkdtemp(prefix="lancespec-machine-"))
        self.side = SideBySide(self._tmp, default_trace_path(), known=modelled_findings())
        self.started = False
        self._failed = False

    def teardown(self) -> None:
        try:
            if self.started and not self._failed:
                try:
                    self.side.check_all()
                except BaseException as exc:
                    self.side.dump(f"final check: {exc}")
                    raise
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _do(self, draw: Callable[[st.SearchStrategy[Any]], Any], kind: str) -> None:
        op = draw_operation(draw, self.side.model, kind)
        if op is None:
            event(f"{kind}: nothing to do")
            return
        try:
            outcome = self.side.run(op)
        except BaseException:
            self._failed = True
            raise
        event(f"{kind}: {outcome.kind}" + (f" ({outcome.finding})" if outcome.finding else ""))
        if outcome.removed:
            event("cleanup removed versions")

    @initialize(data=st.data())
    def create(self, data: st.DataObject) -> None:
        self.started = True
        try:
            self.side.run(draw_create(data.draw, self.side.model))
        except BaseException:
            self._failed = True
            raise

    @rule(data=st.data())
    def append(self, data: st.DataObject) -> None:
        self._do(data.draw, "append")

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        self._do(data.draw, "delete")

    @rule(data=st.data())
    def add_base(self, data: st.DataObject) -> None:
        self._do(data.draw, "add_base")

    @rule(data=st.data())
    def tag(self, data: st.DataObject) -> None:
        self._do(data.draw, "tag")

    @rule(data=st.data())
    def branch(self, data: st.DataObject) -> None:
        self._do(data.draw, "branch")

    @rule(data=st.data())
    def shallow_clone(self, data: st.DataObject) -> None:
        self._do(data.draw, "shallow_clone")

    @rule(data=st.data())
    def deep_clone(self, data: st.DataObject) -> None:
        self._do(data.draw, "deep_clone")

    @rule(data=st.data())
    def relocate(self, data: st.DataObject) -> None:
        self._do(data.draw, "relocate")

    @rule(data=st.data())
    def cleanup(self, data: st.DataObject) -> None:
        self._do(data.draw, "cleanup")


# --- shrinking and exporting ----------------------------------------------------------------------------


def _failure(ops: Sequence[Operation], known: Iterable[str]) -> str | None:
    """The first line of the divergence ``ops`` end in (temporary paths removed), or None if they agree."""
    with tempfile.TemporaryDirectory(prefix="lancespec-shrink-") as tmp:
        try:
            replay(ops, Path(tmp), known=known)
        except (ModelError, KeyError, StopIteration):
            return None  # not a valid sequence any more (a removed step introduced a name a later one uses)
        except Exception as exc:
            text = str(exc).replace(tmp, "{tmp}").splitlines()[0]
            return f"{type(exc).__name__}: {text}"
    return None


def _kind_of(failure: str) -> str:
    """What a failure is about, for telling "the same divergence" from another one while shrinking."""
    return failure.split(":", 2)[0] + ":" + failure.split(":", 2)[1][:40] if failure.count(":") >= 2 else failure


def shrink(ops: Sequence[Operation], known: Iterable[str] = KNOWN_FINDINGS) -> tuple[list[Operation], str]:
    """Remove operations one at a time (last first) for as long as the replay still fails the same way;
    Hypothesis's own shrinking cannot drop a step whose drawn names later steps use. Returns the shrunk
    sequence and its failure."""
    known = frozenset(known)
    current = list(ops)
    failure = _failure(current, known)
    if failure is None:
        raise ValueError("the sequence does not fail: nothing to shrink")
    target = _kind_of(failure)
    changed = True
    while changed:
        changed = False
        for i in reversed(range(1, len(current))):  # the Create stays
            candidate = current[:i] + current[i + 1:]
            found = _failure(candidate, known)
            if found is not None and _kind_of(found) == target:
                current, failure, changed = candidate, found, True
    return current, failure


class ExportError(ValueError):
    """A sequence the scenario format cannot express."""


def _location(directory: str) -> str:
    """World-relative directory -> scenario location: roots in ``main``, bases in ``cold``, relocation
    copies in ``warm`` (docs/scenario-format.md "Locations")."""
    if directory.startswith("bases/"):
        name = directory[len("bases/"):]
        head, _, rest = name.partition("/")
        bucket = "warm" if head.startswith("m") else "cold"
        return f"{bucket}:{name}" if not rest else f"{bucket}:{head}/{rest}"
    return f"main:{directory}"


def _reference(branch: str | None, version: int | None) -> dict[str, Any]:
    return {"branch": branch, "version": version}


def _base_entry(directory: str, name: str | None, is_root: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"at": _location(directory), "is_dataset_root": is_root}
    if name is not None:
        entry["name"] = name
    return entry


def _targets_args(model: Model, root: str, targets: Targets, version: VersionModel | None = None) -> dict[str, Any]:
    if targets is None:
        return {}
    if targets == "all":
        return {"target_all_bases": True}
    if targets == "bases":
        return {"target_all_bases": False}
    head = version if version is not None else model.roots[root].head
    names = []
    for directory in targets:
        base = head.base_by_dir(directory)
        if base.name is None:
            raise ExportError(f"target {directory} is an unnamed base: scenarios name targets by name")
        names.append(base.name)
    return {"target_bases": names}


def _expect(model: Model, root_key: str, op: Operation) -> dict[str, Any]:
    root = model.roots[root_key]
    head = root.head
    expect: dict[str, Any] = {"version": root.latest, "rows": len(head.live_ids()), "ids": sorted(head.live_ids())}
    if isinstance(op, Cleanup):
        expect["versions"] = sorted(root.versions)
    files: dict[str, int] = {}
    for f in head.fragments:
        files[_location(f.data_home)] = files.get(_location(f.data_home), 0) + 1
    expect["files"] = files
    if not root.reference_only_bases:  # F-019: a deep clone's bases differ between correct writers' choices
        expect["bases"] = {b.name: _location(b.dir) for b in head.bases if b.name is not None}
        expect["unnamed_bases"] = sorted(_location(b.dir) for b in head.bases if b.name is None)
    return expect


EXPORT_KNOWN = frozenset({"F-027"})
"""The findings the exported expectations keep: a correct writer never writes into a clone's source (F-027);
for the others the expectations say what the reference (and the seeds) do, so pylance's divergent step
fails there and is listed in its capability file."""


def to_scenario(ops: Sequence[Operation], name: str, description: str, *, finding: str | None = None,
                requirements: Sequence[str] = (), error: str = "") -> dict[str, Any]:
    """A ``lancespec.scenario/1`` document (docs/scenario-format.md) for ``ops``, each step expecting the state
    the model (with ``EXPORT_KNOWN``) says a correct writer leaves. ``origin`` keeps the machine's trace, so
    the scenario also replays side by side (``replay_scenario``)."""
    model = Model(EXPORT_KNOWN)
    steps: list[dict[str, Any]] = []
    for op in ops:
        before = _copy_model(model)
        outcome = model.apply(op)
        step: dict[str, Any]
        root_key: str
        if isinstance(op, Create):
            step = {"op": "create", "dataset": op.root, "at": _location(op.root),
                    "data": {"rows": [op.start, op.count]}, "max_rows_per_file": op.max_rows_per_file}
            if op.bases:
                step["bases"] = [_base_entry(b.dir, b.name, b.is_dataset_root) for b in op.bases]
            step.update(_targets_args(before, op.root, op.targets, Model.initial_version(op)))
            root_key = op.root
        elif isinstance(op, Append):
            step = {"op": "append", "dataset": op.root, "data": {"rows": [op.start, op.count]},
                    "max_rows_per_file": op.max_rows_per_file, **_targets_args(before, op.root, op.targets)}
            root_key = op.root
        elif isinstance(op, Delete):
            step = {"op": "delete", "dataset": op.root, "predicate": op.predicate}
            root_key = op.root
        elif isinstance(op, AddBase):
            step = {"op": "add_bases", "dataset": op.root,
                    "bases": [_base_entry(op.base.dir, op.base.name, op.base.is_dataset_root)]}
            root_key = op.root
        elif isinstance(op, Tag):
            step = {"op": "tag_create", "dataset": op.family, "tag": op.name,
                    "reference": _reference(op.branch, op.version)}
            root_key = op.family
        elif isinstance(op, Branch):
            root_key = root_dir(op.family, op.name)
            step = {"op": "branch_create", "dataset": op.family, "branch": op.name,
                    "reference": _reference(op.parent, op.version), "as": root_key}
        elif isinstance(op, ShallowClone):
            step = {"op": "shallow_clone", "dataset": op.family, "target": _location(op.target),
                    "reference": op.tag, "as": op.target}
            root_key = op.target
        elif isinstance(op, DeepClone):
            step = {"op": "deep_clone", "dataset": op.family, "target": _location(op.target),
                    "reference": _reference(op.branch, op.version), "as": op.target}
            root_key = op.target
        elif isinstance(op, Relocate):
            head = before.roots[op.root].head
            moves = {}
            for old, new in op.moves:
                base = head.base_by_dir(old)
                moves[base.name if base.name is not None else _location(old)] = _location(new)
            step = {"op": "relocate", "dataset": op.root, "moves": moves, "copy": True}
            root_key = op.root
        else:
            step = {"op": "cleanup", "dataset": op.root, "retain_versions": op.retain_versions,
                    "delete_unverified": op.delete_unverified, "error_if_tagged_old_versions": op.error_if_tagged}
            if op.older_than_zero:
                step["older_than_seconds"] = 0
            step = {k: v for k, v in step.items() if v is not None}
            root_key = op.root
        if outcome.kind == "refused":
            step["refuse"] = {"kind": "invalid_input", "mentions": ["tag"]}
        elif outcome.kind == "divergent":
            raise ExportError(f"{op}: the exported model has no reference behaviour for {outcome.finding}")
        else:
            expect = _expect(model, root_key, op)
            if isinstance(op, Tag):
                expect = {"tags": {op.name: op.version}}
            elif isinstance(op, Branch):
                expect = {**expect, "branches": [op.name]}
            step["expect"] = expect
        steps.append(step)
    document: dict[str, Any] = {
        "format": SCENARIO_FORMAT,
        "name": name,
        "description": description,
        "requirements": list(requirements),
        "steps": steps,
        "origin": {"source": "property-test", "machine": "lancespec.conformance.machine", "finding": finding,
                   "error": error, "trace": [operation_to_dict(op) for op in ops]},
    }
    return document


def export(ops: Sequence[Operation], name: str, directory: Path, description: str, *, finding: str | None = None,
           requirements: Sequence[str] = (), error: str = "") -> Path:
    """Write ``{directory}/{name}.json``, validated against the scenario format first; an existing file is
    never overwritten (scenario names are unique in the corpus)."""
    path = directory / f"{name}.json"
    if path.exists():
        raise ExportError(f"{path} exists: choose another --name")
    document = to_scenario(ops, name, description, finding=finding, requirements=requirements, error=error)
    parse_scenario(document, f"{name}.json")
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1) + "\n")
    return path


def scenario_trace(document: Mapping[str, Any]) -> tuple[list[Operation], str | None]:
    """The machine trace an exported scenario carries, and the finding it records."""
    origin = document.get("origin") or {}
    if "trace" not in origin:
        raise ValueError("the scenario carries no machine trace (origin.trace)")
    return [cast(Operation, operation_from_dict(o)) for o in origin["trace"]], origin.get("finding")


# --- command line ----------------------------------------------------------------------------------------


def _cmd_replay(args: argparse.Namespace) -> int:
    ops, _ = load_trace(args.trace)
    with tempfile.TemporaryDirectory(prefix="lancespec-replay-") as tmp:
        try:
            replay(ops, Path(tmp), known=_known(args))
        except Exception as exc:
            print(f"{len(ops)} operations: {type(exc).__name__}: {exc}")
            return 1
    print(f"{len(ops)} operations replayed; reference, pylance and the model agree")
    return 0


def _known(args: argparse.Namespace) -> frozenset[str]:
    dropped = set(args.unmodelled or [])
    return frozenset() if "all" in dropped else KNOWN_FINDINGS - dropped


def _cmd_shrink(args: argparse.Namespace) -> int:
    ops, _ = load_trace(args.trace)
    shrunk, failure = shrink(ops, _known(args))
    out = Path(args.out or args.trace)
    write_trace(out, shrunk, failure)
    print(f"{len(ops)} -> {len(shrunk)} operations, still failing: {failure}\nwritten to {out}")
    for op in shrunk:
        print(f"  {op}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    ops, data = load_trace(args.trace)
    error = str(data.get("error", ""))
    description = args.description or f"Found by the writer machine: {error.splitlines()[0] if error else ''}"
    path = export(ops, args.name, Path(args.to), description, finding=args.finding,
                  requirements=args.requirement or [], error=error)
    print(path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lancespec.conformance.machine",
                                     description="Replay, shrink or export a failing sequence of the writer machine "
                                                 "(the trace file a failing run writes).")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("replay", help="run a trace side by side again")
    p.add_argument("trace")
    p.add_argument("--unmodelled", action="append", help="a finding the model should not branch on (repeat; all)")
    p.set_defaults(func=_cmd_replay)
    p = sub.add_parser("shrink", help="drop operations while the trace still fails the same way")
    p.add_argument("trace")
    p.add_argument("--out", help="where to write the shrunk trace (default: over the input)")
    p.add_argument("--unmodelled", action="append", help="a finding the model should not branch on (repeat; all)")
    p.set_defaults(func=_cmd_shrink)
    p = sub.add_parser("export", help="turn a trace into a regression scenario (lancespec.scenario/1)")
    p.add_argument("trace")
    p.add_argument("--name", required=True, help="scenario name ([a-z0-9-]+)")
    p.add_argument("--to", default=str(builtin_dir()),
                   help="directory (default: the writer-certification corpus, %(default)s)")
    p.add_argument("--description")
    p.add_argument("--finding", help="the spec/findings.md entry the scenario keeps")
    p.add_argument("--requirement", action="append", help="a requirement id it exercises (repeat)")
    p.set_defaults(func=_cmd_export)
    args = parser.parse_args(argv)
    try:
        result: int = args.func(args)
    except (OSError, ValueError, KeyError, LanceSpecError) as exc:  # an unreadable trace, an inexpressible export
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return result


if __name__ == "__main__":
    sys.exit(main())

