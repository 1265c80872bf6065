"""One job, seen from the leader: the I/O shell around the job's book.

:class:`JobDriver` lists the job's folders, writes its task files, reads results and
feeds what it finds to its :class:`~prsd.leader.run.book.JobBook`, which counts and
decides; it acts on the book's answers (retry, merge, end). A job taken over from an
earlier leader first runs its :class:`~prsd.leader.takeover.takeover.TakeOver` phase, which
waits by telling when to come back, never by sleeping. ``status.json`` and the
end-of-job files are written from a frozen :class:`~prsd.leader.run.snapshot.JobSnapshot`.

The driver is synchronous; the async leader calls :meth:`JobDriver.step` in a worker
thread, one hop that batches many metadata operations (stat, listdir and rename: one
thread hop for many of them). A step does a bounded amount of work and reads ``now`` (monotonic
seconds) from its caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.inputsplit.planner import input_kind
from prsd.jobspec.runner import is_command_step
from prsd.leader.end.privatestatus import GRANT
from prsd.leader.plan.splitting import SPLIT_BUDGET_S, Plan, split_step
from prsd.leader.run.bisect import Bisector
from prsd.leader.run.book import JobBook, Timeouts
from prsd.leader.run.donescan import DoneScan
from prsd.leader.run.jobclock import restored_start
from prsd.leader.run.joblogs import JobLogs, report_parts
from prsd.leader.run.ledger import Ledger
from prsd.leader.run.merge import open_merge
from prsd.leader.run.nodereports import NodeReports, blind_nodes
from prsd.leader.run.requeues import Requeues
from prsd.leader.run.results import Results
from prsd.leader.run.status import StatusWriter
from prsd.leader.run.tasks import TaskTable
from prsd.leader.run.verdict import Thresholds
from prsd.leader.run.voided import VoidReplans
from prsd.leader.takeover.adopt import adopt, in_task_files
from prsd.leader.takeover.resume import merge_reports
from prsd.leader.takeover.takeover import TakeOver
from prsd.spool.issuelog import IssueLog
from prsd.spool.jobfolder import JobFolder
from prsd.spool.states import JobState
from prsd.wire.records import MiniBatch

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.jobspec import JobSpec
    from prsd.leader.run.snapshot import JobSnapshot
    from prsd.leader.takeover.takeover import Look
    from prsd.spool.finalrecord import FinalState
    from prsd.spool.jobfolder import JobFiles
    from prsd.spool.layout import JobLayout, TaskName
    from prsd.wire.records import MiniBatch

CANCEL_CHECK_S = 0.5
NODES_CHECK_S = 0.5
PROGRESS_LOG_S = 10.0


@dataclass(frozen=True)
class Hint:
    """An in-process agent's note that it committed a task (saves a listing)."""

    job_id: str
    task: TaskName
    node_id: str


