"""A doorbell rung when a task of a job the leader drives is committed or handed back: inotify.

The leader waits for agents to commit tasks (a rename into ``tasks/done/<shard>/``) and
to hand tasks back (a rename into ``tasks/returned/`` or ``tasks/void/``). On a
local-disk spool it used a recursive ``watchfiles`` watch of all of ``jobs/``: every
result a worker appends to, every log line and status write anywhere below ``jobs/``
woke its thread, which took the interpreter lock every 50 ms and handed each batch of
changes to the event loop, only for a filter to drop all but the commits. At 100
mini-batches a second that was half of the leader's CPU. Here the kernel reports only
renames into the folders that matter, of the jobs this leader drives, and a new shard
folder in ``done/`` (watched from then on).

Promise: hints only, as every bell: the listing is the truth, and the leader steps on
its timer regardless. Local disks only (on a network file system inotify sees only
this machine's changes). The watched jobs follow the leader's: :meth:`CommitWatch.follow`
adds the watches of a job it starts driving and removes those of a job it no longer
drives, so an ended job costs no kernel watch.

Errors: none raised. Where inotify cannot be had, :meth:`CommitWatch.open` returns
None; a folder that cannot be watched (missing, the watch limit reached) is skipped
(its commits are found by the leader's listings); a read error ends the ringing quietly.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Protocol

import anyio

from prsd.spool.entrybell import (
    IN_CREATE,
    IN_ISDIR,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
    add_watch,
    events,
    open_inotify,
    remove_watch,
    ring_per_wake,
)
from prsd.spool.watch import Doorbell

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from prsd.spool.layout import JobLayout

COMMITS = IN_MOVED_TO
"""In ``done/<shard>/``, ``returned/`` and ``void/``: a task renamed in."""
SHARDS = IN_CREATE | IN_MOVED_TO
"""In ``done/`` itself: a new shard folder (and, as a rename in, nothing else)."""


class Driven(Protocol):
    """A job the leader drives, as the watch sees it: its folder."""

    @property
    def layout(self) -> JobLayout: ...


class CommitWatch:
    """One inotify descriptor watching the commit folders of the jobs a leader drives."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._wds: dict[str, list[int]] = {}  # job id -> its watches
        self._done: dict[int, tuple[str, Path]] = {}  # a done/ folder's watch -> (job, folder)

    @classmethod
    def open(cls) -> CommitWatch | None:
        """A watch of no job yet; None where inotify cannot be had."""
        fd = open_inotify()
        return None if fd is None else cls(fd)

    @property
    def jobs(self) -> frozenset[str]:
        return frozenset(self._wds)

    def follow(self, jobs: Mapping[str, Driven]) -> None:
        """Watch exactly ``jobs``: add the watches of new ones, remove those of the rest."""
        if jobs.keys() == self._wds.keys():
            return
        for job_id in [j for j in self._wds if j not in jobs]:
            for wd in self._wds.pop(job_id):
                self._done.pop(wd, None)
                remove_watch(self.fd, wd)  # gone with its folder already: harmless
        for job_id, driven in jobs.items():
            if job_id not in self._wds:
                self._watch(job_id, driven.layout)

    def _watch(self, job_id: str, job: JobLayout) -> None:
        wds = self._wds[job_id] = []
        done = add_watch(self.fd, job.done, SHARDS)
        if done >= 0:
            wds.append(done)
            self._done[done] = (job_id, job.done)
            self._watch_all_shards(job_id, job.done)
        for folder in (job.returned, job.void):
            wd = add_watch(self.fd, folder, COMMITS)
            if wd >= 0:
                wds.append(wd)

    def _watch_all_shards(self, job_id: str, done: Path) -> None:
        """Watch every shard folder now in ``done`` (made before its watch, or while the
        kernel's event queue overflowed: their commits are found by the next step)."""
        try:
            shards = [e.name for e in os.scandir(done) if e.is_dir()]
        except OSError:
            shards = []
        self._watch_shards(job_id, done, shards)

    def _watch_shards(self, job_id: str, done: Path, names: list[str]) -> None:
        wds = self._wds[job_id]
        for name in names:
            wd = add_watch(self.fd, done / name, COMMITS)
            if wd >= 0 and wd not in wds:
                wds.append(wd)

    def _on_events(self, buffer: bytes) -> None:
        """New shard folders in a watched ``done/``: watch them too."""
        for wd, mask, name in events(buffer):
            if mask & IN_Q_OVERFLOW:
                for job_id, done in list(self._done.values()):
                    self._watch_all_shards(job_id, done)
                continue
            where = self._done.get(wd)
            if where is not None and mask & IN_ISDIR and name and where[0] in self._wds:
                self._watch_shards(where[0], where[1], [os.fsdecode(name)])

    async def ring(self, bell: Doorbell, listed_at: Callable[[], float] | None = None) -> None:
        """Ring ``bell`` once per wake of the descriptor, until cancelled or a read error.

        With ``listed_at`` (when, on anyio's clock, the leader's next listing of the
        commit folders may come), a wake before that time rings at that time, once for
        every commit of the wait: a step sooner would only defer its listing to then.
        """
        if listed_at is None:
            await ring_per_wake(self.fd, bell, self._on_events)
            return
        woken = Doorbell()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_hold_until_listed, woken, bell, listed_at)
            await ring_per_wake(self.fd, woken, self._on_events)
            tg.cancel_scope.cancel()

    def close(self) -> None:
        self._wds.clear()
        self._done.clear()
        os.close(self.fd)


async def _hold_until_listed(
    woken: Doorbell, bell: Doorbell, listed_at: Callable[[], float]
) -> None:
    """Ring ``bell`` for each ring of ``woken``, no sooner than ``listed_at()``; the rings
    of the wait are one (the listing at that step reads all their commits)."""
    while True:
        await woken.wait(math.inf)
        delay = listed_at() - anyio.current_time()
        if delay > 0:
            await anyio.sleep(delay)
            woken.clear()
        bell.ring()
