"""One job, seen from the leader: split, ingest results, retry, merge, finish.

The driver is synchronous and does its file I/O directly; the async leader calls
:meth:`JobDriver.step` in a worker thread, so each step is one thread hop that
batches many metadata operations (STYLE: batch stat/listdir/rename per hop). A step
does a bounded amount of work and reads ``now`` (monotonic seconds) from its caller.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.errors import InputError, PrsdError
from prsd.leader.errorbook import ErrorBook
from prsd.leader.finish import FinalState, finish_job
from prsd.leader.initrule import NodeInit, first_error_detail, init_failure
from prsd.leader.joblogs import AttemptRow, JobLogs, format_duration
from prsd.leader.ledger import Ledger
from prsd.leader.merge import OrderedMerge, Piece
from prsd.leader.packing import advise, ewma
from prsd.leader.planner import input_kind, plan_mini_batches
from prsd.leader.status import StatusWriter
from prsd.leader.tasks import OutTask, TaskTable, contiguous_runs
from prsd.leader.verdict import Thresholds, verdict
from prsd.storage.claim import requeue
from prsd.storage.layout import JobLayout, TaskName, parse_done_name
from prsd.storage.records import REQUEUED, SUCCEEDED, MiniBatch, Outcome, read_result_meta

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from prsd.jobspec import JobSpec

LIST_INTERVAL_S = 0.2  # how often done/ and returned/ are listed (hints cover the rest)
MAX_TASKS_PER_STEP = 256
SPLIT_BUDGET_S = 0.05
CANCEL_CHECK_S = 0.5
NODES_CHECK_S = 0.5
PROGRESS_LOG_S = 10.0


@dataclass(frozen=True)
class Hint:
    """An in-process agent's note that it committed a task (saves a listing)."""

    job_id: str
    task: TaskName
    node_id: str


class JobDriver:
    """Drives one job to Completed, Failed or Canceled."""

    def __init__(self, layout: JobLayout, spec: JobSpec, *, epoch: int, now: float) -> None:
        self.layout = layout
        self.spec = spec
        self.ledger = Ledger(spec.max_retries)
        self.table = TaskTable(layout, input_kind(spec), epoch, durable=True)
        self.logs = JobLogs(layout)
        self.errors = ErrorBook()
        self.status = StatusWriter(layout, spec)
        self.merge = _open_merge(spec)
        self.thresholds = Thresholds(
            spec.mini_batch_error_threshold,
            spec.item_error_threshold,
            spec.allowed_failed_percent,
            append_row=spec.output_action == "append_row",
        )
        self._plan: Iterator[MiniBatch] = plan_mini_batches(spec, self._skipped)
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
        meta = read_result_meta(result_path)
        outcomes = {o.index: o for o in meta.outcomes} if meta is not None else {}
        if meta is None:
            self.logs.master(f"task {name} from {node_id}: result file missing or torn; rerun")
        self.table.settle(name, node_id)
        rows: list[AttemptRow] = []
        again: list[int] = []
        for i in out.indices:
            outcome = outcomes.get(i) or Outcome(index=i, status=REQUEUED)
            rows.append(AttemptRow(outcome, out.task.attempt, node_id))
            self.errors.add(outcome, out.task.attempt, node_id)
            step = self.ledger.record(outcome)
            if step.final:
                piece = Piece(None)
                if step.succeeded:
                    piece = Piece(result_path, outcome.offset, outcome.length, outcome.header)
                if self.merge is not None:
                    self.merge.offer(i, piece)
            else:
                again.append(i)
            if outcome.status != REQUEUED:
                self.last_progress = now
            if outcome.status == SUCCEEDED and outcome.elapsed_s > 0:
                self.measured_mb_s = ewma(self.measured_mb_s, outcome.elapsed_s)
        self.logs.attempts(rows)
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
        new = out.task.next_attempt(self.table.epoch)
        if not requeue(self.layout, src, new):
            return False
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

    def _write_retries(self) -> None:
        while self._retries:
            mbs = self._retries.pop(0)
            self.table.write(mbs, self.ledger.attempt(mbs[0].index))

    # --- splitting ----------------------------------------------------------------

    def _split(self, now: float) -> None:
        if self.split_done:
            return
        deadline = time.perf_counter() + SPLIT_BUDGET_S
        for _ in range(MAX_TASKS_PER_STEP):
            advice = advise(
                measured_mb_s=self.measured_mb_s,
                unclaimed_tasks=len(self.table),
                waited_s=now - self.started,
            )
            if not advice.may_write:
                return
            mbs = self._take(advice.per_task)
            if not mbs:
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
        self.node_inits = read_node_reports(self.layout)
        reason = init_failure(self.node_inits, now - self.started)
        if reason is not None:
            self.init_detail = first_error_detail(self.node_inits)
            raise InitRuleFailed(reason)

    def _check_verdict(self, now: float) -> None:
        if self.final is not None:
            return
        v = verdict(self.ledger.counts(), self.thresholds)
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
        self.final = finish_job(self, state, reason, now)
        self.status.write(self, now)
        self.logs.close()


class InitRuleFailed(PrsdError):
    """SPEC section 4's init rules failed the job."""


def read_node_reports(layout: JobLayout) -> list[NodeInit]:
    """The nodes' reports for this job (``jobs/<id>/nodes/*.json``)."""
    folder = layout.root / "nodes"
    reports = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except FileNotFoundError:
        return []
    for name in names:
        try:
            reports.append(NodeInit.from_report(json.loads((folder / name).read_bytes())))
        except (OSError, ValueError, TypeError):
            continue
    return reports


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


def _open_merge(spec: JobSpec) -> OrderedMerge | None:
    if spec.output_action != "append_row" or not spec.append_row_to:
        return None
    return OrderedMerge(Path(spec.append_row_to), write_header=spec.append_row_dataframe_header)
