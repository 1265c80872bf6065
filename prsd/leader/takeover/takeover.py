"""The take-over phase: a new leader looks at a job's task folders until they settle.

On a shared mount a fresh leader's caches may still hold the dead leader's last
moments (FUSE entry and attribute caches, NFS attribute caches): a listing can miss
tasks the last leader wrote, and planning those again would run them twice. So on a
spool that is not a local disk the folders are looked at twice at least, and again
while tasks named in the issue logs (:mod:`prsd.leader.takeover.issued`,
:mod:`prsd.spool.issuelog`) are missing, for at most :data:`TAKEOVER_SETTLE_S` seconds.

A look runs in a thread of its own (a listing on a network mount can take seconds),
and the phase waits by answering "come back at T", never by sleeping: the leader's
stepping thread goes on driving every other job meanwhile. :func:`settled` is the
pure rule; :class:`TakeOver` is its I/O shell. The caller adopts the settled
:class:`Look` (:meth:`prsd.leader.run.job.JobDriver`).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.leader.takeover.issued import unsettled
from prsd.leader.takeover.resume import (
    DONE,
    PENDING,
    VOID,
    Found,
    read_task_bytes,
    reepoch,
    reepoch_pending,
    scan_tasks,
)
from prsd.spool.fstype import is_local_spool
from prsd.spool.issuelog import read_issued
from prsd.spool.taskrecords import TaskBody

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.spool.layout import JobLayout

TAKEOVER_SETTLE_S = 30.0  # wait this long for stale listings to show every written task
LOOK_AGAIN_S = 1.0  # between two looks at a shared mount's folders
POLL_S = 0.05  # while a look runs: how soon the stepping thread asks again
_LOOKERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="prsd-takeover")

Pair = tuple[Found, TaskBody]


@dataclass
class Look:
    """One look at the job's task folders: the task files found, by where they are."""

    live: list[Pair] = field(default_factory=list)  # pending, claimed, returned
    done: list[Pair] = field(default_factory=list)
    void: list[Pair] = field(default_factory=list)
    unseen: int = 0  # issued task names found in no folder
    renamed: int = 0  # pending tasks renamed to this epoch (this look and earlier ones)
    notes: list[str] = field(default_factory=list)  # for the job's master log

    def in_files(self) -> set[int]:
        """Mini-batches some task file holds."""
        return {mb.index for _, b in self.live + self.done + self.void for mb in b.mini_batches}


def settled(*, local: bool, unseen: int, looks_left: int, past_deadline: bool) -> bool:
    """Is the last look to be believed? (A local disk's listing always is.)"""
    return local or (unseen == 0 and looks_left <= 0) or past_deadline


class TakeOver:
    """Looks at a job's task folders, off the stepping thread, until they settle."""

    def __init__(
        self,
        layout: JobLayout,
        epoch: int,
        on_issue: Callable[[list[str]], None],
        now: float,
        *,
        local: bool | None = None,
    ) -> None:
        self.layout = layout
        self.epoch = epoch
        self.on_issue = on_issue
        self.deadline = now + TAKEOVER_SETTLE_S
        self.local = local
        self.looks_left = 0
        self.renamed = 0
        self.look: Look | None = None  # the settled look, once there is one
        self._wake = now
        self._running: Future[Look] | None = None
        self._notes: list[str] = []  # every look's notes, for the job's master log

    def step(self, now: float) -> float | None:
        """Go on with the phase: None once the look is settled, else when to come back."""
        if self.look is not None:
            return None
        if self._running is None:
            if now < self._wake:
                return self._wake
            self._running = _LOOKERS.submit(self._look)
            return now + POLL_S
        if not self._running.done():
            return now + POLL_S
        look = self._running.result()  # the look's own error, raised in the step
        self._running = None
        assert self.local is not None
        self.looks_left -= 1
        self._notes.extend(look.notes)
        if settled(
            local=self.local,
            unseen=look.unseen,
            looks_left=self.looks_left,
            past_deadline=now > self.deadline,
        ):
            look.notes = self._notes
            if look.unseen and not self.local:
                look.notes.append(
                    f"{look.unseen} issued task files never showed in the task listings within "
                    f"{TAKEOVER_SETTLE_S:g} s; their mini-batches are run again"
                )
            self._settle(look)
            return None
        self._wake = now + LOOK_AGAIN_S
        return self._wake

    def wait(self) -> None:
        """Let a look in flight end (before the job is ended or let go); errors dropped."""
        running, self._running = self._running, None
        if running is not None:
            running.exception()

    def _look(self) -> Look:
        """(In a looker thread.) Rename older pending tasks, list, read every task body."""
        if self.local is None:
            self.local = is_local_spool(self.layout.root)
            self.looks_left = 1 if self.local else 2
        self.renamed += reepoch_pending(self.layout, self.epoch, self.on_issue)
        issued = read_issued(self.layout)
        look = Look(renamed=self.renamed)
        for found in scan_tasks(self.layout):
            body = self._body_of(found, look.notes)
            if body is None:
                continue
            if found.place == DONE:
                look.done.append((found, body))
            elif found.place == VOID:
                look.void.append((found, body))
            else:
                look.live.append((found, body))
        seen = {f.task.name for f, _ in look.live + look.done + look.void}
        look.unseen = len(unsettled(issued, seen))
        return look

    def _settle(self, look: Look) -> None:
        """Pending tasks of older epochs that showed up after the first renaming (a
        deposed leader, paused mid-split, went on writing): renamed to this epoch."""
        kept: list[Pair] = []
        for found, body in look.live:
            if found.place == PENDING and found.task.epoch < self.epoch:
                moved = reepoch(self.layout, found, self.epoch, self.on_issue)
                if moved is None:
                    continue  # gone: its mini-batches are planned again as orphans
                found = moved
                look.renamed += 1
            kept.append((found, body))
        look.live = kept
        self.look = look

    def _body_of(self, found: Found, notes: list[str]) -> TaskBody | None:
        data = read_task_bytes(self.layout, found)
        if data is None:
            notes.append(f"task {found.task.name} vanished during take-over")
            return None
        try:
            return TaskBody.decode(data)
        except (ValueError, PrsdError) as exc:
            notes.append(f"task {found.task.name} is unreadable ({exc}); ignored")
            return None
