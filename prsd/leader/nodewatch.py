"""The leader's look at the nodes: who is alive, who is lost, what each job may use.

Every ``NODES_CHECK_S`` of the leader's clock, :meth:`NodeWatch.look` reads the nodes'
heartbeats, notes which changed (:class:`~prsd.leader.liveness.Observer`), says when a
node presumed dead is back, hands each job its live worker slots and requeues the
claims of nodes presumed dead (:mod:`prsd.leader.lostnodes`), and returns the
heartbeats it read, from which the leader writes ``leader/nodes.json`` for ``prsctl
nodes``. A new term of office starts with every node unseen (:meth:`NodeWatch.start`).

Errors: reading the heartbeats or a job's claims raises ``OSError`` to the caller (the
leader's round, which waits out a storage fault); nothing is written here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.leader.liveness import Observer
from prsd.leader.lostnodes import live_slots, serve_nodes, size_job
from prsd.logconfig import get_logger
from prsd.spool.heartbeat import read_heartbeats

if TYPE_CHECKING:
    from collections.abc import Iterable

    from prsd.leader.run.job import JobDriver
    from prsd.spool.heartbeatrecord import Heartbeat
    from prsd.spool.layout import SpoolLayout

log = get_logger("prsd.leader")

NODES_CHECK_S = 1.0


class NodeWatch:
    """The nodes as one leader sees them, during its term."""

    def __init__(self, spool: SpoolLayout, lease_s: float) -> None:
        self.spool = spool
        self.lease_s = lease_s
        self.nodes: Observer | None = None  # None until the leader takes office
        self.lost: dict[str, float] = {}  # node -> when it was presumed dead (our clock)
        self.live: list[int] | None = None  # the live nodes' slots at the last look
        self._last = -1e9

    def start(self, now: float) -> Observer:
        """A new term: every node unseen, none lost; the new observer."""
        self.nodes = Observer(self.lease_s, now)
        self.lost.clear()
        self.live = None
        return self.nodes

    def look(
        self, now: float, drivers: Iterable[JobDriver], *, presume: bool
    ) -> dict[str, Heartbeat] | None:
        """Presume nodes dead whose heartbeat stopped changing (unless ``presume`` is
        False: the clock runs fast) and requeue their claims; the heartbeats read, or
        None when it is not time to look (or the term has not started)."""
        if self.nodes is None or now - self._last < NODES_CHECK_S:
            return None
        self._last = now
        beats = read_heartbeats(self.spool)
        for node_id, beat in beats.items():
            if self.nodes.observe(node_id, (beat.boot, beat.seq), now) and node_id in self.lost:
                del self.lost[node_id]
                log.info("node is back", node_id=node_id)
        live = self.live = live_slots(self.nodes, beats, now)
        for driver in drivers:
            serve_nodes(driver, self.nodes, live, self.lost, now, presume=presume)
        return beats

    def size(self, driver: JobDriver) -> None:
        """Size a job just taken in (or resumed) to the slots of the last look: its
        first tasks are split for the fleet serving it, not for one node's
        ``max_concurrency_per_instance`` until the next look (up to ``NODES_CHECK_S``)."""
        if self.live is not None:
            size_job(driver, self.live)
