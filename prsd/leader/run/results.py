"""Reading a committed task's results into the job's book, the merge and bisection.

Invariant: a result is used once, for the live attempt of each of its mini-batches
(:meth:`prsd.leader.run.book.JobBook.current`); a second commit of one task name by
another node stops the job (the spool's renames are not atomic), and a result file
that is missing or torn counts as "requeued" (run again, no retry used up).

A task is booked as one unit when every one of its mini-batches succeeded on its live
attempt, whole (no error, every element returned) and its output bytes lie back to
back in the result file (the common case, :func:`whole_task`): one book call, one
merge piece for the task's byte range, one write of its attempt rows. Any other task
(a failure, a timeout, a requeue, a stale attempt, a short result, a Parquet output)
goes through the same steps one mini-batch at a time. Both paths leave the same
counts, output bytes and attempt rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.leader.run.joblogs import AttemptRow
from prsd.leader.run.merge import Piece
from prsd.leader.run.tasks import contiguous_runs
from prsd.spool.layout import mb_id
from prsd.wire.records import CRASHED, OOM, REQUEUED, SUCCEEDED, TIMEOUT, Outcome

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from prsd.jobspec import JobSpec
    from prsd.leader.run.bisect import Bisector
    from prsd.leader.run.book import JobBook
    from prsd.leader.run.joblogs import JobLogs
    from prsd.leader.run.ledger import Ledger
    from prsd.leader.run.merge import OrderedMerge
    from prsd.leader.run.nextstep import Step
    from prsd.leader.run.tasks import OutTask, TaskTable
    from prsd.spool.layout import JobLayout
    from prsd.wire.records import MiniBatch


@dataclass(frozen=True)
class Settled:
    """One committed task read: the mini-batches to run again, and their outcomes."""

    out: OutTask
    node_id: str
    again: list[int]
    outcomes: dict[int, Outcome]


@dataclass
class Results:
    """Reads results of committed tasks and records them (the driver's collaborators)."""

    layout: JobLayout
    spec: JobSpec
    table: TaskTable
    book: JobBook
    bisect: Bisector
    merge: OrderedMerge | None
    logs: JobLogs
    resuming: bool = False  # a take-over ingests the committed tasks it found
    whole_tasks: int = 0  # tasks booked as one unit (the rest: per mini-batch)

    def ingest(self, name: str, node_id: str, now: float) -> Settled | None:
        """Record task ``name`` committed by ``node_id`` (None: not outstanding)."""
        out = self.table.outstanding.get(name)
        if out is None:
            self.check_duplicate(name, node_id)
            return None
        result_path = self.layout.result(out.task, node_id)
        found = self.table.folder.read_result(out.task, node_id)
        meta = found.meta if found is not None else None
        ident = found.ident if found is not None else None
        outcomes = {o.index: o for o in meta.outcomes} if meta is not None else {}
        if meta is None:
            self.logs.master(f"task {name} from {node_id}: result file missing or torn; rerun")
        self.table.settle(name, node_id)
        run = self._whole(out, outcomes)
        if run is not None:
            self._ingest_whole(out, node_id, run, result_path, ident, now)
            return Settled(out, node_id, [], outcomes)
        rows: list[AttemptRow] = []
        again: list[int] = []
        task_file = self.layout.done_task(out.task, node_id)
        for i in out.indices:
            if not self.current(i, out.task.attempt):
                continue
            outcome = outcomes.get(i) or Outcome(index=i, status=REQUEUED)
            rows.append(AttemptRow(outcome, out.task.attempt, node_id))
            step = self.book.record(outcome, out.task.attempt, node_id, now)
            self.bisect.after(step, outcome, task_file, self.resuming)
            if step.final:
                self._final(i, step, outcome, result_path, ident)
            else:
                again.append(i)
        self.logs.attempts(rows)
        return Settled(out, node_id, again, outcomes)

    def _whole(self, out: OutTask, outcomes: dict[int, Outcome]) -> list[Outcome] | None:
        """The task's outcomes in order if it is booked as one unit (see the module)."""
        if self.merge is not None and not self.merge.takes_runs:
            return None
        return whole_task(out.indices, out.task.attempt, outcomes, self.book.ledger)

    def _ingest_whole(
        self,
        out: OutTask,
        node_id: str,
        run: list[Outcome],
        result_path: Path,
        ident: tuple[int, int] | None,
        now: float,
    ) -> None:
        attempt = out.task.attempt
        self.whole_tasks += 1
        self.book.record_succeeded(run, now)
        if self.merge is not None:
            first, last = run[0], run[-1]
            header = next((o.header for o in run if o.length), "")
            length = last.offset + last.length - first.offset
            piece = Piece(result_path, first.offset, length, header, ident, count=len(run))
            self.merge.offer(first.index, piece)
        self.logs.attempts([AttemptRow(o, attempt, node_id) for o in run])

    def retries(self, settled: Settled) -> list[list[MiniBatch]]:
        """The tasks to write for the mini-batches of ``settled`` that run again."""
        out, again, outcomes = settled.out, settled.again, settled.outcomes
        bodies = self.table.read_body(self.layout.done_task(out.task, settled.node_id))
        failed = [i for i in again if i in outcomes]
        unrun = [i for i in again if i not in outcomes]
        return [[bodies[i]] for i in failed] + [
            [bodies[i] for i in run] for run in contiguous_runs(unrun)
        ]

    def current(self, index: int, attempt: int) -> bool:
        """Is ``attempt`` the live attempt of mini-batch ``index``? (See JobBook.current.)"""
        live, lost = self.book.current(index, attempt)
        for outcome, at in lost:
            self.logs.attempts([AttemptRow(outcome, at, "")])
        return live

    def check_duplicate(self, name: str, node_id: str) -> None:
        first = self.table.ingested.get(name)
        if first is not None and first != node_id:
            raise PrsdError(
                f"task {name} was committed by both {first} and {node_id}: the spool's file "
                "system does not keep renames atomic (a blob mount?); the job is stopped so "
                "no result is used twice. Move the spool to NFS, Azure Files, Lustre or a "
                "local disk."
            )

    def _final(
        self, i: int, step: Step, outcome: Outcome, result_path: Path, ident: tuple[int, int] | None
    ) -> None:
        """Mini-batch ``i`` is final: hand its bytes (or none) to the merge."""
        piece = Piece(None)
        if step.succeeded:
            piece = Piece(result_path, outcome.offset, outcome.length, outcome.header, ident)
        if self.merge is not None:
            self.merge.offer(i, piece)
        if not step.succeeded and outcome.status in (CRASHED, OOM, TIMEOUT):
            self.logs.master(
                f"mini-batch {mb_id(i)} quarantined: its attempts ended {outcome.status} "
                f"{step.failures} times (max_retries {self.spec.max_retries}); it fails "
                "alone and the job goes on"
            )


def whole_task(
    indices: Sequence[int], attempt: int, outcomes: dict[int, Outcome], ledger: Ledger
) -> list[Outcome] | None:
    """The outcomes of ``indices`` in order when the task can be booked as one unit:
    consecutive mini-batches, each on its live attempt (planned, not final, at
    ``attempt``), succeeded with no error and every element returned, their output
    bytes back to back; None otherwise."""
    run: list[Outcome] = []
    end = -1
    for i in indices:
        o = outcomes.get(i)
        if (
            o is None
            or o.status != SUCCEEDED
            or o.error
            or o.succeeded_items < o.items
            or i >= len(ledger)
            or ledger.is_final(i)
            or ledger.attempt(i) != attempt
            or (run and (i != run[-1].index + 1 or o.offset != end))
        ):
            return None
        end = o.offset + o.length
        run.append(o)
    return run or None
