"""Writing the job summary ``state/status.json`` that ``prsctl status`` reads.

The job's error text goes to ``state/status.private.json`` beside it, for the owner
and the job's group only (prsd/leader/privatestatus.py).

It is small, replaced atomically, and costs the same for ten mini-batches or ten
million, so a status query never scans the spool. Its schema, the validator and
the reconciliation with ``final.json`` are :mod:`prsd.wire.status` (named here too
for the command line).
"""

from __future__ import annotations

import os
import signal
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prsd.jobspec.said import spec_notes
from prsd.leader.privatestatus import job_gid, write_status
from prsd.wire.status import SCHEMA_VERSION, STATUS_SCHEMA, reconcile, validate_status

if TYPE_CHECKING:
    from prsd.jobspec import JobSpec
    from prsd.leader.snapshot import JobSnapshot
    from prsd.storage.layout import JobLayout

__all__ = [
    "SCHEMA_VERSION",
    "STATUS_INTERVAL_S",
    "STATUS_SCHEMA",
    "StatusWriter",
    "reconcile",
    "summary",
    "validate_status",
]

STATUS_INTERVAL_S = 0.5
# Tests only: when the file this names exists, the leader removes it and stops itself
# (SIGSTOP) just before it publishes a status, to land a stale status late.
PAUSE_HOOK_ENV = "PRSD_TEST_PAUSE_BEFORE_STATUS"


class StatusWriter:
    """Rewrites status.json at most every STATUS_INTERVAL_S seconds."""

    def __init__(self, layout: JobLayout, spec: JobSpec, epoch: int = 0) -> None:
        self.layout = layout
        self.spec = spec
        self.epoch = epoch
        self.seq = 0
        self.started_wall = datetime.now(UTC)
        self.notes = [n.to_json() for n in spec_notes(spec)]
        self.gid = job_gid(layout)
        self._last = -1e9

    def due(self, now: float) -> bool:
        """Is it time for the next write?"""
        return now - self._last >= STATUS_INTERVAL_S

    def write(self, snap: JobSnapshot, now: float) -> None:
        self._last = now
        self.seq += 1
        doc = summary(snap, self)
        if snap.final is None:
            _pause_hook()
        write_status(self.layout, doc, self.gid)


def _pause_hook() -> None:
    hook = os.environ.get(PAUSE_HOOK_ENV)
    if hook:
        try:
            os.unlink(hook)
        except FileNotFoundError:
            return
        os.kill(os.getpid(), signal.SIGSTOP)


def summary(snap: JobSnapshot, writer: StatusWriter) -> dict[str, Any]:
    """The status document (schema 1)."""
    c = snap.counts
    elapsed = snap.elapsed_s
    done = c.finished_mbs
    rate = done / elapsed if elapsed > 0 else 0.0
    eta = None
    if c.total_mbs is not None and rate > 0:
        eta = (c.total_mbs - done) / rate
    final = snap.final
    return {
        "schema": SCHEMA_VERSION,
        "job_id": snap.job_id,
        "name": snap.name,
        "epoch": writer.epoch,
        "seq": writer.seq,
        "state": final.state if final else "Running",
        "reason": final.reason if final else "",
        "started_at": writer.started_wall.isoformat(timespec="seconds"),
        "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "elapsed_s": round(elapsed, 3),
        "split_done": snap.split_done,
        "planned_mbs": snap.planned_mbs,
        "total_mbs": c.total_mbs,
        "succeeded_mbs": c.succeeded_mbs,
        "failed_mbs": c.failed_mbs,
        "partial_mbs": c.partial_mbs,
        "items": c.items,
        "succeeded_items": c.succeeded_items,
        "failed_items": c.failed_items,
        "attempts": snap.attempts,
        "requeues": snap.requeues,
        "outstanding_tasks": snap.outstanding_tasks,
        "rate_mbs_per_s": round(rate, 3),
        "eta_s": round(eta, 1) if eta is not None else None,
        "output": final.output if final else snap.output,
        "first_error": snap.first_error,
        "errors": [
            {"message": message, "count": count, "first": first}
            for message, count, first in snap.errors
        ],
        "last_errors": list(snap.last_errors),
        "nodes": [
            {
                "node_id": n.node_id,
                "workers": n.workers,
                "init_failures": n.init_failures,
                "gave_up": n.gave_up,
            }
            for n in snap.nodes
        ],
        "notes": writer.notes,
    }
