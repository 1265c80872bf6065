"""What the leader does with each job once it has looked at the nodes' heartbeats.

Two things per job, from the same look: the worker slots now serving it (the size of
the tail's tasks, :func:`prsd.leader.plan.packing.fleet_slots`), and the claims of nodes
presumed dead (:class:`~prsd.leader.liveness.Observer`), moved back to ``pending/``
as their next attempt. Errors from a job's folder propagate to the caller's job
boundary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.leader.plan.packing import fleet_slots
from prsd.logconfig import get_logger

if TYPE_CHECKING:
    from prsd.leader.liveness import Observer
    from prsd.leader.run.job import JobDriver
    from prsd.spool.heartbeatrecord import Heartbeat

log = get_logger("prsd.leader")


def live_slots(nodes: Observer, beats: dict[str, Heartbeat], now: float) -> list[int]:
    """The worker slots of each node alive and not draining (one look for every job)."""
    return [b.slots for n, b in beats.items() if not nodes.expired(n, now) and not b.draining]


def size_job(driver: JobDriver, live: list[int]) -> None:
    """The worker slots serving ``driver``'s job, from ``live`` (:func:`live_slots`)."""
    spec = driver.spec
    driver.fleet_slots = fleet_slots(live, spec.max_concurrency_per_instance, spec.instance_count)


def serve_nodes(
    driver: JobDriver,
    nodes: Observer,
    live: list[int],
    lost: dict[str, float],
    now: float,
    *,
    presume: bool = True,
) -> None:
    """Update ``driver``'s slot count from ``live`` (:func:`live_slots`); requeue the
    claims of nodes presumed dead (noted in ``lost`` with when they were first found
    lost), unless ``presume`` is False (this leader's clock cannot judge silence)."""
    size_job(driver, live)
    if not presume:
        return
    for node_id in claimants(driver):
        if not nodes.expired(node_id, now):
            continue
        silent = nodes.silent_for(node_id, now)
        why = f"node {node_id} lost (heartbeat unchanged for {silent:.0f} s)"
        moved = driver.requeue_lost_node(node_id, why)
        if moved:
            log.warning(
                "requeued a lost node's claims",
                job_id=driver.job_id,
                node_id=node_id,
                tasks=moved,
            )
        lost.setdefault(node_id, now)


def claimants(driver: JobDriver) -> list[str]:
    """Nodes with a ``claimed/<node>/`` folder in the job."""
    return driver.folder.claimant_nodes()
