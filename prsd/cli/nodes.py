"""``prsctl nodes``: the agents' heartbeats as rows (slots, GPUs, heartbeat age, work).

The heartbeat age compares the agent's wall clock with this machine's: good enough
for a person (the daemons themselves never compare clocks, see
``prsd.storage.heartbeat``). A heartbeat older than ``STALE_AFTER_S`` is marked stale.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prsd.storage.heartbeat import HEARTBEAT_INTERVAL_S, read_heartbeats

if TYPE_CHECKING:
    from prsd.storage.heartbeat import Heartbeat
    from prsd.storage.layout import SpoolLayout

STALE_AFTER_S = 10 * HEARTBEAT_INTERVAL_S


def age_s(updated_at: str, now: datetime) -> float | None:
    """Seconds between an ISO time and ``now``; None when the time cannot be read."""
    try:
        then = datetime.fromisoformat(updated_at)
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max((now - then).total_seconds(), 0.0)


def node_row(beat: Heartbeat, now: datetime, job_id: str | None = None) -> dict[str, Any]:
    """One node as a JSON-able row; with ``job_id``, only that job's workers count."""
    age = age_s(beat.updated_at, now)
    if job_id:
        jobs = {job_id: beat.jobs[job_id]} if job_id in beat.jobs else {}
    else:
        jobs = dict(beat.jobs)
    running = sorted(
        t if job_id else f"{j}:{t}" for j, s in jobs.items() for t in s.get("running", [])
    )
    return {
        "node_id": beat.node_id,
        "host": beat.host,
        "pid": beat.pid,
        "slots": beat.slots,
        "gpus": beat.gpus,
        "draining": beat.draining,
        "heartbeat_at": beat.updated_at,
        "heartbeat_age_s": None if age is None else round(age, 1),
        "stale": age is None or age > STALE_AFTER_S,
        "conflict": beat.conflict,  # another agent uses this node id: "pid P on host H"
        "workers": sum(int(s.get("workers", 0)) for s in jobs.values()),
        "busy": sum(int(s.get("busy", 0)) for s in jobs.values()),
        "running": running,
        "jobs": sorted(jobs),
    }


def node_rows(spool: SpoolLayout, now: datetime, job_id: str | None = None) -> list[dict[str, Any]]:
    """Every node with a heartbeat (for a job: the nodes serving it now)."""
    rows = [node_row(b, now, job_id) for b in read_heartbeats(spool).values()]
    if job_id:
        rows = [r for r in rows if r["jobs"]]
    return rows
