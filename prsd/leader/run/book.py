"""The job's book: every count and every decision of one job, and no I/O.

A :class:`JobBook` is built from records (planned mini-batches, attempt outcomes,
node reports) and answers what the leader does next: whether an attempt is the live
one, whether a mini-batch is final, whether the job is done (and why), whether a
job-wide timeout has passed, and what the progress line and the status say. It
reads no clock (``now`` is handed in) and touches no file, so it is tested as a
value; :class:`~prsd.leader.run.job.JobDriver` is the I/O shell that feeds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prsd.leader.plan.packing import ewma
from prsd.leader.run.errorbook import ErrorBook
from prsd.leader.run.initrule import NodeInit, first_error_detail, init_failure
from prsd.leader.run.snapshot import JobSnapshot, NodeRow
from prsd.leader.run.verdict import Thresholds, verdict
from prsd.spool.durations import format_duration
from prsd.spool.states import JobState
from prsd.wire.records import REQUEUED, SUCCEEDED, Outcome

if TYPE_CHECKING:
    from collections.abc import Iterable

    from prsd.leader.run.ledger import Ledger
    from prsd.leader.run.nextstep import Step
    from prsd.spool.finalrecord import FinalState
    from prsd.spool.nodereport import NodeReport
    from prsd.wire.records import MiniBatch


@dataclass(frozen=True)
class Timeouts:
    """The job-wide timeouts (seconds) of the job's spec."""

    first_task_s: float
    progress_s: float


@dataclass(frozen=True)
class Ending:
    """The book's decision that the job ends: its state and why."""

    state: str  # Completed | Failed (the driver refines Completed at the end)
    reason: str


