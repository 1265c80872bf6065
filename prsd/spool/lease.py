"""The leader lease: ``leader/epoch-<n>`` files and ``leader/heartbeat.json``.

Invariant: epoch ``n`` is created exactly once, with ``O_CREAT|O_EXCL``, and its content
names its holder; the highest epoch in ``leader/`` is the current leader. The holder
proves it is alive by replacing ``leader/heartbeat.json`` (its epoch and a growing
``seq``) every second or so; a standby that sees the heartbeat unchanged for the lease
time *by its own monotonic clock* creates epoch ``n+1``. A leader that sees a higher
epoch than its own is deposed and stops writing; agents ignore task files named with
an older epoch than the current one, so a paused old leader's late writes are never run.
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.spool.atomic import create_exclusive
from prsd.spool.heartbeat import write_padded

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import SpoolLayout

EPOCH_RE = re.compile(r"^epoch-(\d{8})$")
LEADER_HEARTBEAT_S = 1.0
LEADER_LEASE_S = 6.0
NODE_LEASE_S = 15.0  # an agent's heartbeat unchanged this long: the node is presumed dead
ONE_JOB_PREFIX = "run-"
"""Starts the holder id of a leader, and the boot id of an agent, that serve one job only
(``prsd run``): a second ``prsd run`` hands its job only to daemons that serve them all."""


@dataclass(frozen=True)
class Holder:
    """Who created an epoch file (and so leads in that epoch)."""

    epoch: int
    holder: str  # a random id per leader process
    host: str
    pid: int
    pid_started: float  # the process's start time, so a reused pid is not mistaken for it
    taken_at: str  # ISO 8601 UTC, for people

    def encode(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes) -> Holder | None:
        try:
            obj = json.loads(data)
            return cls(**{k: obj[k] for k in cls.__dataclass_fields__})
        except (ValueError, TypeError, KeyError):
            return None


@dataclass(frozen=True)
class LeaderBeat:
    """The holder's sign of life: ``seq`` grows while it leads."""

    epoch: int
    holder: str
    seq: int
    updated_at: str  # for people only
    fault: str = ""  # a storage fault the leader is waiting out ("" when healthy)

    def encode(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes) -> LeaderBeat | None:
        try:
            obj = json.loads(data)
            return cls(**{k: obj[k] for k in cls.__dataclass_fields__ if k in obj})
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def epoch_path(spool: SpoolLayout, epoch: int) -> Path:
    return spool.leader / f"epoch-{epoch:08d}"


def current_epoch(spool: SpoolLayout) -> int:
    """The highest epoch created so far (0 when no leader ever ran on this spool)."""
    try:
        names = os.listdir(spool.leader)
    except FileNotFoundError:
        return 0
    best = 0
    for name in names:
        m = EPOCH_RE.match(name)
        if m is not None:
            best = max(best, int(m.group(1)))
    return best


def prune_epochs(spool: SpoolLayout, epoch: int, keep: int = 2) -> int:
    """Remove epoch files older than ``epoch - keep`` (the new holder, after winning).

    Only the highest epoch decides anything, and every process lists ``leader/`` to
    find it (agents on each claim listing): without pruning, every ``prsd run`` on a
    spool would add a file there for good. Returns how many were removed.
    """
    removed = 0
    try:
        names = os.listdir(spool.leader)
    except FileNotFoundError:
        return 0
    for name in names:
        m = EPOCH_RE.match(name)
        if m is not None and int(m.group(1)) < epoch - keep:
            try:
                os.unlink(spool.leader / name)
                removed += 1
            except FileNotFoundError:
                continue
    return removed


def read_holder(spool: SpoolLayout, epoch: int) -> Holder | None:
    try:
        with open(epoch_path(spool, epoch), "rb") as f:
            return Holder.decode(f.read())
    except OSError:
        return None


def try_take(spool: SpoolLayout, holder: Holder) -> bool:
    """Create ``holder.epoch``'s file; True if this process now leads in that epoch."""
    data = holder.encode()
    if create_exclusive(epoch_path(spool, holder.epoch), data):
        return True
    # EEXIST after a retried create can hide our own success: the content decides.
    found = read_holder(spool, holder.epoch)
    return found is not None and found.holder == holder.holder


def write_beat(spool: SpoolLayout, beat: LeaderBeat) -> None:
    """Renew the lease's heartbeat (in place when the disk is full: the lease holds)."""
    write_padded(spool.leader / "heartbeat.json", beat.encode())


def read_beat(spool: SpoolLayout) -> LeaderBeat | None:
    try:
        with open(spool.leader / "heartbeat.json", "rb") as f:
            return LeaderBeat.decode(f.read())
    except OSError:
        return None


def new_holder(epoch: int, holder_id: str) -> Holder:
    import psutil

    me = psutil.Process()
    return Holder(
        epoch=epoch,
        holder=holder_id,
        host=socket.gethostname(),
        pid=os.getpid(),
        pid_started=me.create_time(),
        taken_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def holder_is_dead_here(holder: Holder) -> bool:
    """True only when the holder ran on this host and its process is gone.

    A leader on another host is judged by its heartbeat alone (no shared clock, no
    shared process table).
    """
    import psutil

    if holder.host != socket.gethostname():
        return False
    try:
        proc = psutil.Process(holder.pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return True
        return abs(proc.create_time() - holder.pid_started) > 0.01
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False
