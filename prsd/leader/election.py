"""Becoming and staying the leader of a spool (see :mod:`prsd.spool.lease`).

A standby watches ``leader/heartbeat.json``; when it has not changed for the lease
time (or the holder's process is known dead on this very host), it creates the next
epoch file. The leader renews the heartbeat every ``beat_s`` and checks, before every
round of writes, that no other epoch is the highest and that its epoch's file still
names it; when either fails it is deposed and stops. A process whose clock runs
visibly faster than the spool's (:mod:`prsd.spool.clockrate`) takes nothing over by
elapsed time, and says so.

Epochs are never reused, even when the epoch files are deleted by hand: every
process remembers the highest epoch it ever saw (in ``leader/``, in the heartbeat),
and a new epoch is one above the highest of those, so a paused leader that wakes
finds a higher epoch; and where nothing was remembered (a standby started after the
deletion re-creates epoch 1), the woken leader finds its epoch's file naming another
holder and steps down. Both are logged.
"""

from __future__ import annotations

import secrets
import socket
import time
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from prsd.errors import PrsdError
from prsd.leader.liveness import Observer
from prsd.logconfig import get_logger
from prsd.spool.clockrate import ClockRate
from prsd.spool.faults import storage_fault
from prsd.spool.lease import (
    LEADER_HEARTBEAT_S,
    LEADER_LEASE_S,
    ONE_JOB_PREFIX,
    LeaderBeat,
    current_epoch,
    holder_is_dead_here,
    new_holder,
    prune_epochs,
    read_beat,
    read_holder,
    try_take,
    write_beat,
)
from prsd.spool.opwatch import OpWatch

if TYPE_CHECKING:
    from prsd.spool.layout import SpoolLayout

log = get_logger("prsd.leader")
STALL_LEASES = 5  # a job step that has not returned for this many leases: no renewal


class Deposed(PrsdError):
    """A higher epoch exists: another leader took over; this one must stop writing."""


