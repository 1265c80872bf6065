"""The job summary ``state/status.json`` that ``prsctl status`` reads.

It is small, replaced atomically, and costs the same for ten mini-batches or ten
million, so a status query never scans the spool. Schema version 1 is documented
in docs/status.md.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from prsd.storage.atomic import write_atomic

if TYPE_CHECKING:
    from prsd.jobspec import JobSpec
    from prsd.leader.job import JobDriver
    from prsd.storage.layout import JobLayout

SCHEMA_VERSION = 1
STATUS_INTERVAL_S = 0.5


class StatusWriter:
    """Rewrites status.json at most every STATUS_INTERVAL_S seconds."""

    def __init__(self, layout: JobLayout, spec: JobSpec) -> None:
        self.layout = layout
        self.spec = spec
        self.started_wall = datetime.now(UTC)
        self._last = -1e9

    def maybe_write(self, driver: JobDriver, now: float) -> None:
        if now - self._last >= STATUS_INTERVAL_S:
            self.write(driver, now)

    def write(self, driver: JobDriver, now: float) -> None:
        self._last = now
        data = json.dumps(summary(driver, self, now), indent=1).encode()
        write_atomic(self.layout.status, data, durable=False)


def summary(driver: JobDriver, writer: StatusWriter, now: float) -> dict[str, Any]:
    """The status document (schema 1)."""
    c = driver.ledger.counts()
    elapsed = now - driver.started
    done = c.finished_mbs
    rate = done / elapsed if elapsed > 0 else 0.0
    eta = None
    if c.total_mbs is not None and rate > 0:
        eta = (c.total_mbs - done) / rate
    final = driver.final
    first = driver.errors.first
    return {
        "schema": SCHEMA_VERSION,
        "job_id": driver.job_id,
        "name": driver.spec.name,
        "state": final.state if final else "Running",
        "reason": final.reason if final else "",
        "started_at": writer.started_wall.isoformat(timespec="seconds"),
        "updated_at": (writer.started_wall + timedelta(seconds=elapsed)).isoformat(
            timespec="seconds"
        ),
        "elapsed_s": round(elapsed, 3),
        "split_done": driver.split_done,
        "planned_mbs": len(driver.ledger),
        "total_mbs": c.total_mbs,
        "succeeded_mbs": c.succeeded_mbs,
        "failed_mbs": c.failed_mbs,
        "partial_mbs": c.partial_mbs,
        "items": c.items,
        "succeeded_items": c.succeeded_items,
        "failed_items": c.failed_items,
        "attempts": driver.ledger.attempts,
        "requeues": driver.ledger.requeues,
        "outstanding_tasks": len(driver.table),
        "rate_mbs_per_s": round(rate, 3),
        "eta_s": round(eta, 1) if eta is not None else None,
        "output": final.output if final else (driver.spec.append_row_to or ""),
        "first_error": driver.errors.root_cause() if first else "",
        "errors": [
            {"message": g.message, "count": g.count, "first": g.first.where()}
            for g in list(driver.errors.groups.values())[:10]
        ],
    }
