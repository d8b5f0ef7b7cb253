"""The model and one world per writer, operation by operation (docs/properties.md "The machine").

``apply`` gives every world the same operation through its own writer and judges the outcome: a refusal of the
model must be every writer's, a success every writer's; a known divergence (``Outcome.kind == "divergent"``,
naming its finding in spec/findings.md) is probed in scratch copies, where pylance must do what the finding
records and the reference what the model without it says, and no world changes. The checks compare the roots an
operation touched with the model (versions, GC-001; rows read by every reader; the layout of bases and
fragments, BASE-004, BASE-009, BASE-010, CLONE-003; tags and branches) and the worlds with each other (how
many manifests, transaction, deletion and data files each root holds).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Sequence
from copy import deepcopy
from pathlib import Path

from conformance import operations as lang
from conformance.adapters.base import WriterRefusal
from conformance.model import KNOWN_FINDINGS, Model, Outcome, RootModel
from conformance.payload import expected_rows
from reference import api as ref
from reference.table import Dataset

from .worlds import Layout, Reader, World, model_layout

WRITERS: tuple[str, str] = ("reference", "pylance")


class Divergence(AssertionError):
    """What a world, a reader or the model disagree on."""


def touched(op: lang.ModelOperation) -> list[str]:
    """The roots ``op`` writes (for a tag or branch: the root whose version it names, or the new branch)."""
    if isinstance(op, lang.Tag | lang.Branch):
        return [lang.root_dir(op.family, op.branch if isinstance(op, lang.Tag) else op.name)]
    if isinstance(op, lang.ShallowClone | lang.DeepClone):
        return [op.target]
    return [op.root]


class SideBySide:
    """The model and one world per writer in ``directory``.

    ``run(op)`` applies ``op`` (valid for the model: generators guarantee it) and runs every check; ``apply``
    and the two ``check_*_after`` methods are its halves, for the machine, whose invariants check. ``writers``
    picks the worlds (names of the implementation registry; ``("reference",)`` holds the reference alone to the model),
    ``readers`` what every world is read with (default: each world's own reader). Without both the
    reference and pylance, a step only pylance refuses (a known divergence) is not applied.
    """

    def __init__(self, directory: Path, known: Iterable[str] = KNOWN_FINDINGS, writers: Sequence[str] = WRITERS,
                 readers: Sequence[Reader] | None = None) -> None:
        self.dir = directory
        self.model = Model(known)
        self.worlds = {w: World(directory / w, w) for w in writers}
        self.readers = tuple(readers if readers is not None else dict.fromkeys(w.reader for w in self.worlds.values()))
        self.trace: list[lang.ModelOperation] = []

    def run(self, op: lang.ModelOperation) -> Outcome:
        """``apply`` then the checks, in the machine's order (its invariants run by name)."""
        outcome = self.apply(op)
        self.check_worlds_after(op, outcome)
        self.check_model_after(op, outcome)
        return outcome

    def apply(self, op: lang.ModelOperation) -> Outcome:
        """Apply ``op`` to the model and every world; raise ``Divergence`` when a writer refuses what the model
        accepts or accepts what it refuses, or when a probe of a known divergence fails."""
        self.trace.append(op)
        outcome = self.model.apply(op)
        if outcome.kind == "divergent":  # the model stays as it was
            if all(w in self.worlds for w in WRITERS):
                self._probe(op, self.model, outcome)
            return outcome
        for writer, world in self.worlds.items():
            try:
                world.apply(op)
            except WriterRefusal as exc:  # anything else is a crash, never a refusal
                if outcome.kind == "ok" or exc.kind != outcome.refusal:
                    raise Divergence(f"{writer} refused {op} ({exc.kind}): {exc.message}") from exc
            else:
                if outcome.kind == "refused":
                    raise Divergence(f"{writer} accepted {op}, which the model refuses")
        return outcome

    # --- known divergences ------------------------------------------------------------------------

    @staticmethod
    def _without(model: Model, op: lang.ModelOperation, outcome: Outcome) -> Model:
        """``model`` after ``op``, were ``outcome.finding`` not known: what the reference must do."""
        without = deepcopy(model)
        without.known = model.known - {outcome.finding or ""}
        without.apply(op)
        return without

    def _probe(self, op: lang.ModelOperation, model: Model, outcome: Outcome) -> None:
        """Each writer applies ``op`` in a scratch copy of the root it writes (or a fresh directory); pylance
        must do what ``outcome.finding`` records, the reference what the model without it says (a refusal
        may leave files behind, F-020, so the worlds themselves stay untouched)."""
        if isinstance(op, lang.Cleanup):
            self._probe_cleanup(op, model, outcome)
            return
        with tempfile.TemporaryDirectory(prefix="probe-", dir=self.dir) as scratch:
            errors: dict[str, WriterRefusal | None] = dict.fromkeys(self.worlds)
            targets = {writer: f"{scratch}/{writer}" for writer in self.worlds}
            for writer, world in self.worlds.items():
                if isinstance(op, lang.Append | lang.Delete | lang.AddBase):
                    shutil.copytree(world.uri(op.root), targets[writer])
                try:
                    world.apply(op, target=targets[writer])
                except WriterRefusal as exc:  # judged below
                    errors[writer] = exc
            if errors["reference"] is not None:
                raise Divergence(f"the reference refused {op} ({outcome.finding}): {errors['reference']}")
            if isinstance(op, lang.Delete):  # F-022: pylance commits an empty version, the reference nothing
                root = model.roots[op.root]
                for writer, extra in (("reference", []), ("pylance", [root.latest + 1])):
                    if (got := Dataset(targets[writer]).versions()) != sorted(root.versions) + extra:
                        raise Divergence(f"{writer} probe of {op} lists versions {got} ({outcome.finding})")
                if ref.dataset(targets["pylance"]).to_table().to_pylist() != expected_rows(root.head.live_ids()):
                    raise Divergence(f"pylance's empty version of {op} changed the rows ({outcome.finding})")
                return
            if errors["pylance"] is None:
                raise Divergence(f"pylance accepted {op}; the model expects it to refuse ({outcome.finding})")
            if isinstance(op, lang.AddBase):
                registered = self.worlds["reference"].registered(op.base.dir, op.base.file_uri)
                if not any(b.path == registered for b in Dataset(targets["reference"]).snapshot().bases):
                    raise Divergence(f"the reference did not register {op.base} ({outcome.finding})")
                return
            if isinstance(op, lang.DeepClone):
                assert op.version is not None  # the machine draws deep clones of a version
                want = model.roots[lang.root_dir(op.family, op.branch)].versions[op.version].live_ids()
            else:
                want = self._without(model, op, outcome).roots[op.root].head.live_ids()
            if (got_rows := ref.dataset(targets["reference"]).to_table().to_pylist()) != expected_rows(want):
                raise Divergence(f"the reference's {type(op).__name__} reads {got_rows}, not {want} "
                                 f"({outcome.finding})")

    def _probe_cleanup(self, op: lang.Cleanup, model: Model, outcome: Outcome) -> None:
        """F-031: the history so far is replayed into scratch worlds (roots refer to each other by absolute
        paths, so a copy would not do) and both writers clean up there. The reference must leave every root
        that keeps files in the cleaned root reading what the model without the finding says; pylance must
        have lost one of them."""
        with tempfile.TemporaryDirectory(prefix="probe-", dir=self.dir) as scratch:
            replica = SideBySide(Path(scratch), known=model.known, writers=tuple(self.worlds), readers=self.readers)
            for earlier in self.trace[:-1]:
                replica.run(earlier)
            readers = [r for r in self._without(model, op, outcome).roots.values()
                       if r.dir != op.root and any(f.data_home == f"{op.root}/data" for f in r.head.fragments)]
            for world in replica.worlds.values():
                world.apply(op)
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

    # --- checks ---------------------------------------------------------------------------------

    def check_model_after(self, op: lang.ModelOperation, outcome: Outcome) -> None:
        """What ``op`` touched, in every world, against the model: only the versions after a refusal (a refusal
        changes nothing), nothing after a divergent step (no world changed)."""
        if outcome.kind == "divergent":
            return
        for key in touched(op):
            root = self.model.roots[key]
            self.check_versions(root)
            if outcome.kind == "ok":
                self.check_rows(root, root.latest)
                self.check_layout(root, root.latest)
                if isinstance(op, lang.Cleanup):
                    for version in sorted(root.versions)[:-1]:
                        self.check_rows(root, version, cross=False)
        if isinstance(op, lang.Tag | lang.Branch):
            self.check_refs(op.family)
        if isinstance(op, lang.Cleanup) and outcome.kind == "ok":  # nothing another root depends on went away
            for root in self.model.roots.values():
                if root.dir != op.root:
                    self.check_versions(root)
                    self.check_rows(root, root.latest, cross=False)

    def check_worlds_after(self, op: lang.ModelOperation, outcome: Outcome) -> None:
        """The roots ``op`` changed hold as many manifests, transaction, deletion and data files in every world."""
        if outcome.kind == "ok":
            for key in touched(op):
                self.check_census(key)

    def check_versions(self, root: RootModel) -> None:
        want = sorted(root.versions)
        for writer, world in self.worlds.items():
            got = world.versions(root.dir, world.reader)
            if got != want:
                raise Divergence(f"{writer} world lists versions {got} of {root.dir}; the model keeps {want}")

    def check_rows(self, root: RootModel, version: int, cross: bool = True) -> None:
        """Every world's rows of ``version`` as the model says, read by every reader (``cross``) or by the
        world's own."""
        want = expected_rows(root.versions[version].live_ids())
        for writer, world in self.worlds.items():
            for reader in self.readers if cross else (world.reader,):
                got = world.rows(root.dir, version, reader)
                if got != want:
                    raise Divergence(f"{reader} reads ids {[r.get('id') for r in got]} from {root.dir} v{version} "
                                     f"written by {writer}; the model says {[r['id'] for r in want]}")

    def check_layout(self, root: RootModel, version: int) -> None:
        want = model_layout(root, version)
        for writer, world in self.worlds.items():
            got = world.layout(root.dir, version)
            if root.reference_only_bases:
                # F-019: a deep clone may keep the source's non-root bases (the reference) or register none
                # (pylance); either is correct, so they are not compared.
                kept = root.reference_only_bases
                got = Layout(tuple(b for b in got.bases if b[1] or b[2] not in kept), got.fragments)
            if got != want:
                raise Divergence(f"{writer} world: {root.dir} v{version} has layout\n  {got}\nthe model says\n  {want}")

    def check_census(self, key: str) -> None:
        censuses = {writer: world.census(key) for writer, world in self.worlds.items()}
        if any(census != next(iter(censuses.values())) for census in censuses.values()):
            raise Divergence(f"{key} holds different files per world: {censuses}")

    def check_refs(self, family: str) -> None:
        want = {"tags": self.model.tags[family], "branches": self.model.branches[family]}
        for writer, world in self.worlds.items():
            got = world.refs(family)
            if got != want:
                raise Divergence(f"{writer} world: {family} refs {got}; the model says {want}")

    def check_all(self) -> None:
        """Every version of every root, every reader on every world; refs of every family."""
        for root in self.model.roots.values():
            self.check_versions(root)
            for version in sorted(root.versions):
                self.check_rows(root, version)
                self.check_layout(root, version)
            self.check_census(root.dir)
        for family in self.model.tags:
            self.check_refs(family)


def replay(ops: Sequence[lang.ModelOperation], directory: Path,
           known: Iterable[str] = KNOWN_FINDINGS) -> SideBySide:
    """Run ``ops`` side by side in ``directory`` with every comparison, then ``check_all``; raise on the first
    divergence. ``known``: the findings the model branches on."""
    runner = SideBySide(directory, known=known)
    for op in ops:
        runner.run(op)
    runner.check_all()
    return runner


def first_failure(ops: Sequence[lang.ModelOperation], known: Iterable[str]) -> str:
    """The first line of the divergence a side-by-side replay of ``ops`` ends in (its scratch folder written
    ``{tmp}``), or ``""`` when the writers and the model agree."""
    with tempfile.TemporaryDirectory(prefix="lancespec-replay-") as tmp:
        try:
            replay(ops, Path(tmp), known=known)
        except Exception as exc:
            lines = str(exc).replace(tmp, "{tmp}").splitlines()
            return f"{type(exc).__name__}: {lines[0] if lines else ''}"
    return ""
