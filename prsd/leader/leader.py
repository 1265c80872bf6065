"""The leader loop: intake, then one bounded step per job, then wait for a ring or a tick.

``Leader.step(now)`` is synchronous and does all the file I/O of one round; the async
``run`` calls it in a worker thread, one hop per round. ``prsd run`` drives the same object
with ``until_job`` set. Loading a job's spec at intake runs beside the rounds
(prsd/leader/intake/loads.py); a later round records its outcome."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from prsd.errors import PrsdError
from prsd.leader.election import Deposed, Election
from prsd.leader.end.faultfile import write_fault_traceback
from prsd.leader.end.guard import (
    MAX_STATE_BYTES,
    abandon_quietly,
    end_broken_job,
    fault_reason,
    load_spec,
)
from prsd.leader.health import LeaderHealth
from prsd.leader.intake.inboxsweep import InboxSweep
from prsd.leader.intake.intake import (
    fail_intake,
    ready_in_inbox,
    record_spec,
    reseal_taken_job,
    seal_taken_job,
    settle_given,
    take_in,
)
from prsd.leader.intake.loads import IntakeLoads, Loading
from prsd.leader.liveness import Observer, nodes_view
from prsd.leader.nodewatch import NodeWatch
from prsd.leader.requests.desk import RequestDesk
from prsd.leader.run.donescan import wait_s
from prsd.leader.run.job import Hint, JobDriver
from prsd.leader.run.jobclock import record_start
from prsd.logconfig import get_logger
from prsd.pipeline.desk import PipelineDesk
from prsd.spool.atomic import write_atomic
from prsd.spool.finalrecord import FinalState
from prsd.spool.lease import NODE_LEASE_S
from prsd.spool.opening import active_jobs, stranded_jobs
from prsd.spool.privaterecords import read_final
from prsd.spool.states import JobState
from prsd.spool.watch import Doorbell
from prsd.tunables import inbox_grace_s

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.spool.commitbell import CommitWatch
    from prsd.spool.jobowner import JobOwner
    from prsd.spool.layout import JobLayout, SpoolLayout

log = get_logger("prsd.leader")
T = TypeVar("T")

TICK_S = 0.25  # steps without a ring: claims, and on a network spool commits and submits
WATCHED_TICK_S = 0.5  # where inotify rings for submits and commits: the desks' own period
ORPHANS_CHECK_S = 2.0  # active jobs nobody drives (a deposed leader's last intake) are resumed


@dataclass
class LeaderLinks:
    """In-process shortcuts between a leader and an agent in the same process (``prsd run``)."""

    leader_bell: Doorbell = field(default_factory=Doorbell)
    agent_bell: Doorbell = field(default_factory=Doorbell)
    hints: list[Hint] = field(default_factory=list)


class Leader:
    """Takes jobs in and drives each to its end, while it holds the leader lease.

    ``only_job`` (``prsd run``) limits the leader to one job: it takes in, resumes and
    drives that job alone and leaves everything else in the spool as it is.
    """

    def __init__(
        self,
        spool: SpoolLayout,
        *,
        election: Election | None = None,
        links: LeaderLinks | None = None,
        only_job: str | None = None,
        node_lease_s: float = NODE_LEASE_S,
        only_jobs: frozenset[str] | None = None,
    ):
        self.spool = spool
        self.election = election or Election(spool)
        self.links = links or LeaderLinks()
        self.only_job = only_job
        # prsd run of a pipeline: its pipeline and its steps' jobs alone.
        self.only_jobs = only_jobs if only_job is None else frozenset({only_job})
        self.pipelines = PipelineDesk(spool, only=self.only_jobs)
        self.drivers: dict[str, JobDriver] = {}
        self.finished: dict[str, FinalState] = {}
        self.nodes: Observer | None = None  # the watch's, once in office
        self.watch = NodeWatch(spool, node_lease_s)  # the nodes, alive or lost
        self.node_lease_s = node_lease_s
        self._last_orphans_check = -1e9
        self.desk = RequestDesk(spool, only_job=only_job)
        self.health = LeaderHealth(spool.root, self.election)  # storage faults met
        self.commit_watch: CommitWatch | None = None  # the daemon's, on a local spool
        self.tick_s = TICK_S  # WATCHED_TICK_S with the daemon's watches (prsd.daemon)
        self.faults = self.health.faults  # the spool's storage condition
        self.suspended = self.health.suspended  # job -> when to resume it (after a fault)
        self.intake_retry: dict[str, JobLayout] = {}  # taken in, spec not yet recorded
        self.loads = IntakeLoads()  # specs loading beside the rounds
        self.inbox = InboxSweep(inbox_grace_s())  # folders that will never be jobs

    @property
    def epoch(self) -> int:
        return self.election.epoch

    def take_office(self, now: float) -> None:
        """Just elected: resume every active job from the spool (nothing redone, none lost)."""
        self.drivers.clear()
        self.loads.forget()  # a last term's loads: those jobs are stranded, taken in below
        self.nodes = self.watch.start(now)
        for job_id in active_jobs(self.spool):
            if not self._mine(job_id):
                continue
            self._resume(job_id, now)
        for job_id in filter(self._mine, stranded_jobs(self.spool)):
            log.warning("a job taken in was never marked active; taking it on", job_id=job_id)
            layout = self.spool.job(job_id)
            settle_given(self.spool, job_id)
            if not layout.spec.exists():  # killed before its spec was written: take it in again
                self._take_job(layout, now, reseal_taken_job)
                continue
            write_atomic(self.spool.active_marker(job_id), b"", durable=False)
            self._resume(job_id, now)

    def _resume(self, job_id: str, now: float) -> None:
        """Drive an active job again from the spool; a job that cannot be resumed fails
        (or, on a storage fault, is tried again after a backoff)."""
        layout = self.spool.job(job_id)
        try:
            if layout.final.exists():
                # The last leader ended the job but died before clearing the marker.
                final = read_final(layout, MAX_STATE_BYTES)
                self.finished[job_id] = FinalState.from_json(final)
                self.spool.active_marker(job_id).unlink(missing_ok=True)
                return
            spec = load_spec(layout)  # trusted only if the daemons wrote it
            driver = JobDriver(
                layout, spec, epoch=self.epoch, now=now, fence=self.election.check, resume=True
            )
        except Deposed:
            raise
        except Exception as exc:  # noqa: BLE001 - the job's boundary (prsd.leader.end.guard)
            if not self.health.note(exc, now, job_id):
                reason = f"the job could not be resumed: {fault_reason(exc, layout)}"
                self.finished[job_id] = end_broken_job(self.spool, layout, reason)
            return
        self.watch.size(driver)
        self.drivers[job_id] = driver
        log.info("job resumed", job_id=job_id, epoch=self.epoch)

    def step(self, now: float, hints: list[Hint]) -> bool:
        """One round over the inbox and every running job; True if anything moved."""
        self.election.check()
        moved = self.pipelines.step(now) or False
        moved = self._intake(now) or moved
        self._adopt_orphans(now)
        self._check_nodes(now)
        self.desk.step(now, self.drivers, self.finished)
        by_job: dict[str, list[Hint]] = {}
        for h in hints:
            by_job.setdefault(h.job_id, []).append(h)
        for job_id, driver in list(self.drivers.items()):
            written = driver.table.written
            try:
                ended = driver.step(now, by_job.get(job_id, []))
            except Deposed:
                raise
            except Exception as exc:  # noqa: BLE001 - the job's boundary (prsd.leader.end.guard)
                self._job_fault(job_id, driver, exc, now)
                moved = True
                continue
            if ended:
                assert driver.final is not None
                self.finished[job_id] = driver.final
                del self.drivers[job_id]
                log.info("job ended", job_id=job_id, state=driver.final.state)
                moved = True
            moved = moved or driver.table.written != written
        if self.health.due(now):
            self.health.check_healed(now, self.epoch)
        return moved

    def _mine(self, job_id: str) -> bool:
        return self.only_jobs is None or job_id in self.only_jobs

    def _job_fault(self, job_id: str, driver: JobDriver, exc: Exception, now: float) -> None:
        """A job's step raised: wait out a storage fault, else fail that job alone."""
        del self.drivers[job_id]
        if self.health.note(exc, now, job_id):
            abandon_quietly(driver)
            return
        reason = fault_reason(exc, driver.layout)
        log.error("job fault", job_id=job_id, error=reason, exc_info=exc)
        write_fault_traceback(driver.layout.logs, exc)
        try:
            driver.finish(JobState.FAILED, reason, now)
        except Deposed:
            raise
        except Exception as again:  # noqa: BLE001 - the job's boundary, ending it
            if self.health.note(again, now, job_id):
                abandon_quietly(driver)
                return
            abandon_quietly(driver)
        self.finished[job_id] = driver.final or end_broken_job(self.spool, driver.layout, reason)
        self.spool.active_marker(job_id).unlink(missing_ok=True)

    def _adopt_orphans(self, now: float) -> None:
        """Resume active jobs that no driver here owns.

        A deposed leader may take a job in after its successor looked at ``active/``
        (it notices the new epoch only at its next round); the job would sit there.
        """
        if now - self._last_orphans_check < ORPHANS_CHECK_S:
            return
        self._last_orphans_check = now
        for job_id in active_jobs(self.spool):
            known = job_id in self.drivers or job_id in self.finished or job_id in self.intake_retry
            if known or not self._mine(job_id):  # `prsd run` resumes its own jobs alone
                continue
            if job_id in self.suspended:
                if now < self.suspended[job_id]:
                    continue
                del self.suspended[job_id]
                log.info("resuming a job after a storage fault", job_id=job_id)
            else:
                log.warning("resuming a job no leader drove", job_id=job_id, epoch=self.epoch)
            self._resume(job_id, now)

    def _check_nodes(self, now: float) -> None:
        """Look at the nodes (the lost ones' claims requeued); write ``prsctl nodes``'s view."""
        presume = not self.election.clock.fast()  # a fast clock sees every node silent
        beats = self.watch.look(now, self.drivers.values(), presume=presume)
        if beats is not None:
            self._write_nodes_view(beats, now)

    def _write_nodes_view(self, beats: dict[str, Any], now: float) -> None:
        assert self.nodes is not None
        view = nodes_view(self.nodes, beats, self.epoch, self.node_lease_s, now)
        try:
            write_atomic(self.spool.nodes_view, view.to_json(), durable=False)
        except OSError as exc:
            if not self.health.note(exc, now, None):
                log.warning("cannot write leader/nodes.json", error=str(exc))

    def _intake(self, now: float) -> bool:
        took = False
        for item in self.loads.ready():
            took = True
            self._record_loaded(item, now)
        for job_id, waiting in list(self.intake_retry.items()):
            if not self.faults.waiting(now):
                del self.intake_retry[job_id]
                self._take_job(waiting, now, reseal_taken_job)
        others: list[tuple[str, int]] = []
        for name in ready_in_inbox(self.spool, others):
            if not self._mine(name):
                continue
            layout = take_in(self.spool, name)
            if layout is None:
                continue
            took = True
            self._take_job(layout, now)
        if self.only_jobs is None:  # `prsd run` leaves others' folders alone
            self.inbox.sweep(self.spool, others, now)
        return took

    def _take_job(
        self, layout: JobLayout, now: float, seal: Callable[[JobLayout], JobOwner] = seal_taken_job
    ) -> None:
        """Seal a job just moved in and start loading its spec (the job's boundary)."""
        owner = self._guarded(layout, now, lambda: seal(layout))
        if owner is not None:
            self.loads.start(layout, owner)

    def _record_loaded(self, item: Loading, now: float) -> None:
        """Record the spec a load ended with and start driving the job, or fail it with the
        load's reason (the job's boundary)."""
        driver = self._guarded(item.layout, now, lambda: self._driver(item, now))
        if driver is None:
            return
        self.watch.size(driver)  # the fleet's slots now, not at the next look
        self.drivers[item.layout.job_id] = driver
        self._ring_agent()  # an agent in this process starts its workers while we split
        log.info("job taken in", job_id=item.layout.job_id, name=driver.spec.name)

    def _driver(self, item: Loading, now: float) -> JobDriver:
        layout = item.layout
        spec = record_spec(layout, item.owner, item.spec())
        driver = JobDriver(layout, spec, epoch=self.epoch, now=now, fence=self.election.check)
        record_start(layout)
        write_atomic(self.spool.active_marker(layout.job_id), b"", durable=False)
        return driver

    def _guarded(self, layout: JobLayout, now: float, step: Callable[[], T]) -> T | None:
        """``step()`` of a job's intake at the job's boundary (None if it raised): a
        :class:`PrsdError` fails the job with its reason, a storage fault is tried again
        later, anything else fails the job alone."""
        try:
            return step()
        except Deposed:
            raise
        except PrsdError as exc:
            self.finished[layout.job_id] = fail_intake(layout, exc)
            log.warning("job refused", job_id=layout.job_id, error=exc.one_line())
        except Exception as exc:  # noqa: BLE001 - the job's boundary (prsd.leader.end.guard)
            if self.health.note(exc, now, None):
                self.intake_retry[layout.job_id] = layout
            else:
                reason = f"the job could not be taken in: {fault_reason(exc, layout)}"
                self.finished[layout.job_id] = end_broken_job(self.spool, layout, reason)
        return None

    def _ring_agent(self) -> None:
        """(In the step's thread.) Ring the in-process agent's bell now, not after the step."""
        with contextlib.suppress(RuntimeError):  # outside an event loop (a test driving step())
            anyio.from_thread.run_sync(self.links.agent_bell.ring)

    async def serve(self) -> None:
        """The daemon: wait for the lease, lead until deposed, then wait again."""
        while True:
            await self.election.acquire()
            try:
                await self.lead()
            except Deposed as exc:
                log.warning("deposed; back to standby", reason=exc.one_line())
                self._drop_drivers()
                self.loads.forget()

    async def lead(self, *, until_job: str | None = None) -> FinalState | None:
        """Lead (the lease is held) until cancelled or ``until_job`` ended; renews the lease."""
        await anyio.to_thread.run_sync(self.take_office, anyio.current_time())
        deposed: BaseException | None = None
        final: FinalState | None = None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.election.hold)
                final = await self.run(until_job=until_job)
                tg.cancel_scope.cancel()
        except* Deposed as group:
            deposed = group.exceptions[0]
        if deposed is not None:
            raise deposed
        return final

    def _drop_drivers(self) -> None:
        for driver in self.drivers.values():
            driver.abandon()
        self.drivers.clear()

    async def run(self, *, until_job: str | None = None) -> FinalState | None:
        """Drive jobs until cancelled, or until job ``until_job`` has ended (its final state)."""
        links = self.links
        token = anyio.lowlevel.current_token()
        self.loads.wake = lambda: anyio.from_thread.run_sync(links.leader_bell.ring, token=token)
        while True:
            hints, links.hints[:] = list(links.hints), []
            now = anyio.current_time()
            try:
                with self.election.ops.op("a job step"):  # liveness is progress
                    moved = await anyio.to_thread.run_sync(self.step, now, hints)
            except OSError as exc:  # a storage fault outside any one job (listing, intake)
                if not self.health.note(exc, now, None):
                    raise
                links.hints[:0] = hints
                await anyio.sleep(self.faults.backoff_s)
                continue
            if moved:
                links.agent_bell.ring()
            if self.commit_watch is not None:
                self.commit_watch.follow(self.drivers)
            if until_job is not None and until_job in self.finished:
                return self.finished[until_job]
            if links.hints:
                continue
            if any(d.split_behind for d in self.drivers.values()):
                await anyio.lowlevel.checkpoint()  # let the event loop run, then split on
                continue
            dues = [d.listing_due for d in self.drivers.values()]
            await links.leader_bell.wait(wait_s(self.tick_s, anyio.current_time(), dues))