@dataclass
class JobBook:
    """Counts, errors and deciding state of one job (built from records, no I/O)."""

    ledger: Ledger
    thresholds: Thresholds
    timeouts: Timeouts
    started: float  # monotonic seconds when the job began (kept across failovers)
    errors: ErrorBook = field(default_factory=ErrorBook)
    last_progress: float = 0.0
    first_task_at: float | None = None
    measured_mb_s: float | None = None
    split_done: bool = False
    node_inits: list[NodeInit] = field(default_factory=list)
    init_detail: str = ""
    requeued_lost: int = 0

    def __post_init__(self) -> None:
        self.last_progress = max(self.last_progress, self.started)
        self.errors.command = self.thresholds.command

    @classmethod
    def from_records(
        cls,
        ledger: Ledger,
        thresholds: Thresholds,
        timeouts: Timeouts,
        started: float,
        planned: Iterable[MiniBatch] = (),
        attempts: Iterable[tuple[Outcome, int, str, float]] = (),
    ) -> JobBook:
        """A book replayed from planned mini-batches and (outcome, attempt, node, at)."""
        book = cls(ledger, thresholds, timeouts, started)
        for mb in planned:
            book.plan(mb, started)
        for outcome, attempt, node, at in attempts:
            if book.current(outcome.index, attempt)[0]:
                book.record(outcome, attempt, node, at)
        return book

    # --- records in -------------------------------------------------------------------

    def plan(self, mb: MiniBatch, now: float) -> None:
        """A mini-batch planned (in index order)."""
        self.ledger.plan(mb.index, mb.items)
        if self.first_task_at is None:
            self.first_task_at = now

    def current(self, index: int, attempt: int) -> tuple[bool, list[tuple[Outcome, int]]]:
        """Is ``attempt`` the live attempt of mini-batch ``index``? And the requeues caught up.

        A new leader has not seen the requeues of earlier attempts (they leave no
        result), so the ledger is brought up to the attempt number the task file
        carries; an attempt older than the ledger's, or of a final mini-batch, is a
        stale or duplicate result (a deposed leader's late task) and is not used.
        Also returned: the requeues recorded on the way, (outcome, attempt), for the log.
        """
        if index >= len(self.ledger) or self.ledger.is_final(index):
            return False, []
        lost: list[tuple[Outcome, int]] = []
        while self.ledger.attempt(index) < attempt:
            why = "requeued under an earlier leader"
            lost.append(
                (Outcome(index=index, status=REQUEUED, error=why), self.ledger.attempt(index))
            )
            self.ledger.requeue(index)
        return self.ledger.attempt(index) == attempt, lost

    def record(self, outcome: Outcome, attempt: int, node_id: str, now: float) -> Step:
        """One attempt's outcome (the live attempt): the step the ledger decides."""
        self.errors.add(outcome, attempt, node_id)
        step = self.ledger.record(outcome)
        if outcome.status != REQUEUED:
            self.last_progress = now
        if outcome.status == SUCCEEDED and outcome.elapsed_s > 0:
            self.measured_mb_s = ewma(self.measured_mb_s, outcome.elapsed_s)
        return step

    def record_succeeded(self, outcomes: list[Outcome], now: float) -> None:
        """A committed task whose mini-batches all succeeded on their live attempt: the
        same counts and progress as :meth:`record` of each (succeeded attempts carry no
        error), in one call."""
        self.ledger.record_succeeded(outcomes)
        self.last_progress = now
        mean = self.measured_mb_s
        for outcome in outcomes:
            if outcome.elapsed_s > 0:
                mean = ewma(mean, outcome.elapsed_s)
        self.measured_mb_s = mean

    def split_finished(self) -> None:
        self.split_done = True
        self.ledger.total_mbs = len(self.ledger)

    def read_nodes(self, reports: Iterable[NodeReport]) -> None:
        """The nodes' reports as last read (torn or foreign ones were skipped)."""
        self.node_inits = [NodeInit.from_report(r) for r in reports]

    # --- decisions out ------------------------------------------------------------------

    def init_failed(self, now: float) -> str | None:
        """The job-wide init rules (docs/supervision.md): the reason the job fails, or None."""
        reason = init_failure(self.node_inits, now - self.started)
        if reason is not None:
            self.init_detail = first_error_detail(self.node_inits)
        return reason

    def timed_out(self, now: float) -> str | None:
        """A job-wide timeout that has passed (its message), or None."""
        t = self.timeouts
        if self.first_task_at is None and now - self.started > t.first_task_s:
            return (
                f"No mini-batch was created within {t.first_task_s:g} "
                "seconds (first_task_creation_timeout)."
            )
        if now - self.last_progress > t.progress_s:
            return (
                f"No progress update in {t.progress_s:g} seconds "
                "(progress_update_timeout): no mini-batch finished anywhere."
            )
        return None

    def ending(self, *, bisect_busy: bool) -> Ending | None:
        """The job ends now (Completed or Failed, and why), or None: it goes on."""
        v = verdict(self.ledger.counts(), self.thresholds)
        if not v.done or (not v.failed and bisect_busy):
            return None  # running, or complete while a poison-input search still runs
        return Ending(JobState.FAILED if v.failed else JobState.COMPLETED, v.reason)

    def progress_line(self, now: float) -> str:
        c = self.ledger.counts()
        done = c.finished_mbs
        elapsed = now - self.started
        if self.thresholds.command:  # a pipeline's command step: said in its own terms
            ran = "ran" if done else "has been running"
            return f"The command {ran} for {format_duration(elapsed)}."
        total = c.total_mbs
        if total is None or done == 0:
            return f"Processed {done} mini batches in {format_duration(elapsed)}."
        remaining = elapsed / done * (total - done)
        return (
            f"Processed {done} of {total} mini batches in {format_duration(elapsed)}. "
            f"Estimated remaining time {format_duration(remaining)}."
        )

    def snapshot(
        self,
        now: float,
        *,
        job_id: str,
        name: str,
        outstanding: int,
        output: str,
        final: FinalState | None = None,
    ) -> JobSnapshot:
        """The job as it stands: what status.json and the end-of-job files are made of."""
        e = self.errors
        return JobSnapshot(
            job_id=job_id,
            name=name,
            elapsed_s=now - self.started,
            counts=self.ledger.counts(),
            planned_mbs=len(self.ledger),
            attempts=self.ledger.attempts,
            requeues=self.ledger.requeues,
            outstanding_tasks=outstanding,
            split_done=self.split_done,
            output=output,
            final=final,
            first_error=e.root_cause() if e.first else "",
            errors=tuple((g.message, g.count, g.first.where()) for g in e.ranked()[:10]),
            last_errors=tuple(p.brief() for p in e.recent),
            nodes=tuple(
                NodeRow(n.node_id, n.workers, n.failures, n.gave_up, n.environment)
                for n in self.node_inits
            ),
            init_detail=self.init_detail,
            progress_line=self.progress_line(now),
        )
