"""The agent's view of the spool's health: storage faults met, logged once, healed.

Invariant: a storage fault (:mod:`prsd.spool.faults`) never stops the agent. The
first time a condition is met it is logged with the node (and job) id; it is shown
in the node's heartbeat (``fault``) until a probe file can be written again in
``nodes/``, tried no sooner than the fault's backoff; then it is cleared with one
log line. Errors: :meth:`SpoolHealth.check_healed` raises nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.logconfig import get_logger
from prsd.spool.faults import FaultState, probe_writable, storage_fault

if TYPE_CHECKING:
    from pathlib import Path

log = get_logger("prsd.agent")


class SpoolHealth:
    """Storage faults as one node meets them."""

    def __init__(self, node_id: str, probe_dir: Path) -> None:
        self.node_id = node_id
        self.probe_dir = probe_dir
        self.faults = FaultState()

    @property
    def condition(self) -> str:
        return self.faults.condition

    @property
    def retry_at(self) -> float:
        return self.faults.retry_at

    @property
    def backoff_s(self) -> float:
        return self.faults.backoff_s

    def note(self, exc: BaseException, now: float, job_id: str | None = None) -> bool:
        """If ``exc`` is a storage fault: log it once, report it in the heartbeat; True."""
        condition = storage_fault(exc)
        if condition is None:
            return False
        if self.faults.hit(condition, now):
            log.error(
                "storage fault; waiting for the spool to heal",
                node_id=self.node_id,
                condition=condition,
                job_id=job_id,
                error=str(exc),
            )
        return True

    def due(self, now: float) -> bool:
        """A fault is on and its backoff is over: time to look whether it healed."""
        return bool(self.faults.condition) and not self.faults.waiting(now)

    def check_healed(self, now: float) -> None:
        """(Blocking.) Write a probe file; clear the fault when it works."""
        try:
            probe_writable(self.probe_dir)
        except OSError as exc:
            if not self.note(exc, now):
                log.warning("cannot probe the spool", node_id=self.node_id, error=str(exc))
            return
        self.faults.clear()
        log.warning("the spool is healthy again; going on", node_id=self.node_id)
