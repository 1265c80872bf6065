"""Liveness by observation: a peer is alive while what it writes keeps changing.

Invariant: only the observer's own monotonic clock is used. A peer's key (for an
agent its boot id and heartbeat ``seq``; for the leader its epoch, id and ``seq``) is
noted with the local time it was first seen; a peer whose key has not changed for
the lease time is presumed dead. A new observer has no history, so it waits a full
lease from its own start before presuming anyone dead (FILESYSTEMS.md section 5.4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prsd.spool.nodesview import NodeSeen, NodesView

if TYPE_CHECKING:
    from collections.abc import Hashable

    from prsd.spool.heartbeatrecord import Heartbeat


@dataclass
class Observer:
    """When each peer's key last changed, on this process's monotonic clock."""

    lease_s: float
    started: float
    _seen: dict[str, tuple[Hashable, float]] = field(default_factory=dict)

    def observe(self, peer: str, key: Hashable, now: float) -> bool:
        """Note ``peer``'s current key; True if it changed (or is new)."""
        last = self._seen.get(peer)
        if last is not None and last[0] == key:
            return False
        self._seen[peer] = (key, now)
        return True

    def silent_for(self, peer: str, now: float) -> float:
        """Seconds since ``peer``'s key last changed (since our start if never seen)."""
        last = self._seen.get(peer)
        return now - (last[1] if last is not None else self.started)

    def expired(self, peer: str, now: float) -> bool:
        return self.silent_for(peer, now) >= self.lease_s


def nodes_view(
    observer: Observer, beats: dict[str, Heartbeat], epoch: int, lease_s: float, now: float
) -> NodesView:
    """The leader's view of the nodes (``leader/nodes.json``): alive or not, by observation."""
    return NodesView(
        epoch,
        lease_s,
        {
            node_id: NodeSeen(
                beat.host,
                beat.seq,
                round(observer.silent_for(node_id, now), 1),
                not observer.expired(node_id, now),
                beat.draining,
                beat.slots,
                beat.gpus,
            )
            for node_id, beat in beats.items()
        },
    )
