"""The agents' heartbeats as rows (slots, GPUs, heartbeat age, work), for ``prsctl nodes``.

Liveness comes from the leader's view (``leader/nodes.json``): the leader watches
each heartbeat *change* on its own monotonic clock, so a node whose clock is off is
neither stale nor fresh by mistake. Only when no leader view names the node (no
leader running) does the age fall back to comparing the agent's wall clock with this
machine's, marked as such, stale after ``STALE_AFTER_S``.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prsd.spool.badrecord import BadRecord
from prsd.spool.heartbeat import read_heartbeats
from prsd.spool.heartbeatrecord import HEARTBEAT_INTERVAL_S
from prsd.spool.lease import read_beat
from prsd.spool.nodesview import read_nodes_view

if TYPE_CHECKING:
    from prsd.spool.heartbeatrecord import Heartbeat
    from prsd.spool.layout import SpoolLayout

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


def leader_view(spool: SpoolLayout) -> dict[str, dict[str, Any]]:
    """The leader's liveness view of the nodes (``leader/nodes.json``), or empty."""
    try:
        view = read_nodes_view(spool)
    except (OSError, BadRecord):
        return {}
    return {node_id: asdict(seen) for node_id, seen in view.nodes.items()}


def node_row(
    beat: Heartbeat,
    now: datetime,
    job_id: str | None = None,
    seen: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One node as a JSON-able row; with ``job_id``, only that job's workers count.

    ``seen`` is the leader's observation of the node (silent_s, alive) when it has one.
    """
    age = age_s(beat.updated_at, now)
    stale = age is None or age > STALE_AFTER_S
    if seen is not None and isinstance(seen.get("silent_s"), (int, float)):
        age, stale = float(seen["silent_s"]), not seen.get("alive", True)
    stale = stale and not beat.drained
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
        "drained": beat.drained,  # it stopped cleanly: not stale, gone on purpose
        "heartbeat_at": beat.updated_at,
        "heartbeat_age_s": None if age is None else round(age, 1),
        "stale": stale,
        "fault": beat.fault,
        "conflict": beat.conflict,  # another agent uses this node id: "pid P on host H"
        "workers": sum(int(s.get("workers", 0)) for s in jobs.values()),
        "busy": sum(int(s.get("busy", 0)) for s in jobs.values()),
        "running": running,
        "jobs": sorted(jobs),
    }


def node_rows(spool: SpoolLayout, now: datetime, job_id: str | None = None) -> list[dict[str, Any]]:
    """Every node with a heartbeat (for a job: the nodes serving it now)."""
    view = leader_view(spool)
    beats = read_heartbeats(spool).values()
    rows = [node_row(b, now, job_id, view.get(b.node_id)) for b in beats]
    if job_id:
        rows = [r for r in rows if r["jobs"]]
    return rows


def storage_faults(spool: SpoolLayout) -> list[str]:
    """One line per daemon that reports a storage fault it is waiting out."""
    lines = [
        f"node {b.node_id}: {b.fault}; it waits and goes on by itself once the spool heals"
        for b in read_heartbeats(spool).values()
        if b.fault
    ]
    beat = read_beat(spool)
    if beat is not None and beat.fault:
        lines.append(
            f"leader (epoch {beat.epoch}): {beat.fault}; it waits and goes on by itself "
            "once the spool heals"
        )
    return lines
