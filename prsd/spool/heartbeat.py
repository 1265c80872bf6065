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
import os
from typing import TYPE_CHECKING

from prsd.spool.atomic import write_atomic
from prsd.spool.faults import overwrite_in_place, padded
from prsd.spool.heartbeatrecord import Heartbeat
from prsd.spool.layout import SpoolLayout, valid_node_id

__all__ = [
    "read_heartbeat",
    "read_heartbeats",
    "write_heartbeat",
    "write_padded",
]

if TYPE_CHECKING:
    from pathlib import Path


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
