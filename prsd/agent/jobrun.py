"""One job on this node: a pool of workers fed with tasks, and the node's init rule.

Each worker slot is a loop: start a worker (a GPU index if one is free), wait for
``init()``, then run tasks until the feed runs dry, replacing the worker when it
dies. The node's init rule (docs/supervision.md): after ``3 * max_concurrency_per_instance`` init
failures in a row the node stops replacing workers for this job, hands its claims
back, and says so in ``jobs/<id>/nodes/<node>.json`` (the leader applies the
job-wide rules).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Coroutine
from dataclasses import asdict, replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from prsd.agent.ahead import claim_ahead, hand_back_ahead, settle_withdrawn
from prsd.agent.feed import TaskFeed
from prsd.agent.initresult import InitResult
from prsd.agent.monitor import open_resource_monitor
from prsd.agent.nodelog import append_stamped, stamped
from prsd.agent.session import WorkerSession
from prsd.agent.task import RunningTask, finish_task, hand_back
from prsd.agent.workerstate import (
    PoolStatistics,
    WorkerState,
    may_replace_after_init_failures,
)
from prsd.agent.writer import FileWriter, Submitted
from prsd.envs.agentside import JobEnvironment
from prsd.spool.initrecords import InitError
from prsd.spool.layout import TaskName
from prsd.spool.nodereport import NodeReport, write_report
from prsd.spool.watch import Doorbell

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from prsd.agent.context import JobContext
    from prsd.agent.gpu import GpuSlots

CommitHook = Callable[[str, TaskName], None]


class JobRun:
    """Runs one job's tasks on this node until the job ends or the node is told to stop."""

    def __init__(
        self,
        ctx: JobContext,
        *,
        gpus: GpuSlots,
        ip: str,
        on_commit: CommitHook,
        stop_grace_s: float = 5.0,
        durable: bool = True,
    ) -> None:
        self.ctx = ctx
        self.gpus = gpus
        self.ip = ip
        self.on_commit = on_commit
        self.stop_grace_s = stop_grace_s
        self.durable = durable
        # The feed's own bell: the arrival watch and Agent._fan_out ring it.
        self.feed = TaskFeed(ctx, Doorbell())
        self._numbers = itertools.count()
        self.sessions: set[WorkerSession] = set()
        self._in_slot: dict[int, WorkerSession] = {}  # the worker each slot serves with
        self.init_failures_in_row = 0
        self.init_failures = 0
        self.init_timeouts = 0
        self.init_successes = 0
        self.first_init_error: InitError | None = None
        self.gave_up = False
        self.kill_busy = False
        self._tg: TaskGroup | None = None
        # Slots this job may use on the node (None: all its workers); the agent lowers
        # it when several jobs share the node (prsd.agent.share).
        self.allowance: int | None = None
        self._closed = anyio.Event()
        self._slots_running: set[int] = set()
        # Set once each slot started before it has had its first worker's answer
        # (ready, or a failure): the resource monitor's first sample waits for it.
        self.workers_up = anyio.Event()
        self._awaiting_first: set[int] = set()
        self.writer = FileWriter()  # the job's file writes here, off the event loop
        self.feed.offload = self.writer.call  # a claim ahead rides the writes' hop
        self.environment = JobEnvironment(ctx.layout, ctx.node_id, ctx.spec, self._write_report)

    @property
    def job_id(self) -> str:
        return self.ctx.job_id

    def main_log(self, line: str) -> None:
        path, lines = self.ctx.main_log(), [stamped(line)]
        self.writer.put(lambda: append_stamped(path, lines, self.ctx.layout.root))

    async def run(self) -> None:
        """Serve the job until the feed is closed and every worker is retired."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.writer.run)
            try:
                await self._serve_job()
            finally:
                await self.writer.close()

    async def _serve_job(self) -> None:
        workers = self.ctx.workers()
        adopted = self.feed.adopt_own_claims()
        self.main_log(
            f"node {self.ctx.node_id} serves job {self.job_id} with {workers} workers, "
            f"{self.ctx.gpu_count} GPUs"
            + (f"; {adopted} earlier claims resumed" if adopted else "")
        )
        if self.ctx.wanted_workers() > workers:
            self.main_log(
                f"max_concurrency_per_instance {self.ctx.wanted_workers()} is more than this "
                f"node's slot cap {workers} (PRSD_MAX_WORKERS_PER_NODE): {workers} workers run"
            )
        for line in self.gpus.inventory.log_lines():
            self.main_log(line)
        self._write_report()
        try:
            await self._run_workers()
        finally:
            self.environment.release()

    async def _run_workers(self) -> None:
        # The job's own environment (prsd/envs) before any worker starts or claims.
        python = await self.environment.prepare()
        if self.environment.note:
            self.main_log(self.environment.note)
        if self.environment.failed:
            self.first_init_error = self.environment.init_error()
            self.gave_up = True
            self._close_feed()
            self.main_log(f"the job's environment failed: {self.environment.error}")
            self._write_report()
            await self._hand_back_local()
            return
        if python is not None:
            self.ctx = replace(self.ctx, spec=replace(self.ctx.spec, python=python))
            self.main_log(f"workers run on the job's environment: {python}")
        monitor = open_resource_monitor(self.ctx, lambda: self.sessions, workers_up=self.workers_up)
        try:
            async with monitor, anyio.create_task_group() as tg:
                self._tg = tg
                self._grow()
                # With no slot allowed for now (the node's slots went to other jobs),
                # the job stays taken on here until its feed closes.
                tg.start_soon(self._until_closed)
        finally:
            self._tg = None  # stop() after the end has no workers left to stop
        await self._hand_back_local()

    def stop(self, *, kill_busy: bool) -> None:
        """The job ended (or the node stops): no more claims.

        With ``kill_busy``, workers still in ``init()`` or running a mini-batch are
        stopped with the ladder; idle ones retire (``shutdown()``) either way.
        """
        self.kill_busy = kill_busy
        self._close_feed()
        self._soon(self._hand_back_ahead)  # to another node now, not at the run's end
        for s in self.sessions:  # nor begun by a worker it was handed to ahead
            s.withdraw_ahead("this node takes no more of the job's work")
        if kill_busy and self._tg is not None:
            for s in list(self.sessions):
                if s.state in (WorkerState.STARTING, WorkerState.BUSY):
                    self._tg.start_soon(s.stop_now, "the job ended")

    async def _until_closed(self) -> None:
        await self._closed.wait()

    def _close_feed(self) -> None:
        self.feed.close()
        self._closed.set()

    def set_allowance(self, slots: int | None) -> None:
        """Use at most ``slots`` workers from now on (fair sharing between jobs)."""
        self.allowance = slots
        if slots is not None:
            self._soon(self._hand_back_ahead)  # its slot may not run now
            for index, session in self._in_slot.items():
                if not self._within(index):
                    session.withdraw_ahead(f"the job's slots on this node were capped at {slots}")
        self._grow()

    def _within(self, index: int) -> bool:
        return self.allowance is None or index < self.allowance

    def _grow(self) -> None:
        """Start the slots the allowance permits that are not running."""
        if self._tg is None or self.feed.closed or self.gave_up:
            return
        if self._tg.cancel_scope.cancel_called:
            return  # the run is ending (stopped, or failed by a storage fault)
        for index in range(self.ctx.workers()):
            if self._within(index) and index not in self._slots_running:
                self._slots_running.add(index)
                if not self.workers_up.is_set():
                    self._awaiting_first.add(index)
                self._tg.start_soon(self._slot, index)

    def _first_answer(self, index: int) -> None:
        """Slot ``index`` had its first worker's answer (or ended without one)."""
        self._awaiting_first.discard(index)
        if not self._awaiting_first:
            self.workers_up.set()

    async def _slot(self, index: int = 0) -> None:
        try:
            while not self.feed.closed and not self.gave_up and self._within(index):
                session = await self._ready_worker()
                self._first_answer(index)
                if session is None:
                    continue
                self._in_slot[index] = session
                try:
                    await self._serve(session, index)
                finally:
                    del self._in_slot[index]
                    self.sessions.discard(session)
                    self.gpus.release(session.gpu)
                if not session.replace:
                    break  # retired or stopped: its state machine asked for no successor
        finally:
            self._slots_running.discard(index)
            self._first_answer(index)

    async def _ready_worker(self) -> WorkerSession | None:
        gpu = self.gpus.acquire()
        session = WorkerSession(
            self.ctx,
            next(self._numbers),
            gpu,
            ip=self.ip,
            stop_grace_s=self.stop_grace_s,
            writer=self.writer,
            on_init_failure=self._init_failed,
        )
        self.sessions.add(session)
        try:
            assert self._tg is not None
            await session.start(self._tg)
            result = await session.wait_ready(self.ctx.init_deadline_s())
        except OSError as exc:  # no process: no state machine to count the failure
            result = InitResult(False, f"cannot start a worker: {exc}")
            self._init_failed(session, result)
        if result.ok:
            if session.run_as is not None:  # the feed makes a claim's result file for the owner
                self.feed.prepare = session.prepare
            self.init_failures_in_row = 0
            self.init_successes += 1
            self._write_report()
            return session
        self.sessions.discard(session)  # counted by its COUNT_INIT_FAILURE, if it failed
        self.gpus.release(gpu)
        return None

    def _init_failed(self, session: WorkerSession, result: InitResult) -> None:
        self.init_failures += 1
        self.init_failures_in_row += 1
        self.init_timeouts += int(result.timed_out)
        session.main_log(f"{session.name} init() failed: {result.error}")
        if self.first_init_error is None:
            self.first_init_error = InitError(
                session.name,
                result.error,
                result.traceback_tail,
                result.error_file or str(session.paths.error),
            )
        workers = self.ctx.workers()
        if not self.gave_up and not may_replace_after_init_failures(
            self.init_failures_in_row, workers
        ):
            self.gave_up = True
            self.main_log(
                f"{self.init_failures_in_row} init() failures in a row (limit 3 x "
                f"{workers}): this node stops starting workers for the job"
            )
            self._close_feed()
            # Workers other slots started before the limit was reached stop too.
            for other in list(self.sessions):
                if other.state is WorkerState.STARTING and self._tg is not None:
                    self._tg.start_soon(other.stop_now, "this node gave up on the job")
        self._write_report()

    async def _serve(self, session: WorkerSession, index: int = 0) -> None:
        try:
            while True:
                task = session.take_ahead()  # handed to the worker while its last one ran
                handed = task is not None
                if task is None:
                    task = await self.feed.get() if self._within(index) else None
                if task is None:
                    await session.retire()  # its exit is recorded by the state machine
                    return
                if self.allowance is None:
                    self._soon(partial(self._claim_ahead, session))  # while this task runs
                healthy = await session.run_task(task, session.record_batch, handed=handed)
                if task.withdrawn:
                    await settle_withdrawn(self.ctx.layout, self.ctx.node_id, self.feed, task)
                elif task.complete or self.kill_busy:
                    assert self._tg is not None  # queued now: one hop with the records
                    self._tg.start_soon(self._commit, task, self._submit_commit(task))
                else:
                    self.feed.put_front(task)
                if not healthy:
                    return
        finally:
            left = session.take_ahead()
            if left is not None:  # the worker ended first: it never began the task
                self.feed.put_front(left)

    def _submit_commit(self, task: RunningTask) -> Submitted[bool]:
        layout, node = self.ctx.layout, self.ctx.node_id
        return self.writer.submit(lambda: finish_task(layout, node, task, durable=self.durable))

    async def _commit(self, task: RunningTask, commit: Submitted[bool]) -> None:
        with anyio.CancelScope(shield=True), self.ctx.ops.op(f"the commit of {task.task.name}"):
            committed = await commit.wait()
        if committed:
            self.on_commit(self.job_id, task.task)
        else:
            self.main_log(f"task {task.task.name} was taken from this node; its result is void")

    async def _hand_back_local(self) -> None:
        layout, node = self.ctx.layout, self.ctx.node_id
        await self._hand_back_ahead()
        while self.feed.local:
            task = self.feed.local.popleft()
            if task.started:
                await self._commit(task, self._submit_commit(task))
            else:
                await anyio.to_thread.run_sync(hand_back, layout, node, task)

    def _soon(self, func: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Start ``func`` in the run's task group if it still takes tasks (a task held
        ahead is otherwise handed back at the run's end, :meth:`_hand_back_local`)."""
        if self._tg is None or self._tg.cancel_scope.cancel_called:
            return
        try:
            self._tg.start_soon(func)
        except RuntimeError:
            pass  # the group is closing: its end hands the task back

    async def _claim_ahead(self, session: WorkerSession) -> None:
        capped = lambda: self.allowance is not None  # read after the claim (prsd.agent.ahead)
        await claim_ahead(self.ctx.layout, self.ctx.node_id, self.feed, session, capped)

    async def _hand_back_ahead(self) -> None:
        await hand_back_ahead(self.ctx.layout, self.ctx.node_id, self.feed)

    def statistics(self) -> PoolStatistics:
        """This job's workers on this node now, by state, with the init counters."""
        return PoolStatistics.count(
            self.ctx.workers(),
            [s.state for s in self.sessions],
            init_successes=self.init_successes,
            init_failures=self.init_failures,
            init_failures_in_row=self.init_failures_in_row,
            init_timeouts=self.init_timeouts,
            gave_up=self.gave_up,
        )

    def snapshot(self) -> dict[str, Any]:
        """This job's workers on this node, for the heartbeat."""
        return {
            "workers": len(self.sessions),
            "busy": sum(1 for s in self.sessions if s.busy),
            "pool": asdict(self.statistics()),
            "processes": sorted(s.name for s in self.sessions),
            "running": sorted(s.current_task for s in self.sessions if s.current_task),
            "claimed": self.feed.claimed,
            "init_failures": self.init_failures,
            "gave_up": self.gave_up,
        }

    def _write_report(self) -> None:
        report = NodeReport(
            self.ctx.node_id,
            updated_at=datetime.now(UTC).isoformat(timespec="seconds"),
            first_init_error=self.first_init_error,
            environment=self.environment.build(),
            **asdict(self.statistics()),
        )
        path = self.ctx.layout.node_report(self.ctx.node_id)
        self.writer.put(partial(write_report, path, report.encode()))
