"""This node's heartbeat: what the agent writes to ``nodes/<id>.json`` every interval.

:class:`NodeBeat` owns what makes a heartbeat this agent's own: its growing
sequence number, its boot token (``ONE_JOB_PREFIX`` for ``prsd run``), when it
started, another agent seen writing the same node id (:mod:`prsd.agent.nodeid`), the
storage fault it is in (:mod:`prsd.agent.health`), and the liveness rule: while a
commit has not returned for ``STALL_BEATS`` beats no heartbeat is written, so peers
take the node's claims over (liveness is progress). The agent adds what it serves.

Errors: :meth:`NodeBeat.run` never raises for storage: a heartbeat that cannot be
written is noted as a storage fault (or logged) and tried again at the next beat.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from prsd.agent.nodeid import conflict_with, held_conflict
from prsd.logconfig import get_logger
from prsd.spool.heartbeat import read_heartbeat, write_heartbeat
from prsd.spool.heartbeatrecord import Heartbeat
from prsd.spool.lease import ONE_JOB_PREFIX
from prsd.spool.opwatch import OpWatch

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.agent.health import SpoolHealth
    from prsd.spool.layout import SpoolLayout

STALL_BEATS = 10  # a commit that has not returned for this many beats: no heartbeat
log = get_logger("prsd.agent")


@dataclass(frozen=True)
class Serving:
    """What the agent serves, for its heartbeat."""

    slots: int
    gpus: int
    draining: bool
    drained: bool
    jobs: dict[str, dict[str, Any]]  # job id -> its workers


class NodeBeat:
    """One agent's heartbeats, every ``interval_s``."""

    def __init__(
        self,
        spool: SpoolLayout,
        node_id: str,
        interval_s: float,
        health: SpoolHealth,
        *,
        one_job: bool,
    ) -> None:
        self.spool = spool
        self.node_id = node_id
        self.interval_s = interval_s
        self.health = health
        self.seq = 0
        self.boot = (ONE_JOB_PREFIX if one_job else "") + secrets.token_hex(8)
        self.started_at = datetime.now(UTC).isoformat(timespec="seconds")
        self.conflict = ""  # another agent writes this node id too (prsd.agent.nodeid)
        self._conflict_at = 0.0
        self.ops = OpWatch()  # commits in flight (liveness is progress)
        self._said_stall = False

    def stamp(self, serving: Serving) -> Heartbeat:
        """This node's heartbeat now (the sequence number grows by one per call)."""
        self.seq += 1
        return Heartbeat(
            node_id=self.node_id,
            seq=self.seq,
            boot=self.boot,
            pid=os.getpid(),
            host=socket.gethostname(),
            started_at=self.started_at,
            updated_at=datetime.now(UTC).isoformat(timespec="seconds"),
            slots=serving.slots,
            gpus=serving.gpus,
            draining=serving.draining,
            drained=serving.drained,
            jobs=serving.jobs,
            heartbeat_interval_s=self.interval_s,
            conflict=self.conflict,
            fault=self.health.condition,
        )

    def stalled(self) -> str:
        """Why this agent makes no progress: a commit that has not returned for
        STALL_BEATS heartbeats ("" while none); logged once per stall."""
        why = self.ops.stuck(STALL_BEATS * self.interval_s)
        if why and not self._said_stall:
            log.error("no heartbeat while a commit hangs", node_id=self.node_id, why=why)
        self._said_stall = bool(why)
        return why

    async def run(self, serving: Callable[[], Serving]) -> None:
        """Write a heartbeat every interval, until cancelled."""
        while True:
            if self.seq:  # another agent writing this node id shows between our beats
                on_disk = await anyio.to_thread.run_sync(read_heartbeat, self.spool, self.node_id)
                found = conflict_with(self.boot, on_disk)
                self.conflict, self._conflict_at = held_conflict(
                    self.conflict, self._conflict_at, found, anyio.current_time()
                )
            if self.stalled():  # liveness is progress: peers take the claims over
                await anyio.sleep(self.interval_s)
                continue
            beat = self.stamp(serving())
            now = anyio.current_time()
            try:
                await anyio.to_thread.run_sync(write_heartbeat, self.spool, beat)
            except OSError as exc:
                if not self.health.note(exc, now, None):
                    log.warning("cannot write heartbeat", node_id=self.node_id, error=str(exc))
            if self.health.due(now):
                await anyio.to_thread.run_sync(self.health.check_healed, now)
            await anyio.sleep(self.interval_s)
