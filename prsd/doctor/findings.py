"""What ``prsd doctor`` found: one finding per check, and the verdict over all of them."""

from __future__ import annotations

from dataclasses import dataclass, field

from prsd.spool.fstype import Level


@dataclass(frozen=True)
class Finding:
    """The result of one check.

    Attributes:
        check: the check's name (``rename-race``, ``o-excl``...).
        level: OK, WARN or FAIL.
        detail: one line saying what was seen and, on a failure, what to do.
    """

    check: str
    level: Level
    detail: str

    def line(self) -> str:
        """``FAIL  rename-race: ...`` for the command line."""
        return f"{self.level.name.lower():<4}  {self.check}: {self.detail}"


@dataclass
class Report:
    """Every finding of one doctor run over one spool."""

    spool: str
    findings: list[Finding] = field(default_factory=list)

    def add(self, check: str, level: Level, detail: str) -> Finding:
        """Record a finding (and return it)."""
        finding = Finding(check, level, detail)
        self.findings.append(finding)
        return finding

    @property
    def level(self) -> Level:
        """The worst level found (OK for an empty report)."""
        return max((f.level for f in self.findings), default=Level.OK)

    def failures(self) -> list[Finding]:
        """The findings that refuse the spool."""
        return [f for f in self.findings if f.level is Level.FAIL]

    def reason(self) -> str:
        """Why the spool is refused, as one line (empty when it is not)."""
        return "; ".join(f"{f.check}: {f.detail}" for f in self.failures())

    def lines(self) -> list[str]:
        """The report for the command line: a heading and one line per finding."""
        verdict = {Level.OK: "OK", Level.WARN: "OK with warnings", Level.FAIL: "REFUSED"}
        return [f"{self.spool}: {verdict[self.level]}", *(f.line() for f in self.findings)]
