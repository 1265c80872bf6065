"""One agent per node id: a second agent refuses an id that another one holds.

Two agents with one ``--node-id`` would adopt and hand back each other's claims and
write each other's result files. At start, :func:`hold_node_id` takes the id in the
spool (:mod:`prsd.spool.nodehold`: an exclusive create, so of two agents started at
the same instant exactly one gets it); the other refuses with :class:`NodeIdInUse`
(exit 4, which the unit does not restart). A recorded holder is judged stale
(:func:`holder_is_stale`) when it ran in this kernel boot and its pid is no running
``prsd`` agent, or when it ran elsewhere (another boot id: another machine, or this one
before a reboot) and its heartbeat does not change while watched (below). While it
runs the agent checks at every beat that nobody superseded its hold
(:func:`keep_hold`); one that lost it stops.

:func:`ensure_node_id_free` reads ``nodes/<id>.json`` (an agent of an older version
holds no record):

- written by this host: the writer is alive if its pid is a running ``prsd agent``
  or ``prsd run`` (a pid reused by another program, or a dead one, frees the id at
  once);
- written by another host: alive if the heartbeat *changes* within two of its own
  intervals plus a second, watched on this machine's clock (never by comparing the
  other machine's time with ours). A crashed agent's file never changes, so a
  restart after a crash waits that long and starts.

A live writer makes the new agent refuse with one line naming it (host, pid, last
beat). If both still run (started at the same instant), each agent notices the
other's writes before its own next beat (:func:`conflict_with`) and says so in its
heartbeat, which ``prsctl nodes`` shows, for ``CONFLICT_HOLD_S`` after the other's last
write was seen (:func:`held_conflict`), so that a reader does not miss it between beats.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from prsd.logconfig import get_logger
from prsd.spool.heartbeat import read_heartbeat
from prsd.spool.nodehold import NodeHolder, NodeIdInUse, superseded_by, try_hold

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.spool.heartbeatrecord import Heartbeat
    from prsd.spool.layout import SpoolLayout

log = get_logger("prsd.agent")
BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")

MAX_WATCH_S = 30.0
_POLL_S = 0.1


def kernel_boot_id() -> str:
    """This machine's boot id: changes at every boot, differs between machines."""
    try:
        return BOOT_ID_FILE.read_text(encoding="ascii").strip()
    except OSError:
        return ""


def held_line(holder: NodeHolder) -> str:
    """The refusal of a held id, naming its holder."""
    return (
        f"node id {holder.node_id!r} is held by agent pid {holder.pid} on host {holder.host} "
        f"(boot {holder.boot_id[:8]}): stop that agent or give this one another --node-id "
        "(exit 4: not restarted)"
    )


def holder_is_stale(spool: SpoolLayout, holder: NodeHolder, boot_id: str) -> bool:
    """Is the recorded holder of a node id gone? (See the module header.)"""
    if boot_id and holder.boot_id == boot_id:
        return not _prsd_running(holder.pid)
    beat = read_heartbeat(spool, holder.node_id)
    window = watch_window_s(beat) if beat is not None else MAX_WATCH_S
    deadline = time.monotonic() + window
    while time.monotonic() < deadline:
        time.sleep(_POLL_S)
        now = read_heartbeat(spool, holder.node_id)
        if (beat is None and now is not None) or (beat is not None and changed(beat, now)):
            return False
    return True


def hold_node_id(spool: SpoolLayout, node_id: str, host: str, token: str) -> NodeHolder:
    """Take ``node_id`` for this agent; the generation taken.

    Raises:
        NodeIdInUse: a live agent holds it.
        OSError: the spool cannot be read or written.
    """
    boot_id = kernel_boot_id()
    me = NodeHolder(node_id, host, boot_id, os.getpid(), token)
    mine, other = try_hold(spool, me, lambda h: holder_is_stale(spool, h, boot_id))
    if mine is None or other is not None:
        raise NodeIdInUse(held_line(other or me))
    return mine


async def keep_hold(
    spool: SpoolLayout, mine: NodeHolder, on_lost: Callable[[NodeHolder], None], every_s: float
) -> None:
    """Check every ``every_s`` that ``mine`` is still the highest hold; call ``on_lost``
    (once) with the new holder when it is not. Storage errors only postpone the check."""
    while True:
        await anyio.sleep(every_s)
        try:
            other = await anyio.to_thread.run_sync(superseded_by, spool, mine)
        except OSError:
            continue
        if other is not None:
            log.error(
                "node id taken over: stopping",
                node_id=mine.node_id,
                by=f"pid {other.pid} on host {other.host}",
            )
            on_lost(other)
            return


def in_use_line(node_id: str, beat: Heartbeat) -> str:
    """The refusal, naming the other agent."""
    return (
        f"node id {node_id!r} is in use by agent pid {beat.pid} on host {beat.host} "
        f"(last heartbeat {beat.updated_at}): stop that agent or give this one another --node-id"
    )


def watch_window_s(beat: Heartbeat) -> float:
    """How long a heartbeat from another host is watched for a change."""
    interval = beat.heartbeat_interval_s if beat.heartbeat_interval_s > 0 else 2.0
    return min(2.0 * interval + 1.0, MAX_WATCH_S)


def changed(before: Heartbeat, after: Heartbeat | None) -> bool:
    """True when the file now holds a later beat (or another agent's)."""
    return after is not None and (after.boot != before.boot or after.seq != before.seq)


def conflict_with(own_boot: str, on_disk: Heartbeat | None) -> str:
    """``"pid P on host H"`` when the file holds another agent's beat, else ``""``.

    Read just before this agent writes its own beat: the file should be its last one.
    """
    if on_disk is None or on_disk.boot == own_boot:
        return ""
    return f"pid {on_disk.pid} on host {on_disk.host}"


CONFLICT_HOLD_S = 120.0


def held_conflict(
    shown: str, seen_at: float, found: str, now: float, hold_s: float = CONFLICT_HOLD_S
) -> tuple[str, float]:
    """What the heartbeat says after this beat's check, and when it was last seen.

    ``found`` (from :func:`conflict_with`) is shown at once and its time kept; with
    nothing found, the last conflict stays shown until ``hold_s`` after it was seen.
    """
    if found:
        return found, now
    if shown and now - seen_at < hold_s:
        return shown, seen_at
    return "", seen_at


def ensure_node_id_free(spool: SpoolLayout, node_id: str, host: str) -> None:
    """Return when no other live agent uses ``node_id``.

    Raises:
        NodeIdInUse: another agent's heartbeat is live (see the module header).
    """
    beat = read_heartbeat(spool, node_id)
    if beat is None or beat.pid == os.getpid() and beat.host == host:
        return
    if beat.host == host:
        if _prsd_running(beat.pid):
            raise NodeIdInUse(in_use_line(node_id, beat))
        return
    deadline = time.monotonic() + watch_window_s(beat)
    while time.monotonic() < deadline:
        time.sleep(_POLL_S)
        now = read_heartbeat(spool, node_id)
        if changed(beat, now):
            assert now is not None
            raise NodeIdInUse(in_use_line(node_id, now))


def _prsd_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # alive, and nothing says it is not an agent
    words = cmdline.split(b"\0")
    return any(b"prsd" in w for w in words) and (b"agent" in words or b"run" in words)
