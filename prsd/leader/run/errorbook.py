"""Errors of a job grouped by message: counts, first occurrence, and the root cause.

Pure bookkeeping. ``job_error.txt`` and ``user/error.txt`` list each distinct error
once with how often it happened and where it first did; the first failure of the
job is its root cause, which ``job_result.txt``, ``prsd run`` and ``prsctl status``
lead with (Azure users spent days finding it in the log tree).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.spool.layout import mb_id

if TYPE_CHECKING:
    from collections.abc import Iterable

    from prsd.wire.records import Outcome

RECENT_ERRORS = 5


@dataclass(frozen=True)
class ErrorPlace:
    mini_batch: int
    attempt: int
    node_id: str
    process_name: str
    status: str
    error: str
    traceback_tail: str
    error_file: str

    def where(self, *, command: bool = False) -> str:
        """``mini-batch 3 (attempt 1) on node n, process001``; a command step's
        ``attempt 1 of the command on node n, process000``."""
        what = (
            f"attempt {self.attempt} of the command"
            if command
            else f"mini-batch {mb_id(self.mini_batch)} (attempt {self.attempt})"
        )
        return f"{what} on node {self.node_id}, {self.process_name or 'no worker'}"

    def brief(self) -> dict[str, Any]:
        """The place as a small JSON object (status.json ``last_errors``)."""
        return {
            "mini_batch": mb_id(self.mini_batch),
            "attempt": self.attempt,
            "node_id": self.node_id,
            "process_name": self.process_name,
            "status": self.status,
            "error": self.error,
        }


@dataclass
class ErrorGroup:
    message: str
    count: int
    first: ErrorPlace


@dataclass
class ErrorBook:
    groups: dict[str, ErrorGroup] = field(default_factory=dict)
    first: ErrorPlace | None = None
    system: list[str] = field(default_factory=list)
    recent: deque[ErrorPlace] = field(default_factory=lambda: deque(maxlen=RECENT_ERRORS))
    command: bool = False  # a pipeline's command step: places said as attempts of it

    def add(self, outcome: Outcome, attempt: int, node_id: str) -> None:
        """Count an attempt's error (succeeded attempts carry none)."""
        if not outcome.error:
            return
        place = ErrorPlace(
            outcome.index,
            attempt,
            node_id,
            outcome.process_name,
            outcome.status,
            outcome.error,
            outcome.traceback_tail,
            outcome.error_file,
        )
        if self.first is None:
            self.first = place
        self.recent.append(place)
        key = f"[{outcome.status}] {outcome.error}"
        group = self.groups.get(key)
        if group is None:
            self.groups[key] = ErrorGroup(key, 1, place)
        else:
            group.count += 1

    def ranked(self) -> list[ErrorGroup]:
        """Distinct errors, most frequent first (ties: the earliest mini-batch first)."""
        return sorted(self.groups.values(), key=lambda g: (-g.count, g.first.mini_batch))

    def summary(self, poison_items: Iterable[object] = ()) -> str:
        """One line per distinct error, most frequent first (job_error.txt, user/error.txt).

        Args:
            poison_items: items that bisection isolated as failing on their own; a
                section listing them follows the errors when there are any.
        """
        lines = []
        for g in self.ranked():
            where = g.first.where()
            log = f"; see {g.first.error_file}" if g.first.error_file else ""
            lines.append(f"{g.count} x {g.message} (first: {where}{log})")
        if not lines:
            lines.append("No errors.")
        poison = [str(p) for p in poison_items]
        if poison:
            lines.append("")
            lines.append(f"Poison items ({len(poison)}), isolated by bisection:")
            lines.extend(f"  {p}" for p in poison)
        return "\n".join(lines) + "\n"

    def root_cause(self) -> str:
        """The first failure, with its traceback's last lines and where the rest is."""
        p = self.first
        if p is None:
            return ""
        out = [f"First error: {p.where(command=self.command)}: {p.error}"]
        if p.traceback_tail:
            out.extend("  " + line for line in p.traceback_tail.rstrip().splitlines())
        if p.error_file:
            out.append(f"Full traceback: {p.error_file}")
        return "\n".join(out)
