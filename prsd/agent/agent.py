"""The agent loop: find active jobs in the spool, run a JobRun for each, stop them when they end.

A job is active while ``active/<job_id>`` exists (the leader creates it at intake and
removes it when the job ends). When a job ends, idle workers are retired (their
``shutdown()`` runs) and busy ones stopped: "work in flight is stopped".
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.from_thread
import anyio.to_thread

from prsd.agent.beat import NodeBeat, Serving
from prsd.agent.context import JobContext
from prsd.agent.gpu import GpuSlots
from prsd.agent.health import SpoolHealth
from prsd.agent.jobrun import CommitHook, JobRun
from prsd.agent.nodelog import host_ip
from prsd.agent.share import share_slots
from prsd.agent.visibility import report_unseen, unseen
from prsd.errors import PrsdError
from prsd.jobspec import JobSpec
from prsd.logconfig import get_logger
from prsd.spool.arrivalbell import ring_on_arrivals
from prsd.spool.entrybell import watch_entries
from prsd.spool.fstype import is_local_spool
from prsd.spool.heartbeat import write_heartbeat
from prsd.spool.heartbeatrecord import HEARTBEAT_INTERVAL_S, Heartbeat
from prsd.spool.opening import active_jobs
from prsd.spool.readsafe import MissingFile
from prsd.spool.seats import free_seats, take_seat
from prsd.spool.specfile import read_spec
from prsd.spool.watch import Doorbell

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.agent.forks import ForkServer
    from prsd.spool.layout import JobLayout, SpoolLayout

log = get_logger("prsd.agent")

TICK_S = 0.5
WATCHED_TICK_S = 1.0  # with active/ watched (a local spool): its periodic checks alone
LIST_MIN_S = 0.1
RECHECK_S = 5.0  # a job this node could not take (seats full, files unseen) is looked at again
EXIT_IDLE = 41  # --exit-when-idle: no job to serve


@dataclass
class AgentOptions:
    node_id: str
    stop_grace_s: float = 5.0
    durable: bool = True
    gpu_count: int | None = None  # None: discover
    slots: int | None = None  # worker slots offered to all jobs (None: CPU count)
    heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S
    drain_grace_s: float = 60.0  # SIGTERM: running mini-batches get this long to finish
    exit_when_idle: bool = False
    idle_grace_s: float = 2.0  # with exit_when_idle: idle this long before exiting


@dataclass
class _Running:
    run: JobRun
    done: anyio.Event = field(default_factory=anyio.Event)
    hints: anyio.CancelScope = field(default_factory=anyio.CancelScope)  # its arrival watch


class Agent:
    """Serves every active job of a spool on this node."""

    def __init__(
        self,
        spool: SpoolLayout,
        options: AgentOptions,
        *,
        bell: Doorbell | None = None,
        on_commit: CommitHook | None = None,
        only_job: str | frozenset[str] | None = None,
        forks: ForkServer | None = None,
    ) -> None:
        self.spool = spool
        self.forks = forks
        self.options = options
        self.bell = bell or Doorbell()
        self.on_commit = on_commit or (lambda job_id, task: None)
        self.gpus = GpuSlots.for_node(options.gpu_count)
        self.ip = host_ip()
        self.runs: dict[str, _Running] = {}
        self.draining = False
        self.drained = False  # set once a drain has finished: the last heartbeat says so
        self.refused: set[str] = set()
        self.only_job = only_job
        self.waiting: dict[str, float] = {}  # job -> when to look again (seats, visibility)
        self._drain = anyio.Event()
        self._fast = False
        self._relist = False  # list active/ at the next ring without waiting
        self._arrival_hints = False  # each served job's pending/ watched (a local spool)
        self._relist_now = anyio.Event()  # set by job_ended(): ends a listing's wait
        self.health = SpoolHealth(options.node_id, spool.nodes)  # storage faults met
        self.beat = NodeBeat(
            spool,
            options.node_id,
            options.heartbeat_interval_s,
            self.health,
            one_job=only_job is not None,
        )
        self.restart: set[str] = set()  # runs ended by a storage fault: start them again
        self._active: set[str] = set()  # the last listing of active/ that worked

    @property
    def node_id(self) -> str:
        return self.options.node_id

    async def run(self, *, until_job: str | None = None, signals: bool = False) -> int:
        """Serve jobs until cancelled, drained, idle (``exit_when_idle``: 41) or
        ``until_job`` has ended here; returns the exit code."""
        code, tick_s = 0, TICK_S
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.beat.run, self._serving)
            if signals:
                tg.start_soon(self._signals)
                tick_s = self._watch_locally(tg)
            idle_since: float | None = None
            listed = -1e9
            while not self._drain.is_set():
                listed, active = await self._list_active(listed)
                self._stop_ended(active)
                now = anyio.current_time()
                for job_id in sorted(active - set(self.runs) - self.refused):
                    if self.waiting.get(job_id, 0.0) <= now:
                        await anyio.to_thread.run_sync(self._start, tg, job_id, now)
                if until_job is not None and await self._ended_here(until_job, active):
                    break
                if self.options.exit_when_idle and not self.runs:
                    idle_since = now if idle_since is None else idle_since
                    if now - idle_since >= self.options.idle_grace_s:
                        log.info("idle: exiting", node_id=self.node_id)
                        code = EXIT_IDLE
                        break
                else:
                    idle_since = None
                with anyio.move_on_after(tick_s):
                    if await self.bell.wait(tick_s):
                        self._fan_out()
            if self._drain.is_set():
                await self._drain_runs()
            for running in self.runs.values():
                running.run.stop(kill_busy=True)
            tg.cancel_scope.cancel()
        return code

    def _watch_locally(self, tg: anyio.abc.TaskGroup) -> float:
        """On a local spool, a job taken in wakes the agent at once, and so do each served
        job's new tasks (_watch_arrivals); nothing else under jobs/ wakes it. Returns
        the loop's timer: longer with ``active/`` watched."""
        if not is_local_spool(self.spool.root):
            return TICK_S
        self._arrival_hints = True
        return WATCHED_TICK_S if watch_entries(tg, self.spool.active, self.bell) else TICK_S

    async def _list_active(self, listed: float) -> tuple[float, set[str]]:
        """The active jobs this agent may serve, and when they were listed.

        The bell rings on every commit in this process; while jobs run, ``active/`` is
        listed at most every LIST_MIN_S all the same (it only matters when a job starts
        or ends). An idle agent answers a ring at once (it means a new job), and so does
        one told that a job ended (:meth:`job_ended`) or whose run of a job just ended.
        """
        if self.runs and not self._relist:
            with anyio.move_on_after(max(0.0, listed + LIST_MIN_S - anyio.current_time())):
                await self._relist_now.wait()  # a job's end does not wait the interval out
        self._relist = False
        if self._relist_now.is_set():
            self._relist_now = anyio.Event()
        listed = anyio.current_time()
        try:
            active = set(await anyio.to_thread.run_sync(active_jobs, self.spool))
        except OSError as exc:
            if not self.health.note(exc, listed, None):
                raise
            await anyio.sleep(self.health.backoff_s)
            return listed, set(self._active)
        if self.only_job is not None:  # prsd run: one job, or a pipeline's steps
            active &= {self.only_job} if isinstance(self.only_job, str) else self.only_job
        self._active = active
        return listed, active

    def job_ended(self) -> None:
        """A job ended (the leader in this process says so, or this node's run of it
        finished): look at ``active/`` at the next ring, without the listing limit."""
        self._relist = True
        self._relist_now.set()
        self.bell.ring()

    def request_drain(self, *, fast: bool = False) -> None:
        """Stop claiming; let running mini-batches finish (``fast``: stop them now)."""
        self.draining = True
        self._fast = self._fast or fast
        self._drain.set()
        self.bell.ring()

    async def _signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                fast = self.draining or signum == signal.SIGINT
                log.warning(
                    "draining" if not fast else "stopping now",
                    node_id=self.node_id,
                    signal=signal.Signals(signum).name,
                )
                self.request_drain(fast=fast)
                if fast:
                    for running in self.runs.values():
                        running.run.stop(kill_busy=True)

    async def _drain_runs(self) -> None:
        """Graceful drain: no more claims, running work finishes within the grace, the
        rest is handed back (killed mid-task: its unfinished mini-batches go back)."""
        grace = 0.0 if self._fast else self.options.drain_grace_s
        for running in self.runs.values():
            running.run.stop(kill_busy=self._fast)
        with anyio.move_on_after(grace):
            for running in list(self.runs.values()):
                await running.done.wait()
        for running in self.runs.values():
            running.run.stop(kill_busy=True)
        with anyio.move_on_after(self.options.stop_grace_s + 10):
            for running in list(self.runs.values()):
                await running.done.wait()
        for job_id in list(self.runs):
            await anyio.to_thread.run_sync(free_seats, self.spool.job(job_id), self.node_id)
        self.drained = True
        await anyio.to_thread.run_sync(write_heartbeat, self.spool, self.heartbeat())
        log.info("drained", node_id=self.node_id)

    def heartbeat(self) -> Heartbeat:
        """This node's heartbeat now (the sequence number grows by one per call)."""
        return self.beat.stamp(self._serving())

    def _serving(self) -> Serving:
        jobs = {job_id: r.run.snapshot() for job_id, r in self.runs.items()}
        return Serving(self.node_slots(), self.gpus.count, self.draining, self.drained, jobs)

    def stalled(self) -> str:
        """Why this agent makes no progress ("" while it does): :meth:`NodeBeat.stalled`."""
        return self.beat.stalled()

    async def _ended_here(self, job_id: str, active: set[str]) -> bool:
        if job_id in active or job_id in self.runs:
            return False
        final = self.spool.job(job_id).final
        return await anyio.to_thread.run_sync(final.exists)

    def _stop_ended(self, active: set[str]) -> None:
        for job_id, running in list(self.runs.items()):
            if running.done.is_set() and (job_id not in active or job_id in self.restart):
                del self.runs[job_id]
                self.restart.discard(job_id)
                self._rebalance()
            elif job_id not in active:
                running.run.stop(kill_busy=True)

    def node_slots(self) -> int:
        """Worker slots this node shares between jobs (``--slots``, else GPUs or CPUs)."""
        if self.options.slots:
            return self.options.slots
        return self.gpus.count or os.cpu_count() or 1

    def _rebalance(self) -> None:
        """Share the node's slots fairly between the jobs it serves (one job: all it wants)."""
        live = [(job_id, r.run) for job_id, r in self.runs.items() if not r.done.is_set()]
        if len(live) <= 1:
            for _, run in live:
                run.set_allowance(None)
            return
        demands = [(job_id, run.ctx.workers()) for job_id, run in live]
        slots = max(self.node_slots(), max(d for _, d in demands))
        shares = share_slots(slots, demands)
        for job_id, run in live:
            run.set_allowance(shares[job_id])

    def _start(self, tg: anyio.abc.TaskGroup, job_id: str, now: float) -> None:
        """(In a worker thread.) Take the job on here if this node can and may.

        The job's boundary: whatever its files make this raise, the job is refused on
        this node (logged with its id), or tried again after a storage fault.
        """
        try:
            self._try_start(tg, job_id, now)
        except Exception as exc:  # noqa: BLE001 - the job's boundary
            if self.health.note(exc, now, job_id):
                self.waiting[job_id] = self.health.retry_at
                return
            log.error("cannot serve the job", job_id=job_id, node_id=self.node_id, error=repr(exc))
            self.refused.add(job_id)

    def _try_start(self, tg: anyio.abc.TaskGroup, job_id: str, now: float) -> None:
        layout = self.spool.job(job_id)
        try:
            data = read_spec(layout, daemon_owned=False)
        except MissingFile:
            if not layout.root.is_dir():
                log.warning("an active job has no folder", job_id=job_id)
                self.refused.add(job_id)
            else:
                self.waiting[job_id] = now + RECHECK_S  # being taken in
            return
        spec = JobSpec.from_json(data.decode("utf-8"))
        missing = unseen(spec)
        if missing:
            report_unseen(self.spool.job(job_id), self.node_id, missing)
            self.waiting[job_id] = now + RECHECK_S
            return
        if spec.instance_count is not None and not take_seat(
            layout, self.node_id, spec.instance_count
        ):
            self.waiting[job_id] = now + RECHECK_S
            return
        self.waiting.pop(job_id, None)
        anyio.from_thread.run_sync(self._begin, tg, job_id, layout, spec)

    def _begin(
        self, tg: anyio.abc.TaskGroup, job_id: str, layout: JobLayout, spec: JobSpec
    ) -> None:
        ctx = JobContext(
            layout,
            spec,
            self.node_id,
            self.gpus.count,
            spec.input.format,
            forks=self.forks,
            ops=self.beat.ops,
        )
        run = JobRun(
            ctx,
            gpus=self.gpus,
            ip=self.ip,
            on_commit=self.on_commit,
            stop_grace_s=self.options.stop_grace_s,
            durable=self.options.durable,
        )
        running = _Running(run)
        self.runs[job_id] = running
        self._rebalance()
        tg.start_soon(self._serve, running)
        if self._arrival_hints:
            tg.start_soon(self._watch_arrivals, running, layout.pending)
        log.info("serving job", job_id=job_id, node_id=self.node_id, workers=ctx.workers())

    async def _serve(self, running: _Running) -> None:
        """Run one job here; its faults end its run on this node, never the agent."""
        job_id = running.run.job_id
        try:
            await running.run.run()
        except PrsdError as exc:
            log.error("job failed on this node", job_id=job_id, error=exc.one_line())
        except Exception as exc:
            if self.health.note(exc, anyio.current_time(), job_id):
                # Its claims stay in claimed/<node>/: the next run here adopts them.
                self.waiting[job_id] = self.health.retry_at
                self.restart.add(job_id)
            else:
                log.error(
                    "job stopped on this node by an error",
                    job_id=job_id,
                    node_id=self.node_id,
                    error=repr(exc),
                    exc_info=exc,
                )
                self.refused.add(job_id)
        finally:
            running.run.stop(kill_busy=True)
            running.hints.cancel()
            running.done.set()
            self.job_ended()

    async def _watch_arrivals(self, running: _Running, pending: Path) -> None:
        """Ring the job's feed when the leader writes a task of it (a local spool)."""
        with running.hints:
            await ring_on_arrivals(pending, running.run.feed.bell)

    def _fan_out(self) -> None:
        """Pass a ring of the agent's bell (the leader of ``prsd run`` wrote tasks, a job
        ended, a drain) to every job's feed. Each feed has a bell of its own: were they
        one, this loop's wait could take a ring meant for a waiting worker slot, which
        would then sleep out its poll interval with a task pending."""
        for running in self.runs.values():
            running.run.feed.bell.ring()
