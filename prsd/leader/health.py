"""The leader's view of the spool's health: storage faults met, logged once, healed.

Invariant: a storage fault (:mod:`prsd.spool.faults`) never stops the leader, nor
ends a job. The first time a condition is met it is logged (with the job's id where
one job met it); it is shown in the leader's lease heartbeat (``Election.fault``)
and the job that met it is suspended until the fault's backoff is over
(:attr:`LeaderHealth.suspended`), when the leader resumes it from the spool. After the
backoff a probe file is written in the spool's root; once that works the fault is
cleared with one log line. As :mod:`prsd.agent.health` is for an agent.

Errors: :meth:`LeaderHealth.check_healed` raises nothing; :meth:`LeaderHealth.note`
only classifies, and says False for an exception that is no storage fault.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.logconfig import get_logger
from prsd.spool.faults import FaultState, probe_writable, storage_fault

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.leader.election import Election

log = get_logger("prsd.leader")


class LeaderHealth:
    """Storage faults as one leader meets them."""

    def __init__(self, root: Path, election: Election) -> None:
        self.root = root
        self.election = election
        self.faults = FaultState()  # the spool's storage condition, as this leader meets it
        self.suspended: dict[str, float] = {}  # job -> when to resume it (after a storage fault)

    def note(self, exc: BaseException, now: float, job_id: str | None) -> bool:
        """If ``exc`` is a storage fault: note it (log once), suspend the job; True."""
        condition = storage_fault(exc)
        if condition is None:
            return False
        if self.faults.hit(condition, now):
            log.error(
                "storage fault; waiting for the spool to heal",
                condition=condition,
                job_id=job_id,
                error=str(exc),
            )
        self.election.fault = condition
        if job_id is not None:
            self.suspended[job_id] = self.faults.retry_at
        return True

    def due(self, now: float) -> bool:
        """A fault is on and its backoff is over: time to look whether it healed."""
        return bool(self.faults.condition) and not self.faults.waiting(now)

    def check_healed(self, now: float, epoch: int) -> None:
        """(Blocking.) Write a probe file; clear the fault when it works (log once)."""
        try:
            probe_writable(self.root)
        except OSError as exc:
            if not self.note(exc, now, None):
                log.warning("cannot probe the spool", error=str(exc))
            return
        self.faults.clear()
        self.election.fault = ""
        log.warning("the spool is healthy again; going on", epoch=epoch)
