"""One job, seen from the leader: split, ingest results, retry, merge, finish.

The driver is synchronous and does its file I/O directly; the async leader calls
:meth:`JobDriver.step` in a worker thread, so each step is one thread hop that
batches many metadata operations (STYLE: batch stat/listdir/rename per hop). A step
does a bounded amount of work and reads ``now`` (monotonic seconds) from its caller.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.errors import InputError, PrsdError
from prsd.leader.bisect import Bisector
from prsd.leader.errorbook import ErrorBook
from prsd.leader.finish import FinalState, finish_job
from prsd.leader.initrule import NodeInit, first_error_detail, init_failure
from prsd.leader.issued import IssueLog, read_issued, unsettled
from prsd.leader.joblogs import AttemptRow, JobLogs, format_duration, report_parts
from prsd.leader.ledger import Ledger
from prsd.leader.merge import OrderedMerge, Piece
from prsd.leader.nodereports import blind_nodes, read_node_reports
from prsd.leader.outplace import output_place
from prsd.leader.packing import advise, ewma
from prsd.leader.planner import input_kind, plan_mini_batches
from prsd.leader.rerun import plan_retry
from prsd.leader.resume import (
    DONE,
    PENDING,
    VOID,
    Found,
    done_order,
    merge_reports,
    read_task_bytes,
    reepoch,
    reepoch_pending,
    scan_tasks,
)
from prsd.leader.status import StatusWriter
from prsd.leader.tasks import OutTask, TaskTable, contiguous_runs
from prsd.leader.verdict import Thresholds, verdict
from prsd.leader.voided import scan_void
from prsd.storage.claim import requeue
from prsd.storage.fstype import is_local_spool
from prsd.storage.layout import JobLayout, TaskName, mb_id, parse_done_name
from prsd.storage.records import (
    CRASHED,
    OOM,
    REQUEUED,
    SUCCEEDED,
    TIMEOUT,
    MiniBatch,
    Outcome,
    TaskBody,
    read_result,
)
from prsd.storage.seats import free_seats

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from prsd.jobspec import JobSpec
    from prsd.leader.retry import Step

LIST_INTERVAL_S = 0.2  # how often done/ and returned/ are listed (hints cover the rest)
MAX_TASKS_PER_STEP = 256
SPLIT_BUDGET_S = 0.05
CANCEL_CHECK_S = 0.5
NODES_CHECK_S = 0.5
PROGRESS_LOG_S = 10.0
TAKEOVER_SETTLE_S = 30.0  # wait this long for stale listings to show every written task


@dataclass(frozen=True)
class Hint:
    """An in-process agent's note that it committed a task (saves a listing)."""

    job_id: str
    task: TaskName
    node_id: str


