"""Writing the job summary ``state/status.json`` that ``prsctl status`` reads.

The job's error text goes to ``state/status.private.json`` beside it, for the owner
and the job's group only (prsd/leader/end/privatestatus.py).

It is small, replaced atomically, and costs the same for ten mini-batches or ten
million, so a status query never scans the spool. Its schema, the validator and
the reconciliation with ``final.json`` are :mod:`prsd.spool.statusschema` (named here too
for the command line).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prsd.jobspec.said import spec_notes
from prsd.leader.end.privatestatus import write_status
from prsd.logconfig import get_logger
from prsd.spool.lease import current_epoch
from prsd.spool.privaterecords import job_gid
from prsd.spool.states import JobState
from prsd.spool.statusfiles import status_mark
from prsd.spool.statusschema import SCHEMA_VERSION

if TYPE_CHECKING:
    from prsd.jobspec import JobSpec
    from prsd.leader.run.snapshot import JobSnapshot
    from prsd.spool.layout import JobLayout

log = get_logger("prsd.leader")

__all__ = ["STATUS_INTERVAL_S", "StatusWriter", "fenced_off", "final_counts", "summary"]

STATUS_INTERVAL_S = 0.5


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
        self.fenced = False  # a write was refused (logged once)

    def due(self, now: float) -> bool:
        """Is it time for the next write?"""
        return now - self._last >= STATUS_INTERVAL_S

    def write(self, snap: JobSnapshot, now: float) -> bool:
        """Replace status.json unless it is fenced off (see :func:`fenced_off`); True
        when written."""
        doc = self.next_document(snap, now)
        if doc is None:
            return False
        write_status(self.layout, doc, self.gid)
        return True

    def next_document(self, snap: JobSnapshot, now: float) -> dict[str, Any] | None:
        """The next status document, or None when it is fenced off (logged once); the
        job's last one is written by the end-of-job writer (prsd/leader/end/finish.py)."""
        self._last = now
        self.seq += 1
        doc = summary(snap, self)
        why = fenced_off(self.layout, self.epoch, self.seq, ended=snap.final is not None)
        if why:
            if not self.fenced:
                log.warning("status not written", job_id=self.layout.job_id, why=why)
            self.fenced = True
            return None
        return doc


def fenced_off(layout: JobLayout, epoch: int, seq: int, *, ended: bool) -> str:
    """Why a status of ``(epoch, seq)`` must not replace the one on disk ("" if it may).

    A deposed leader (a higher epoch exists), a status older than the one on disk
    (higher epoch, or the same epoch and a higher seq), and a "Running" status once
    ``final.json`` exists are refused. Checked just before the replace: a writer frozen
    between the check and the rename can still land one late document, which readers
    then correct from ``final.json`` (:func:`prsd.spool.statusschema.reconcile`).
    """
    spool = layout.spool
    if epoch and current_epoch(spool) > epoch:
        return f"deposed: epoch {current_epoch(spool)} leads, this leader's is {epoch}"
    if not ended and os.path.lexists(layout.final):
        return "the job has ended (final.json)"
    mark = status_mark(layout)
    if mark is None:
        return ""
    if mark > (epoch, seq):
        return f"status.json holds epoch {mark[0]} seq {mark[1]}, newer than {epoch}/{seq}"
    return ""


def final_counts(snap: JobSnapshot) -> dict[str, Any]:
    """The count fields of the status document, as ``final.json`` keeps them."""
    c = snap.counts
    return {
        "elapsed_s": round(snap.elapsed_s, 3),
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
    }


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
        "state": final.state if final else JobState.RUNNING,
        "reason": final.reason if final else "",
        "started_at": writer.started_wall.isoformat(timespec="seconds"),
        "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **final_counts(snap),
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
                **({"environment": n.environment.to_obj()} if n.environment else {}),
            }
            for n in snap.nodes
        ],
        "notes": writer.notes,
    }
