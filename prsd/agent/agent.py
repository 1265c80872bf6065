"""The agent loop: find active jobs in the spool, run a JobRun for each, stop them when they end.

A job is active while ``active/<job_id>`` exists (the leader creates it at intake and
removes it when the job ends). When a job ends, idle workers are retired (their
``shutdown()`` runs) and busy ones stopped: "work in flight is stopped".
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
import structlog

from prsd.agent.context import JobContext
from prsd.agent.gpu import GpuSlots, discover_gpu_count
from prsd.agent.jobrun import CommitHook, JobRun
from prsd.agent.nodelog import host_ip
from prsd.errors import PrsdError
from prsd.jobspec import JobSpec
from prsd.storage.heartbeat import HEARTBEAT_INTERVAL_S, Heartbeat, write_heartbeat
from prsd.storage.spool import active_jobs
from prsd.storage.watch import Doorbell

if TYPE_CHECKING:
    from prsd.storage.layout import SpoolLayout

log = structlog.get_logger("prsd.agent")

TICK_S = 0.5


@dataclass
class AgentOptions:
    node_id: str
    stop_grace_s: float = 5.0
    durable: bool = True
    gpu_count: int | None = None  # None: discover
    slots: int | None = None  # worker slots offered to all jobs (None: CPU count)
    heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S


@dataclass
class _Running:
    run: JobRun
    done: anyio.Event = field(default_factory=anyio.Event)


class Agent:
    """Serves every active job of a spool on this node."""

    def __init__(
        self,
        spool: SpoolLayout,
        options: AgentOptions,
        *,
        bell: Doorbell | None = None,
        on_commit: CommitHook | None = None,
    ) -> None:
        self.spool = spool
        self.options = options
        self.bell = bell or Doorbell()
        self.on_commit = on_commit or (lambda job_id, task: None)
        gpu_count = options.gpu_count if options.gpu_count is not None else discover_gpu_count()
        self.gpus = GpuSlots(gpu_count)
        self.ip = host_ip()
        self.runs: dict[str, _Running] = {}
        self.draining = False
        self._seq = 0
        self._boot = secrets.token_hex(8)
        self._started_at = datetime.now(UTC).isoformat(timespec="seconds")
        self.refused: set[str] = set()

    @property
    def node_id(self) -> str:
        return self.options.node_id

    async def run(self, *, until_job: str | None = None) -> None:
        """Serve jobs until cancelled, or until ``until_job`` has ended here."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._heartbeats)
            while True:
                active = set(await anyio.to_thread.run_sync(active_jobs, self.spool))
                self._stop_ended(active)
                for job_id in sorted(active - set(self.runs) - self.refused):
                    self._start(tg, job_id)
                if until_job is not None and await self._ended_here(until_job, active):
                    break
                await self.bell.wait(TICK_S)
            for running in self.runs.values():
                running.run.stop(kill_busy=True)
            tg.cancel_scope.cancel()

    def heartbeat(self) -> Heartbeat:
        """This node's heartbeat now (the sequence number grows by one per call)."""
        self._seq += 1
        return Heartbeat(
            node_id=self.node_id,
            seq=self._seq,
            boot=self._boot,
            pid=os.getpid(),
            host=socket.gethostname(),
            started_at=self._started_at,
            updated_at=datetime.now(UTC).isoformat(timespec="seconds"),
            slots=self.options.slots or (os.cpu_count() or 1),
            gpus=self.gpus.count,
            draining=self.draining,
            jobs={job_id: r.run.snapshot() for job_id, r in self.runs.items()},
        )

    async def _heartbeats(self) -> None:
        while True:
            beat = self.heartbeat()
            try:
                await anyio.to_thread.run_sync(write_heartbeat, self.spool, beat)
            except OSError as exc:
                log.warning("cannot write heartbeat", node_id=self.node_id, error=str(exc))
            await anyio.sleep(self.options.heartbeat_interval_s)

    async def _ended_here(self, job_id: str, active: set[str]) -> bool:
        if job_id in active or job_id in self.runs:
            return False
        final = self.spool.job(job_id).final
        return await anyio.to_thread.run_sync(final.exists)

    def _stop_ended(self, active: set[str]) -> None:
        for job_id, running in list(self.runs.items()):
            if running.done.is_set() and job_id not in active:
                del self.runs[job_id]
            elif job_id not in active:
                running.run.stop(kill_busy=True)

    def _start(self, tg: anyio.abc.TaskGroup, job_id: str) -> None:
        layout = self.spool.job(job_id)
        try:
            spec = JobSpec.from_json(layout.spec.read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError) as exc:
            log.warning("cannot read job spec", job_id=job_id, error=str(exc))
            self.refused.add(job_id)
            return
        ctx = JobContext(layout, spec, self.node_id, self.gpus.count, spec.input.format)
        run = JobRun(
            ctx,
            gpus=self.gpus,
            bell=self.bell,
            ip=self.ip,
            on_commit=self.on_commit,
            stop_grace_s=self.options.stop_grace_s,
            durable=self.options.durable,
        )
        running = _Running(run)
        self.runs[job_id] = running
        tg.start_soon(self._serve, running)
        log.info("serving job", job_id=job_id, node_id=self.node_id, workers=ctx.workers())

    async def _serve(self, running: _Running) -> None:
        try:
            await running.run.run()
        except PrsdError as exc:
            log.error("job failed on this node", job_id=running.run.job_id, error=exc.one_line())
        finally:
            running.done.set()
            self.bell.ring()
