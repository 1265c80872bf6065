"""Agent heartbeats: ``nodes/<node>.json``, replaced every few seconds.

Invariant: liveness is judged by whether the content *changed* (``seq`` grows, or
``boot`` changes when the agent restarts), timed by the observer's own monotonic
clock. The wall-clock times inside are for people; no reader compares them with its
own clock (clocks of machines sharing a file server disagree, and NFS/SMB mtimes are
the server's). Readers tolerate a missing or half-replaced file (SMB replaces by
unlink and rename) by keeping their last observation.
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.storage.atomic import write_atomic
from prsd.storage.faults import overwrite_in_place, padded
from prsd.storage.layout import SpoolLayout, valid_node_id

if TYPE_CHECKING:
    from pathlib import Path

HEARTBEAT_INTERVAL_S = 2.0


@dataclass(frozen=True)
class Heartbeat:
    """What an agent says about itself (schema 1, documented in docs/prsctl.md)."""

    node_id: str
    seq: int
    boot: str  # a random id per agent start
    pid: int
    host: str
    started_at: str  # ISO 8601 UTC, for people
    updated_at: str  # ISO 8601 UTC, for people
    slots: int  # worker slots this node offers
    gpus: int
    draining: bool = False
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # job id -> its workers
    heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S  # how often this agent beats
    conflict: str = ""  # another agent writes this node id too: "pid P on host H"
    schema: int = 1
    fault: str = ""  # a storage fault the agent is waiting out ("" when healthy)
    drained: bool = False  # the agent's last beat: it drained and stopped cleanly

    def encode(self) -> bytes:
        return json.dumps(asdict(self), indent=1, sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes) -> Heartbeat | None:
        """Parse a heartbeat; None for a torn or foreign file."""
        try:
            obj = json.loads(data)
            known = set(cls.__dataclass_fields__)
            return cls(**{k: v for k, v in obj.items() if k in known})
        except (ValueError, TypeError):
            return None


def write_heartbeat(spool: SpoolLayout, beat: Heartbeat) -> None:
    """Replace this node's heartbeat (not fsynced: the next one follows in seconds).

    On a full disk the padded file is overwritten in place, so the node stays alive
    to the leader and its ``fault`` shows.

    Raises:
        OSError: it could be written neither way.
    """
    write_padded(spool.node_heartbeat(beat.node_id), beat.encode())


def write_padded(path: Path, data: bytes) -> None:
    """Replace a small, often rewritten file; on ENOSPC or EDQUOT, overwrite it in place.

    Raises:
        OSError: it could be written neither way.
    """
    data = padded(data)
    try:
        write_atomic(path, data, durable=False)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or not overwrite_in_place(path, data):
            raise


def read_heartbeats(spool: SpoolLayout) -> dict[str, Heartbeat]:
    """Every node's last heartbeat that could be read now."""
    beats: dict[str, Heartbeat] = {}
    try:
        names = os.listdir(spool.nodes)
    except FileNotFoundError:
        return beats
    for name in sorted(names):
        node_id = name.removesuffix(".json")
        if not name.endswith(".json") or not valid_node_id(node_id):
            continue
        try:
            data = (spool.nodes / name).read_bytes()
        except OSError:
            continue
        beat = Heartbeat.decode(data)
        if beat is not None and beat.node_id == node_id:
            beats[node_id] = beat
    return beats


def read_heartbeat(spool: SpoolLayout, node_id: str) -> Heartbeat | None:
    """One node's heartbeat now; None when it is missing, unreadable or not that node's."""
    try:
        beat = Heartbeat.decode(spool.node_heartbeat(node_id).read_bytes())
    except OSError:
        return None
    return beat if beat is not None and beat.node_id == node_id else None
