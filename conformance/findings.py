"""What certification produces: findings (one breach of one requirement, at one place) and the report."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Finding:
    """A breach of ``requirement`` found at ``path`` (a URI or a file) of ``version`` (None for findings
    about the dataset as a whole, such as refs). ``message`` is a sentence a person can act on."""

    requirement: str
    severity: str
    version: int | None
    path: str
    message: str
    branch: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"requirement": self.requirement, "severity": self.severity, "version": self.version,
                "branch": self.branch, "path": self.path, "message": self.message}


@dataclass
class Report:
    """The outcome of certifying one dataset.

    ``readable`` is False when a selected version (or the dataset itself) could not be read at all;
    ``cannot_judge`` says why a readable version was not judged (it needs a feature lancespec does not
    know: MAN-011); in both cases certify exits 2. ``internal_error`` says which check failed by a
    lancespec bug, and where in the code (exit 3; the findings are those of everything checked before).
    ``checks_run`` lists the checks that ran; ``requirements_checked`` the requirement ids they cover (the
    basis of the JUnit report: a requirement passes when it was checked and has no finding).
    """

    uri: str
    versions: list[int] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    checks_run: list[str] = field(default_factory=list)
    requirements_checked: list[str] = field(default_factory=list)
    readable: bool = True
    cannot_judge: list[str] = field(default_factory=list)
    internal_error: str | None = None

    @property
    def must_findings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "MUST"]

    @property
    def conformant(self) -> bool:
        return self.readable and not self.cannot_judge and self.internal_error is None and not self.must_findings

    @property
    def exit_code(self) -> int:
        if self.internal_error is not None:
            return 3
        if not self.readable or self.cannot_judge:
            return 2
        return 1 if self.must_findings else 0