class JobDriver:
    """Drives one job to Completed, Failed or Canceled."""

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
        self.spec = spec
        # The last step's split stopped at its time budget with tasks still wanted:
        # the leader steps again at once instead of waiting for its next tick.
        self.split_behind = False
        self.ledger = Ledger(spec.max_retries)
        self.issued = IssueLog(layout, epoch)
        self.table = TaskTable(
            layout, input_kind(spec), epoch, durable=True, on_issue=self.issued.add
        )
        self.logs = JobLogs(layout, epoch=epoch)
        self.errors = ErrorBook()
        self.bisect = Bisector(
            layout, spec, kind=input_kind(spec), epoch=epoch, log=self.logs.master
        )
        self.poison_items = self.bisect.isolated  # inputs found by bisection (user/error.txt)
        self.status = StatusWriter(layout, spec, epoch)
        self.merge = _open_merge(spec, layout)
        self.thresholds = Thresholds(
            spec.mini_batch_error_threshold,
            spec.item_error_threshold,
            spec.allowed_failed_percent,
            append_row=spec.output_action == "append_row",
        )
        self._plan: Iterator[MiniBatch] = plan_retry(
            layout, plan_mini_batches(spec, self._skipped, job_folder=layout.root)
        )
        self.split_done = False
        self.started = now
        self.last_progress = now
        self.first_task_at: float | None = None
        self.measured_mb_s: float | None = None
        self._last_listing = -1e9
        self._last_cancel_check = -1e9
        self._last_progress_log = now
        self._retries: list[list[MiniBatch]] = []
        self._last_nodes_check = -1e9
        self.node_inits: list[NodeInit] = []
        self.init_detail = ""
        self.final: FinalState | None = None
        self.fence = fence or (lambda: None)
        self._resuming = False
        self.requeued_lost = 0
        self.blind: dict[str, list[str]] = {}  # node -> paths it cannot see
        if resume:
            self.logs.master(f"leader epoch {epoch} takes the job over")
            self._take_over(now)
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
        try:
            self._round(now, hints)
        except PrsdError as exc:
            self.finish("Failed", exc.one_line(), now)
        if self.final is None:
            self.status.maybe_write(self, now)
        return self.final is not None

    def _round(self, now: float, hints: list[Hint]) -> None:
        phases: list[Callable[[], None]] = [
            lambda: self._check_cancel(now),
            lambda: self._ingest_hints(hints, now),
            lambda: self._scan(now),
            self._write_retries,
            lambda: self._split(now),
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

    def _scan(self, now: float) -> None:
        if now - self._last_listing >= LIST_INTERVAL_S:
            self._last_listing = now
            self._scan_done(now)
            self._scan_returned()
            scan_void(self)  # unreadable task files: planned again (prsd.leader.voided)

    # --- results ------------------------------------------------------------------

    def _scan_done(self, now: float) -> None:
        for shard in self.table.active_shards():
            try:
                names = os.listdir(self.layout.done / shard)
            except FileNotFoundError:
                continue
            for name in names:
                parsed = parse_done_name(name)
                if parsed is not None and self.final is None:
                    self._ingest(parsed[0].name, parsed[1], now)

    def _ingest(self, name: str, node_id: str, now: float) -> None:
        out = self.table.outstanding.get(name)
        if out is None:
            self._check_duplicate(name, node_id)
            return
        result_path = self.layout.result(out.task, node_id)
        found = read_result(result_path)
        meta = found.meta if found is not None else None
        ident = found.ident if found is not None else None
        outcomes = {o.index: o for o in meta.outcomes} if meta is not None else {}
        if meta is None:
            self.logs.master(f"task {name} from {node_id}: result file missing or torn; rerun")
        self.table.settle(name, node_id)
        rows: list[AttemptRow] = []
        again: list[int] = []
        for i in out.indices:
            if not self._current(i, out.task.attempt):
                continue
            outcome = outcomes.get(i) or Outcome(index=i, status=REQUEUED)
            rows.append(AttemptRow(outcome, out.task.attempt, node_id))
            self.errors.add(outcome, out.task.attempt, node_id)
            step = self.ledger.record(outcome)
            self.bisect.after(
                step, outcome, self.layout.done_task(out.task, node_id), self._resuming
            )
            if step.final:
                self._final(i, step, outcome, result_path, ident)
            else:
                again.append(i)
            if outcome.status != REQUEUED:
                self.last_progress = now
            if outcome.status == SUCCEEDED and outcome.elapsed_s > 0:
                self.measured_mb_s = ewma(self.measured_mb_s, outcome.elapsed_s)
        self.logs.attempts(rows)
        if not self._resuming:
            self._check_verdict(now)
        if again and self.final is None:
            self._queue_retries(out, node_id, again, outcomes)
        self._log_progress(now)

    def _queue_retries(
        self, out: OutTask, node_id: str, again: list[int], outcomes: dict[int, Outcome]
    ) -> None:
        bodies = self.table.read_body(self.layout.done_task(out.task, node_id))
        failed = [i for i in again if i in outcomes]
        unrun = [i for i in again if i not in outcomes]
        self._retries.extend([bodies[i]] for i in failed)
        self._retries.extend([bodies[i] for i in run] for run in contiguous_runs(unrun))

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

    def _current(self, index: int, attempt: int) -> bool:
        """Is ``attempt`` the live attempt of mini-batch ``index``? (Catches up requeues.)

        A new leader has not seen the requeues of earlier attempts (they leave no
        result), so the ledger is brought up to the attempt number the task file
        carries; an attempt older than the ledger's, or of a final mini-batch, is a
        stale or duplicate result (a deposed leader's late task) and is not used.
        """
        if index >= len(self.ledger) or self.ledger.is_final(index):
            return False
        while self.ledger.attempt(index) < attempt:
            lost = Outcome(index=index, status=REQUEUED, error="requeued under an earlier leader")
            self.logs.attempts([AttemptRow(lost, self.ledger.attempt(index), "")])
            self.ledger.requeue(index)
        return self.ledger.attempt(index) == attempt

    def _check_duplicate(self, name: str, node_id: str) -> None:
        first = self.table.ingested.get(name)
        if first is not None and first != node_id:
            raise SpoolSafetyError(name, first, node_id)

    def _scan_returned(self) -> None:
        try:
            names = sorted(n for n in os.listdir(self.layout.returned) if not n.startswith("."))
        except FileNotFoundError:
            return
        for name in names:
            out = self.table.outstanding.get(name)
            if out is not None:
                self._requeue(out, self.layout.returned_task(out.task), "handed back")

    def _requeue(self, out: OutTask, src: Path, why: str) -> bool:
        """Move a task that never finished back to pending as its next attempt."""
        self.fence()  # a deposed leader must not create attempt names (handed back or lost)
        new = out.task.next_attempt(self.table.epoch)
        if not requeue(self.layout, src, new):
            return False
        self.issued.add([new.name])
        self.table.drop(out.task.name)
        rows = []
        for i in out.indices:
            outcome = Outcome(index=i, status=REQUEUED, error="")
            rows.append(AttemptRow(outcome, out.task.attempt, src.parent.name))
            self.ledger.requeue(i)
        self.table.adopt(OutTask(new, out.indices))
        self.logs.attempts(rows)
        self.logs.master(f"task {out.task.name} {why}; requeued as {new.name}")
        return True

    def requeue_lost_node(self, node_id: str, why: str) -> int:
        """Move the claims of a node presumed dead back to pending; how many moved."""
        try:
            names = sorted(os.listdir(self.layout.claimed_dir(node_id)))
        except FileNotFoundError:
            return 0
        moved = 0
        for name in names:
            out = self.table.outstanding.get(name)
            if out is None or self.final is not None:
                continue
            moved += self._requeue(out, self.layout.claimed_task(node_id, out.task), why)
        self.requeued_lost += moved
        if free_seats(self.layout, node_id):
            self.logs.master(f"node {node_id}'s seat is free for another node")
        return moved

    def queue_again(self, mbs: list[MiniBatch]) -> None:
        """Write ``mbs`` (one task, at their current attempt) at the next round."""
        self._retries.append(mbs)

    def _write_retries(self) -> None:
        while self._retries:
            mbs = self._retries.pop(0)
            self.table.write(mbs, self.ledger.attempt(mbs[0].index))

    # --- splitting ----------------------------------------------------------------

    def _split(self, now: float) -> None:
        self.split_behind = False
        if self.split_done:
            return
        deadline = time.perf_counter() + SPLIT_BUDGET_S
        self.split_behind = True  # unless the loop below ends for another reason
        for _ in range(MAX_TASKS_PER_STEP):
            advice = advise(
                measured_mb_s=self.measured_mb_s,
                unclaimed_tasks=len(self.table),
                waited_s=now - self.started,
            )
            if not advice.may_write:
                self.split_behind = False  # far enough ahead of the workers
                return
            mbs = self._take(advice.per_task)
            if not mbs:
                self.split_behind = False
                self._split_finished(now)
                return
            for mb in mbs:
                self.ledger.plan(mb.index, mb.items)
            self.table.write(mbs, 1)
            if self.first_task_at is None:
                self.first_task_at = now
            if time.perf_counter() > deadline:
                return

    def _take(self, n: int) -> list[MiniBatch]:
        out: list[MiniBatch] = []
        try:
            for mb in self._plan:
                out.append(mb)
                if len(out) == n:
                    break
        except OSError as exc:
            raise InputError(f"cannot read input {self.spec.input.name}: {exc}") from exc
        return out

    def _split_finished(self, now: float) -> None:
        self.split_done = True
        total = len(self.ledger)
        self.ledger.total_mbs = total
        items = self.ledger.planned_items()
        self.logs.progress(
            f"Scheduling finished. Scheduled {total} mini batches in "
            f"{now - self.started:.0f} seconds. There are {self.table.written} tasks with "
            f"{items} items."
        )
        if total == 0:
            raise InputError(
                f"{self.spec.input.name} ({', '.join(self.spec.input.paths)}) holds nothing to "
                "process"
            )

    def _skipped(self, path: str, why: str) -> None:
        self.logs.master(f"skipped {path}: {why}")

    # --- ending -------------------------------------------------------------------

    def _check_cancel(self, now: float) -> None:
        if now - self._last_cancel_check < CANCEL_CHECK_S:
            return
        self._last_cancel_check = now
        if self.layout.cancel.exists():
            self.finish("Canceled", "Canceled by prsctl cancel.", now)

    def _check_progress(self, now: float) -> None:
        spec = self.spec
        if self.first_task_at is None and now - self.started > spec.first_task_creation_timeout_s:
            raise JobTimeout(
                f"No mini-batch was created within {spec.first_task_creation_timeout_s:g} "
                "seconds (first_task_creation_timeout)."
            )
        if now - self.last_progress > spec.progress_timeout_s:
            raise JobTimeout(
                f"No progress update in {spec.progress_timeout_s:g} seconds "
                "(progress_update_timeout): no mini-batch finished anywhere."
            )

    def _check_nodes(self, now: float) -> None:
        if now - self._last_nodes_check < NODES_CHECK_S:
            return
        self._last_nodes_check = now
        reports = read_node_reports(self.layout)
        self.node_inits = []
        for report in reports:
            try:
                self.node_inits.append(NodeInit.from_report(report))
            except (ValueError, TypeError):
                continue  # a torn or foreign report: the next look reads it again
        for node_id, missing in blind_nodes(reports).items():
            if self.blind.get(node_id) != missing:
                self.blind[node_id] = missing
                self.logs.master(
                    f"node {node_id} cannot see the job's files and claims none of its work: "
                    + "; ".join(missing)
                )
        reason = init_failure(self.node_inits, now - self.started)
        if reason is not None:
            self.init_detail = first_error_detail(self.node_inits)
            raise InitRuleFailed(reason)

    def _bisect_step(self, now: float) -> None:
        if self.bisect.step(now):
            self.last_progress = now

    def _check_verdict(self, now: float) -> None:
        if self.final is not None:
            return
        v = verdict(self.ledger.counts(), self.thresholds)
        if v.done and not v.failed and self.bisect.busy:
            return  # complete, but a poison-input search (bisect.py) still runs
        if v.done:
            self.finish("Failed" if v.failed else "Completed", v.reason, now)

    def _log_progress(self, now: float) -> None:
        if now - self._last_progress_log < PROGRESS_LOG_S:
            return
        self._last_progress_log = now
        self.logs.progress(self.progress_line(now))

    def progress_line(self, now: float) -> str:
        c = self.ledger.counts()
        done = c.finished_mbs
        elapsed = now - self.started
        total = c.total_mbs
        if total is None or done == 0:
            return f"Processed {done} mini batches in {format_duration(elapsed)}."
        remaining = elapsed / done * (total - done)
        return (
            f"Processed {done} of {total} mini batches in {format_duration(elapsed)}. "
            f"Estimated remaining time {format_duration(remaining)}."
        )

    def finish(self, state: str, reason: str, now: float) -> None:
        """End the job: publish or drop the output, write the result files."""
        if self.final is not None:
            return
        self.fence()
        self.logs.close()
        dropped = merge_reports(report_parts(self.layout))
        if dropped:
            self.logs.master(f"{dropped} repeated rows dropped from the job report")
        self.final = finish_job(self, state, reason, now)
        self.status.write(self, now)
        self.logs.close()
        self.issued.close()

    def abandon(self) -> None:
        """Deposed: let go of the job without writing anything more to it."""
        if self.merge is not None:
            self.merge.abandon()
        self.logs.close()
        self.issued.close()

    # --- taking over from an earlier leader -----------------------------------------

    def _take_over(self, now: float) -> None:
        """Rebuild the job's state from its task folders (see :mod:`prsd.leader.resume`)."""
        layout = self.layout
        renamed = reepoch_pending(layout, self.table.epoch, self.issued.add)
        deadline = time.monotonic() + TAKEOVER_SETTLE_S
        # On a shared mount a fresh leader's caches may still hold the dead leader's
        # last moments (FUSE entry and attribute caches: about a second): look twice.
        local = is_local_spool(layout.root)
        passes = 1 if local else 2
        while True:
            issued = read_issued(layout)
            live, done, void = self._scan_bodies()
            in_files = {mb.index for _, b in live + done + void for mb in b.mini_batches}
            seen = {f.task.name for f, _ in live + done + void}
            unseen = len(unsettled(issued, seen))
            passes -= 1
            if local or (unseen == 0 and passes <= 0) or time.monotonic() > deadline:
                break
            # A listing from a cache (sshfs, NFS attribute caches) misses tasks the last
            # leader wrote: planning them again would run them twice. Look again.
            time.sleep(1.0)
            renamed += reepoch_pending(layout, self.table.epoch, self.issued.add)
        if unseen and not local:
            self.logs.master(
                f"{unseen} issued task files never showed in the task listings within "
                f"{TAKEOVER_SETTLE_S:g} s; their mini-batches are run again"
            )
        live, late = self._reepoch_late(live)
        renamed += late
        runnable = {mb.index for _, b in live + done for mb in b.mini_batches}
        orphans = self._fast_forward(max(in_files, default=-1), runnable)
        covered: set[int] = set()
        for found, body in live:
            indices = tuple(mb.index for mb in body.mini_batches)
            self.table.ensure_shard(found.task.shard)
            self.table.adopt(OutTask(found.task, indices))
            covered.update(indices)
        self._resuming = True
        for found, body in sorted(done, key=lambda fb: done_order(fb[0])):
            name = found.task.name
            if name in self.table.ingested:
                self._check_duplicate(name, found.node)
                continue
            self.table.adopt(OutTask(found.task, tuple(mb.index for mb in body.mini_batches)))
            self._ingest(name, found.node, now)
        self._resuming = False
        for found, body in live:
            for mb in body.mini_batches:
                self._current(mb.index, found.task.attempt)
        again = {mb.index: mb for group in self._retries for mb in group}
        again.update(orphans)
        self._retries = [
            [mb]
            for i, mb in sorted(again.items())
            if i not in covered and not self.ledger.is_final(i)
        ]
        self.first_task_at = now if in_files else None
        self.logs.master(
            f"took over: {len(live)} tasks outstanding, {len(done)} committed, "
            f"{len(self._retries)} mini-batches to run again, {renamed} pending tasks "
            f"renamed to epoch {self.table.epoch}"
        )
        self._check_verdict(now)

    def _reepoch_late(
        self, live: list[tuple[Found, TaskBody]]
    ) -> tuple[list[tuple[Found, TaskBody]], int]:
        """Pending tasks of older epochs that showed up after the first renaming (a
        deposed leader, paused mid-split, went on writing): renamed to this epoch."""
        kept: list[tuple[Found, TaskBody]] = []
        renamed = 0
        for found, body in live:
            if found.place == PENDING and found.task.epoch < self.table.epoch:
                moved = reepoch(self.layout, found, self.table.epoch, self.issued.add)
                if moved is None:
                    continue  # gone: its mini-batches are planned again as orphans
                found, renamed = moved, renamed + 1
            kept.append((found, body))
        return kept, renamed

    def _scan_bodies(
        self,
    ) -> tuple[
        list[tuple[Found, TaskBody]], list[tuple[Found, TaskBody]], list[tuple[Found, TaskBody]]
    ]:
        live: list[tuple[Found, TaskBody]] = []
        done: list[tuple[Found, TaskBody]] = []
        void: list[tuple[Found, TaskBody]] = []
        for found in scan_tasks(self.layout):
            body = self._body_of(found)
            if body is None:
                continue
            if found.place == DONE:
                done.append((found, body))
            elif found.place == VOID:
                void.append((found, body))
            else:
                live.append((found, body))
        return live, done, void

    def _body_of(self, found: Found) -> TaskBody | None:
        data = read_task_bytes(self.layout, found)
        if data is None:
            self.logs.master(f"task {found.task.name} vanished during take-over")
            return None
        try:
            return TaskBody.decode(data)
        except (ValueError, PrsdError) as exc:
            self.logs.master(f"task {found.task.name} is unreadable ({exc}); ignored")
            return None

    def _fast_forward(self, top: int, in_files: set[int]) -> dict[int, MiniBatch]:
        """Plan mini-batches 0..top again without writing them; those in no task file."""
        missing: dict[int, MiniBatch] = {}
        if top < 0:
            return missing
        for mb in self._plan:
            self.ledger.plan(mb.index, mb.items)
            if mb.index not in in_files:
                missing[mb.index] = mb
            if mb.index >= top:
                return missing
        raise InputError(
            f"{self.spec.input.name} now yields fewer mini-batches than the job's task files "
            f"hold ({top + 1}): the input changed while the job ran"
        )


class InitRuleFailed(PrsdError):
    """SPEC section 4's init rules failed the job."""


class JobTimeout(PrsdError):
    """A job-wide timeout (first task creation, progress update)."""


class SpoolSafetyError(PrsdError):
    """Two commits for one attempt: the spool's renames are not atomic."""

    def __init__(self, task: str, first_node: str, second_node: str) -> None:
        super().__init__(
            f"task {task} was committed by both {first_node} and {second_node}: the spool's "
            "file system does not keep renames atomic (a blob mount?); the job is stopped so "
            "no result is used twice. Move the spool to NFS, Azure Files, Lustre or a local disk."
        )


def _open_merge(spec: JobSpec, layout: JobLayout) -> OrderedMerge | None:
    if spec.output_action != "append_row" or not spec.append_row_to:
        return None
    out = Path(spec.append_row_to)
    return OrderedMerge(
        out,
        write_header=spec.append_row_dataframe_header,
        fmt=spec.append_row_format,
        place=output_place(layout, out),
    )