class JobDriver(Requeues, VoidReplans):
    """Drives one job to Completed, Failed or Canceled (requeues and replans: the two
    mixins' methods, in prsd/leader/run/requeues.py and voided.py)."""

    def __init__(
        self,
        layout: JobLayout,
        spec: JobSpec,
        *,
        epoch: int,
        now: float,
        fence: Callable[[], None] | None = None,
        resume: bool = False,
    ) -> None:
        self.layout = layout
        self.folder: JobFiles = JobFolder.of(layout, grant=GRANT)  # its spool side
        self.spec = spec
        self.book = JobBook(
            Ledger(spec.max_retries),
            Thresholds(
                spec.mini_batch_error_threshold,
                spec.item_error_threshold,
                spec.allowed_failed_percent,
                append_row=spec.output_action == "append_row",
                command=is_command_step(spec),
            ),
            Timeouts(spec.first_task_creation_timeout_s, spec.progress_timeout_s),
            started=now,
        )
        self.ledger = self.book.ledger
        # The last step's split stopped at its time budget with tasks still wanted:
        # the leader steps again at once instead of waiting for its next tick.
        self.split_behind = False
        self.issued = IssueLog(layout, epoch)
        self.table = TaskTable(
            self.folder, input_kind(spec), epoch, durable=True, on_issue=self.issued.add
        )
        self.logs = JobLogs(layout, epoch=epoch)
        self.bisect = Bisector(
            self.folder, spec, kind=input_kind(spec), epoch=epoch, log=self.logs.master
        )
        self.status = StatusWriter(layout, spec, epoch)
        self.merge = open_merge(spec, layout)
        self.results = Results(
            layout, spec, self.table, self.book, self.bisect, self.merge, self.logs
        )
        self._plan = Plan(spec, layout, self._skipped)
        # Worker slots serving the job (the leader updates it from the heartbeats): sizes
        # the tail's tasks. Until then, one node's worth.
        self.fleet_slots = spec.max_concurrency_per_instance or 1
        self.done_scan = DoneScan(self.folder)
        self._last_cancel_check = -1e9
        self._last_progress_log = now
        self._retries: list[list[MiniBatch]] = []
        self._last_nodes_check = -1e9
        self.final: FinalState | None = None
        self.fence = fence or (lambda: None)
        self.blind: dict[str, list[str]] = {}  # node -> paths it cannot see
        self.node_reports = NodeReports(layout)
        self.takeover: TakeOver | None = None
        if resume:
            self.logs.master(f"leader epoch {epoch} takes the job over")
            self.takeover = TakeOver(layout, epoch, self.issued.add, now)
            if (start := restored_start(layout, now)) is not None:  # the job's own age
                self.book.started, self.status.started_wall = start
        else:
            self.logs.progress("Start the job.")
            self.logs.master(f"job {layout.job_id} taken in; input {', '.join(spec.input.paths)}")

    @property
    def job_id(self) -> str:
        return self.layout.job_id

    def step(self, now: float, hints: list[Hint]) -> bool:
        """Do one bounded round of work; True once the job has ended."""
        if self.final is not None:
            return True
        if self.takeover is not None and not self._take_over(now):
            return self.final is not None
        try:
            self._round(now, hints)
        except PrsdError as exc:
            self.finish(JobState.FAILED, exc.one_line(), now)
        if self.final is None and self.status.due(now):
            self.status.write(self.snapshot(now), now)
        return self.final is not None

    def snapshot(self, now: float) -> JobSnapshot:
        """The job as it stands (status.json, the end-of-job files)."""
        return self.book.snapshot(
            now,
            job_id=self.job_id,
            name=self.spec.name,
            outstanding=len(self.table),
            output=self.spec.append_row_to or "",
            final=self.final,
        )

    def progress_line(self, now: float) -> str:
        return self.book.progress_line(now)

    def _round(self, now: float, hints: list[Hint]) -> None:
        phases: list[Callable[[], None]] = [
            lambda: self._check_cancel(now),
            lambda: self._ingest_hints(hints, now),
            lambda: self._scan(now),
            lambda: self._write_tasks(now),
            lambda: self.table.publish_hint(now),
            lambda: self._check_nodes(now),
            lambda: self._bisect_step(now),
            lambda: self._check_progress(now),
            lambda: self._check_verdict(now),
        ]
        for phase in phases:
            if self.final is not None:
                return
            phase()

    def _ingest_hints(self, hints: list[Hint], now: float) -> None:
        for hint in hints:
            if self.final is None:
                self._ingest(hint.task.name, hint.node_id, now)

    @property
    def listing_due(self) -> float | None:
        """When the leader must step again for a listing a step deferred (None: none)."""
        return None if self.final is not None else self.done_scan.due_at

    def commits_listed_at(self) -> float:
        """When a commit seen now is listed (the leader's commit watch rings then): at
        once in the last wave, else at the next listing the interval allows."""
        return -math.inf if self.final is not None or self._last_wave() else self.done_scan.next_at

    def _last_wave(self) -> bool:
        # Every task written, no more outstanding than slots: each commit is read at its
        # own ring, so the job's end waits for no interval.
        return self.book.split_done and len(self.table) <= self.fleet_slots

    def _scan(self, now: float) -> None:
        if self.done_scan.due(now, eager=self._last_wave()):
            self._scan_done(now)
            self.scan_returned()  # tasks handed back: requeued (prsd.leader.run.requeues)
            self.scan_void()  # unreadable task files: planned again (prsd.leader.run.voided)

    # --- results ------------------------------------------------------------------

    def _scan_done(self, now: float) -> None:
        """Ingest the commits in the done/ folders of the shards with outstanding tasks
        (each once: prsd.leader.run.donescan)."""
        for name, node_id in self.done_scan.new_commits(self.table.active_shards()):
            if self.final is not None:
                return
            self._ingest(name, node_id, now)

    def _ingest(self, name: str, node_id: str, now: float) -> None:
        settled = self.results.ingest(name, node_id, now)
        if settled is None:
            return
        if not self.results.resuming:
            self._check_verdict(now)
        if settled.again and self.final is None:
            self._retries.extend(self.results.retries(settled))
        self._log_progress(now)

    def queue_again(self, mbs: list[MiniBatch]) -> None:
        """Write ``mbs`` (one task, at their current attempt) at the next round."""
        self._retries.append(mbs)

    def _write_tasks(self, now: float) -> None:
        """The retries, then the split: one flush of each task folder for both."""
        with self.table.batch():
            self._write_retries()
            if self.final is None:
                self._split(now)

    def _write_retries(self) -> None:
        while self._retries:
            mbs = self._retries.pop(0)
            self.table.write(mbs, self.ledger.attempt(mbs[0].index))

    # --- splitting ----------------------------------------------------------------

    def _split(self, now: float) -> None:
        self.split_behind = False
        if not self.book.split_done:
            self.split_behind = split_step(
                self._plan, self.table, self.book, self.logs, now, self.fleet_slots
            )

    def _skipped(self, path: str, why: str) -> None:
        self.logs.master(f"skipped {path}: {why}")

    # --- ending -------------------------------------------------------------------

    def _check_cancel(self, now: float) -> None:
        if now - self._last_cancel_check < CANCEL_CHECK_S:
            return
        self._last_cancel_check = now
        if self.layout.cancel.exists():
            self.finish(JobState.CANCELED, "Canceled by prsctl cancel.", now)

    def _check_progress(self, now: float) -> None:
        reason = self.book.timed_out(now)
        if reason is not None:
            self.finish(JobState.FAILED, PrsdError(reason).one_line(), now)

    def _check_nodes(self, now: float) -> None:
        if now - self._last_nodes_check < NODES_CHECK_S:
            return
        self._last_nodes_check = now
        reports = self.node_reports.read(now)
        self.book.read_nodes(reports)
        for node_id, missing in blind_nodes(reports).items():
            if self.blind.get(node_id) != missing:
                self.blind[node_id] = missing
                self.logs.master(
                    f"node {node_id} cannot see the job's files and claims none of its work: "
                    + "; ".join(missing)
                )
        reason = self.book.init_failed(now)
        if reason is not None:
            self.finish(JobState.FAILED, PrsdError(reason).one_line(), now)

    def _bisect_step(self, now: float) -> None:
        if self.bisect.step(now):
            self.book.last_progress = now

    def _check_verdict(self, now: float) -> None:
        if self.final is not None:
            return
        ending = self.book.ending(bisect_busy=self.bisect.busy)
        if ending is not None:
            self.finish(ending.state, ending.reason, now)

    def _log_progress(self, now: float) -> None:
        if now - self._last_progress_log < PROGRESS_LOG_S:
            return
        self._last_progress_log = now
        self.logs.progress(self.book.progress_line(now))

    def finish(self, state: str, reason: str, now: float) -> None:
        """End the job: publish or drop the output, write the result files."""
        if self.final is not None:
            return
        from prsd.leader.end.finish import JobEnd, finish_job  # the end's code: not before it

        if self.takeover is not None:
            self.takeover.wait()
        self.fence()
        self.logs.close()
        dropped = merge_reports(report_parts(self.layout))
        if dropped:
            self.logs.master(f"{dropped} repeated rows dropped from the job report")
        end = JobEnd(
            self.layout,
            self.spec,
            self.merge,
            self.logs,
            self.ledger,
            self.bisect.failed_items,
            list(self.bisect.isolated),
            self.book.errors,
            list(self.book.node_inits),
        )
        self._plan.close()
        self.final = finish_job(end, self.snapshot(now), state, reason, self.status, now)
        self.logs.close()
        self.issued.close()

    def abandon(self) -> None:
        """Deposed: let go of the job without writing anything more to it."""
        if self.takeover is not None:
            self.takeover.wait()
        if self.merge is not None:
            self.merge.abandon()
        self._plan.close()
        self.logs.close()
        self.issued.close()

    # --- taking over from an earlier leader -----------------------------------------

    def _take_over(self, now: float) -> bool:
        """Go on with the take-over phase; True once the job is adopted (or ended)."""
        assert self.takeover is not None
        try:
            if self.takeover.step(now) is not None:
                return False
            look = self.takeover.look
            assert look is not None
            orphans = self._plan.fast_forward(
                max(look.in_files(), default=-1),
                in_task_files(look),
                lambda mb: self.ledger.plan(mb.index, mb.items),
                SPLIT_BUDGET_S,
            )
            if orphans is None:  # the plan has not got that far yet: step again soon
                self.split_behind = True
                return False
            self.split_behind = False
            self.takeover = None
            self._adopt(look, orphans, now)
        except PrsdError as exc:
            self.takeover = None
            self.finish(JobState.FAILED, f"the job could not be resumed: {exc.one_line()}", now)
        return self.final is None

    def _adopt(self, look: Look, orphans: dict[int, MiniBatch], now: float) -> None:
        """Rebuild the job's state from a settled look (see :mod:`prsd.leader.takeover.adopt`)."""
        for note in look.notes:
            self.logs.master(note)
        self._retries = adopt(
            look,
            self.table,
            self.results,
            orphans,
            self._retries,
            lambda name, node: self._ingest(name, node, now),
        )
        self.book.first_task_at = now if look.in_files() else None
        self.logs.master(
            f"took over: {len(look.live)} tasks outstanding, {len(look.done)} committed, "
            f"{len(self._retries)} mini-batches to run again, {look.renamed} pending tasks "
            f"renamed to epoch {self.table.epoch}"
        )
        self._check_verdict(now)
