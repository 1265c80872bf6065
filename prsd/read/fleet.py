"""Is anything serving this spool? The leader's and the agents' heartbeats, for people.

A job can sit ``Queued`` forever in a spool no leader serves, or never start where no
agent runs; ``prsctl`` says so instead of letting the user wait. Ages compare the
heartbeat's wall-clock time with this machine's clock: good enough for a person (the
daemons themselves never compare clocks). A leader that ran on this host and has
exited (a ``prsd run`` that ended) is gone at once, without waiting for its lease. :func:`fleet_warning` is the pure decision.

:func:`daemons_serve` tells ``prsd run`` whether to hand its job to daemons: a live
leader and a live, not draining agent, neither of them another ``prsd run`` (whose ids
start with ``ONE_JOB_PREFIX``: it serves its own job only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.read.nodes import age_s, node_rows
from prsd.spool.heartbeat import read_heartbeats
from prsd.spool.lease import (
    LEADER_LEASE_S,
    ONE_JOB_PREFIX,
    current_epoch,
    holder_is_dead_here,
    read_beat,
    read_holder,
)

if TYPE_CHECKING:
    from datetime import datetime

    from prsd.spool.layout import SpoolLayout

LEADER_STALE_AFTER_S = 3 * LEADER_LEASE_S


@dataclass(frozen=True)
class Fleet:
    """The newest sign of life of a leader and of the agents (ages in seconds, None: never)."""

    leader_age_s: float | None
    leader_at: str
    agents_alive: int
    agent_age_s: float | None  # the freshest agent heartbeat
    agent_at: str
    agents_draining: int = 0
    leader_exited: str = ""  # "pid N": the last leader ran on this host and has exited


def read_fleet(spool: SpoolLayout, now: datetime) -> Fleet:
    """The newest signs of life of the spool's leader and agents, aged against ``now``."""
    beat = read_beat(spool)
    leader_at = beat.updated_at if beat is not None else ""
    leader_age = age_s(leader_at, now) if beat is not None else None
    rows = node_rows(spool, now)
    serving = [r for r in rows if not r["stale"] and not r["drained"]]  # drained: gone
    alive = sum(1 for r in serving if not r["draining"])
    draining = sum(1 for r in serving if r["draining"])
    ages = [(r["heartbeat_age_s"], r["heartbeat_at"]) for r in rows]
    known = [a for a in ages if a[0] is not None]
    agent_age, agent_at = min(known) if known else (None, "")
    holder = read_holder(spool, current_epoch(spool)) if beat is not None else None
    exited = f"pid {holder.pid}" if holder is not None and holder_is_dead_here(holder) else ""
    return Fleet(leader_age, leader_at, alive, agent_age, agent_at, draining, exited)


def _since(at: str, age: float) -> str:
    return f"since {at} ({age:.0f} s ago)"


def fleet_warning(fleet: Fleet, what: str = "jobs") -> str | None:
    """One line when no leader or no agent serves the spool, else None.

    ``what`` names the waiting work in the message ("queued", "job <id>").
    """
    if fleet.leader_age_s is None:
        return f"{what}: no leader has ever run on this spool; start `prsd leader` (or `prsd run`)"
    if fleet.leader_age_s > LEADER_STALE_AFTER_S:
        return f"{what}: no leader alive {_since(fleet.leader_at, fleet.leader_age_s)}"
    if fleet.leader_exited:  # a `prsd run` that ended: no need to wait for its lease
        return (
            f"{what}: no leader alive (the last one, {fleet.leader_exited} on this host, "
            "has exited); start `prsd leader`"
        )
    if fleet.agents_alive:
        return None
    if fleet.agents_draining:
        return f"{what}: every agent alive is draining (stopping); start `prsd agent`"
    if fleet.agent_age_s is None:
        return f"{what}: no agent has ever served this spool; start `prsd agent`"
    return f"{what}: no agent alive {_since(fleet.agent_at, fleet.agent_age_s)}"


def daemons_serve(spool: SpoolLayout, now: datetime) -> bool:
    """Do daemons serve this spool: a leader that leads every job, alive, and an agent
    that serves every job, alive and not draining?"""
    beat = read_beat(spool)
    if beat is None or beat.holder.startswith(ONE_JOB_PREFIX):
        return False
    age = age_s(beat.updated_at, now)
    if age is None or age > LEADER_STALE_AFTER_S:
        return False
    holder = read_holder(spool, current_epoch(spool))
    if holder is not None and holder_is_dead_here(holder):
        return False
    rows = {r["node_id"]: r for r in node_rows(spool, now)}
    for b in read_heartbeats(spool).values():
        row = rows.get(b.node_id)
        if b.boot.startswith(ONE_JOB_PREFIX) or row is None:
            continue
        if not row["stale"] and not row["drained"] and not row["draining"]:
            return True
    return False