class Election:
    """This process's part in choosing the leader of one spool."""

    def __init__(
        self,
        spool: SpoolLayout,
        *,
        lease_s: float = LEADER_LEASE_S,
        beat_s: float = LEADER_HEARTBEAT_S,
        one_job: bool = False,
        check_clock: bool = True,
    ) -> None:
        """``check_clock=False``: trust the ``now`` given to :meth:`try_once` (a caller
        that drives time itself, not the machine's clock)."""
        self.spool = spool
        self.lease_s = lease_s
        self.beat_s = beat_s
        self.id = (ONE_JOB_PREFIX if one_job else "") + secrets.token_hex(8)
        self.epoch = 0
        self.highest_seen = 0  # the highest epoch this process ever saw (never reused)
        self._warned_of = 0  # the highest_seen whose removal was logged
        self.clock = ClockRate(spool.leader / f".clock-{socket.gethostname()}")
        self._said_fast = False
        self.check_clock = check_clock
        self.ops = OpWatch()  # the leader's job steps in flight
        self.stall_bound_s = STALL_LEASES * lease_s
        self._seq = 0
        self._observer: Observer | None = None
        self.fault = ""  # the storage fault the leader is waiting out, shown in its beat

    def try_once(self, now: float, *, patient: bool = True) -> int:
        """One look at the lease; the epoch won, or 0.

        ``patient=False`` takes over only when no leader ever ran or the holder is
        known dead on this host (``prsd run``: never wait a lease for a local spool).
        """
        if self._observer is None:
            self._observer = Observer(self.lease_s, now)
        cur = current_epoch(self.spool)
        beat = read_beat(self.spool)
        nxt = self._next_epoch(cur, beat)
        if cur == 0 and nxt == 1:
            return self._take(1)
        holder = read_holder(self.spool, cur) if cur else None
        if holder is not None and holder.holder == self.id:
            return self._won(cur)
        key = None if beat is None else (beat.epoch, beat.holder, beat.seq)
        self._observer.observe("leader", key, now)
        if holder is not None and holder_is_dead_here(holder):
            return self._take(nxt)
        if patient and self._observer.expired("leader", now) and self._clock_sane(now):
            return self._take(nxt)
        return 0

    def _clock_sane(self, now: float) -> bool:
        """May this process's elapsed times decide? Not while its clock's pace against
        the spool's is unknown, nor when it runs fast (logged once)."""
        if not self.check_clock:
            return True
        self.clock.sample(now)
        if self.clock.fast() and not self._said_fast:
            log.error(
                "this machine's clock runs faster than the spool's: not taking the lease "
                "over, and no node is presumed lost while it does",
                ratio=round(self.clock.ratio() or 0.0, 1),
            )
        self._said_fast = self.clock.fast()
        return self.clock.trusted()

    def _next_epoch(self, cur: int, beat: LeaderBeat | None) -> int:
        """One above the highest epoch ever seen: in ``leader/`` now, in the heartbeat,
        or earlier by this process (epoch files deleted by hand are not reused)."""
        seen = max(cur, beat.epoch if beat is not None else 0)
        self.highest_seen = max(self.highest_seen, seen)
        if cur < self.highest_seen and self._warned_of != self.highest_seen:
            self._warned_of = self.highest_seen
            log.warning(
                "leader epoch files were removed; epochs are not reused",
                highest_seen=self.highest_seen,
                found=cur,
            )
        return self.highest_seen + 1

    async def acquire(self) -> int:
        """Wait until this process leads; returns its epoch."""
        while True:
            now = anyio.current_time()
            epoch = await anyio.to_thread.run_sync(self.try_once, now)
            if epoch:
                return epoch
            await anyio.sleep(self.beat_s / 2)

    def _take(self, epoch: int) -> int:
        if try_take(self.spool, new_holder(epoch, self.id)):
            return self._won(epoch)
        return 0

    def _won(self, epoch: int) -> int:
        self.epoch = epoch
        self.highest_seen = max(self.highest_seen, epoch)
        self._seq = 0
        log.info("leading", epoch=epoch, holder=self.id)
        self.beat()
        prune_epochs(self.spool, epoch)
        return epoch

    def check(self) -> None:
        """Raise :class:`Deposed` if another epoch than ours is the highest, or our
        epoch's file names another holder (epoch files deleted and re-created while
        this leader was paused). Call before writes."""
        cur = current_epoch(self.spool)
        if cur != self.epoch:
            raise Deposed(f"leader epoch {self.epoch} deposed by epoch {cur}")
        holder = read_holder(self.spool, cur)
        if holder is not None and holder.holder != self.id:
            raise Deposed(
                f"leader epoch {cur} is held by another leader (pid {holder.pid} on host "
                f"{holder.host}): the epoch files were removed while this one was paused"
            )

    def beat(self) -> None:
        """Renew the lease (after checking we still hold it)."""
        self.check()
        self.clock.sample(time.monotonic())
        self._seq += 1
        write_beat(self.spool, LeaderBeat(self.epoch, self.id, self._seq, _now_iso(), self.fault))

    def stalled(self) -> str:
        """Why this leader makes no progress ("" while its steps return in time)."""
        return self.ops.stuck(self.stall_bound_s)

    async def hold(self) -> None:
        """Renew the lease every ``beat_s`` until cancelled; raises Deposed.

        A beat the spool cannot take (disk full, read-only) is logged once and tried
        again at the next beat: if the fault lasts longer than the lease, a standby
        takes over, and this leader finds itself deposed when the spool heals. No beat
        is written while a job step has not returned for ``stall_bound_s`` (a file
        operation that hangs): the lease then lapses the same way, said once.
        """
        failing = ""
        said_stall = False
        while True:
            await anyio.sleep(self.beat_s)
            stalled = self.stalled()
            if stalled and not said_stall:
                log.error("not renewing the leader lease: no progress", why=stalled)
            said_stall = bool(stalled)
            if stalled:
                continue
            try:
                await anyio.to_thread.run_sync(self.beat)
                failing = ""
            except OSError as exc:
                condition = storage_fault(exc)
                if condition is None:
                    raise
                if condition != failing:
                    log.error("cannot renew the leader lease", condition=condition)
                failing = condition


def _now_iso() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")
