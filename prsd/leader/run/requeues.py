"""Tasks that never finished go back to pending, each as its next attempt.

A task handed back by its agent (``returned/``) or claimed by a node presumed dead is
renamed to ``tasks/pending/`` under a new attempt name (the job folder's ``requeue``,
after the driver's fence: a deposed leader never makes attempt names). Its
mini-batches are booked "requeued" (no retry used up: it was not their fault), one
attempt row each. Exactly-once holds as for any requeue: the old name can never
commit (its claim file is gone), and the new attempt is a name no task used.

Errors: a rename that loses its race (the task committed or moved meanwhile) is
skipped, not raised; OSError from the spool and the fence's errors propagate to the
job's boundary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from prsd.leader.run.joblogs import AttemptRow
from prsd.leader.run.tasks import OutTask
from prsd.wire.records import REQUEUED, Outcome

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from prsd.leader.run.book import JobBook
    from prsd.leader.run.tasks import TaskTable
    from prsd.leader.takeover.takeover import TakeOver
    from prsd.spool.finalrecord import FinalState
    from prsd.spool.jobfolder import JobFiles
    from prsd.spool.layout import JobLayout


class Issued(Protocol):
    """The leader's list of the task names it created (prsd.spool.issuelog.IssueLog)."""

    def add(self, names: Iterable[str]) -> None: ...


class Logs(Protocol):
    """The job's attempt rows and leader log (prsd.leader.run.joblogs.JobLogs)."""

    def attempts(self, rows: list[AttemptRow]) -> None: ...

    def master(self, message: str) -> None: ...


class RequeueHost(Protocol):
    """What of the job's driver requeueing reads and writes (prsd.leader.run.job)."""

    @property
    def layout(self) -> JobLayout: ...

    @property
    def folder(self) -> JobFiles: ...

    @property
    def table(self) -> TaskTable: ...

    @property
    def book(self) -> JobBook: ...

    @property
    def fence(self) -> Callable[[], None]: ...

    @property
    def takeover(self) -> TakeOver | None: ...

    @property
    def final(self) -> FinalState | None: ...

    @property
    def issued(self) -> Issued: ...

    @property
    def logs(self) -> Logs: ...

    def requeue_task(self, out: OutTask, src: Path, why: str) -> bool: ...


class Requeues:
    """The driver's requeue steps, mixed into :class:`prsd.leader.run.job.JobDriver`
    (and into a test's driver over a folder in memory)."""

    def requeue_task(self: RequeueHost, out: OutTask, src: Path, why: str) -> bool:
        """Move ``out`` (at ``src``) back to pending as its next attempt; False: it had
        moved on (committed, or taken by another rename) and nothing was done."""
        self.fence()  # a deposed leader must not create attempt names (handed back or lost)
        table = self.table
        new = out.task.next_attempt(table.epoch)
        if not self.folder.requeue(src, new):
            return False
        self.issued.add([new.name])
        table.drop(out.task.name)
        rows = []
        for i in out.indices:
            outcome = Outcome(index=i, status=REQUEUED, error="")
            rows.append(AttemptRow(outcome, out.task.attempt, src.parent.name))
            self.book.ledger.requeue(i)
        table.adopt(OutTask(new, out.indices))
        self.logs.attempts(rows)
        self.logs.master(f"task {out.task.name} {why}; requeued as {new.name}")
        return True

    def scan_returned(self: RequeueHost) -> None:
        """Requeue every outstanding task its agent handed back (``returned/``)."""
        for name in self.folder.returned_names():
            out = self.table.outstanding.get(name)
            if out is not None:
                self.requeue_task(out, self.layout.returned_task(out.task), "handed back")

    def requeue_lost_node(self: RequeueHost, node_id: str, why: str) -> int:
        """Move the claims of a node presumed dead back to pending; how many moved."""
        if self.takeover is not None:
            return 0  # adopted at the end of the take-over; the next check moves them
        layout = self.layout
        moved = 0
        for name in self.folder.claimed_names(node_id):
            out = self.table.outstanding.get(name)
            if out is None or self.final is not None:
                continue
            moved += self.requeue_task(out, layout.claimed_task(node_id, out.task), why)
        self.book.requeued_lost += moved
        if self.folder.free_seats(node_id):
            self.logs.master(f"node {node_id}'s seat is free for another node")
        return moved
