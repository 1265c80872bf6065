"""The leader loop: intake, then one bounded step per job, then wait for a ring or a tick.

``Leader.step(now)`` is synchronous and does all the file I/O of one round; the
async ``run`` calls it in a worker thread, one hop per round. ``prsd run`` drives
the same object with ``until_job`` set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
import structlog

from prsd.errors import PrsdError
from prsd.leader.intake import fail_intake, load_taken_job, ready_in_inbox, take_in
from prsd.leader.job import Hint, JobDriver
from prsd.storage.atomic import write_atomic
from prsd.storage.watch import Doorbell

if TYPE_CHECKING:
    from prsd.leader.finish import FinalState
    from prsd.storage.layout import SpoolLayout

log = structlog.get_logger("prsd.leader")

TICK_S = 0.25


@dataclass
class LeaderLinks:
    """In-process shortcuts between a leader and an agent in the same process (``prsd run``)."""

    leader_bell: Doorbell = field(default_factory=Doorbell)
    agent_bell: Doorbell = field(default_factory=Doorbell)
    hints: list[Hint] = field(default_factory=list)


class Leader:
    """Takes jobs in and drives each to its end."""

    def __init__(self, spool: SpoolLayout, *, epoch: int = 1, links: LeaderLinks | None = None):
        self.spool = spool
        self.epoch = epoch
        self.links = links or LeaderLinks()
        self.drivers: dict[str, JobDriver] = {}
        self.finished: dict[str, FinalState] = {}

    def step(self, now: float, hints: list[Hint]) -> bool:
        """One round over the inbox and every running job; True if anything moved."""
        moved = self._intake(now)
        by_job: dict[str, list[Hint]] = {}
        for h in hints:
            by_job.setdefault(h.job_id, []).append(h)
        for job_id, driver in list(self.drivers.items()):
            written = driver.table.written
            if driver.step(now, by_job.get(job_id, [])):
                assert driver.final is not None
                self.finished[job_id] = driver.final
                del self.drivers[job_id]
                log.info("job ended", job_id=job_id, state=driver.final.state)
                moved = True
            moved = moved or driver.table.written != written
        return moved

    def _intake(self, now: float) -> bool:
        took = False
        for name in ready_in_inbox(self.spool):
            layout = take_in(self.spool, name)
            if layout is None:
                continue
            took = True
            try:
                spec = load_taken_job(layout)
                driver = JobDriver(layout, spec, epoch=self.epoch, now=now)
            except PrsdError as exc:
                self.finished[layout.job_id] = fail_intake(layout, exc)
                log.warning("job refused", job_id=layout.job_id, error=exc.one_line())
                continue
            self.drivers[layout.job_id] = driver
            write_atomic(self.spool.active / layout.job_id, b"", durable=False)
            log.info("job taken in", job_id=layout.job_id, name=spec.name)
        return took

    async def run(self, *, until_job: str | None = None) -> FinalState | None:
        """Lead until cancelled, or until job ``until_job`` has ended (its final state)."""
        links = self.links
        while True:
            hints, links.hints[:] = list(links.hints), []
            now = anyio.current_time()
            moved = await anyio.to_thread.run_sync(self.step, now, hints)
            if moved:
                links.agent_bell.ring()
            if until_job is not None and until_job in self.finished:
                return self.finished[until_job]
            if not links.hints:
                await links.leader_bell.wait(TICK_S)
