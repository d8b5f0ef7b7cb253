"""What certification produces: findings (one breach of one requirement, at one place) and the report."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol


class RunEvidence(Protocol):
    """What an incremental run needs of a finished one (``conformance.since.Evidence``): said here as what the
    report asks of it, so that findings, the floor below the incremental run, imports nothing of it."""

    def to_json(self, findings: list[Finding]) -> dict[str, Any]: ...
    def add_version_findings(self, found: Iterable[Finding]) -> None: ...


class CarryNote(Protocol):
    """What an incremental run carried over from its earlier report (``conformance.since.CarriedOver``)."""

    def to_json(self) -> dict[str, Any]: ...
    def line(self) -> str: ...


@dataclass(frozen=True, order=True)
class Finding:
    """A breach of ``requirement`` found at ``path`` (always a URI or a file: the manifest, a data file, a
    ref file) of ``version`` (None for findings about the dataset as a whole, such as refs). ``detail``
    names the element inside ``path`` when there is one ("fragment 3 file x.lance", "base 1"); ``message``
    is a sentence a person can act on. ``known`` is the id of the documented divergence the finding
    matches (spec/divergences.toml), ``set_aside`` the ``--ignore``/baseline id that set it aside for the
    run (``conformance.divergences``)."""

    requirement: str
    severity: str
    version: int | None
    path: str
    message: str
    branch: str | None = None
    detail: str | None = None
    known: str | None = None
    set_aside: str | None = None
    code: str = ""

    def __post_init__(self) -> None:
        if not self.code:
            object.__setattr__(self, "code", self.requirement)

    def to_json(self) -> dict[str, object]:
        return {"requirement": self.requirement, "severity": self.severity, "version": self.version,
                "branch": self.branch, "path": self.path, "detail": self.detail, "message": self.message,
                "known_divergence": self.known, "set_aside_by": self.set_aside,
                "code": self.code}


@dataclass
class Report:
    """The outcome of certifying one dataset.

    ``readable`` is False when a selected version (or the dataset itself) could not be read at all (a
    breach: its finding names HIST-001); ``cannot_judge`` says why a readable version was not judged (it
    needs a feature lancespec does not know: MAN-011); ``cannot_read`` why the run stopped for the reader's
    setup (``errors.CannotRead``: no finding then); ``outcome`` names the one that holds (``EXIT_CODES``).
    ``internal_error`` says which check failed by a lancespec bug, and where in the code (exit 3; the
    findings are those of everything checked before).
    ``checks_run`` lists the checks that ran; ``requirements_checked`` the requirement ids they cover (the
    basis of the JUnit report: a requirement passes when it was checked and has no finding).
    ``versions`` are the main root's versions checked, ``branch_versions`` each branch's (--all-versions).
    ``set_aside`` maps each requirement or divergence id the run set aside to where it came from
    ("--ignore", "baseline FILE"); findings it set aside carry the id and count for nothing
    (``must_findings`` leaves them out, and so the exit status).
    ``evidence`` is what an incremental run needs of this one (None for a lazy run or one that did not
    finish); ``carried_over`` says what an incremental run carried from its earlier report
    (``conformance.since``); neither takes part in comparing reports (what was judged).
    """

    uri: str
    versions: list[int] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    checks_run: list[str] = field(default_factory=list)
    requirements_checked: list[str] = field(default_factory=list)
    readable: bool = True
    cannot_judge: list[str] = field(default_factory=list)
    internal_error: str | None = None
    cannot_read: str | None = None
    branch_versions: dict[str, list[int]] = field(default_factory=dict)
    set_aside: dict[str, str] = field(default_factory=dict)
    evidence: RunEvidence | None = field(default=None, compare=False)
    carried_over: CarryNote | None = field(default=None, compare=False)

    @property
    def counted_findings(self) -> list[Finding]:
        """The findings the run did not set aside."""
        return [f for f in self.findings if f.set_aside is None]

    @property
    def must_findings(self) -> list[Finding]:
        """The MUST findings the run did not set aside: any of them makes the dataset not conformant."""
        return [f for f in self.counted_findings if f.severity == "MUST"]

    @property
    def conformant(self) -> bool:
        return self.outcome == "conformant"

    @property
    def outcome(self) -> str:
        """``internal_error``, ``cannot_read`` (the reader's setup), ``breach`` (a MUST finding not set aside,
        or a selected version unreadable: ``UNREADABLE_REQUIREMENT``'s finding), ``cannot_judge`` or
        ``conformant``, the first that holds (docs/exit-codes.md)."""
        if self.internal_error is not None:
            return "internal_error"
        if self.cannot_read is not None:
            return "cannot_read"
        if not self.readable or self.must_findings:
            return "breach"
        return "cannot_judge" if self.cannot_judge else "conformant"

    @property
    def exit_code(self) -> int:
        """The exit status of the outcome (docs/exit-codes.md)."""
        return EXIT_CODES[self.outcome]


#: The exit status of each outcome: a breach is 1; cannot read and cannot judge are 2 (nothing is declared
#: broken); a lancespec bug is 3.
EXIT_CODES = {"conformant": 0, "breach": 1, "cannot_judge": 2, "cannot_read": 2, "internal_error": 3}
