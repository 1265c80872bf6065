"""A task handed to a busy worker ahead of its running task's end, and its withdrawal.

As a worker begins a task, the job run claims the next (:meth:`TaskFeed.claim_ahead
<prsd.agent.feed.TaskFeed.claim_ahead>`) and, while many tasks are pending, sends its
``run`` frames behind the running task's: the worker begins it the moment it has sent
that one's ``done``, with no turn of the agent between. When such a task must not
begin after all (the agent drains, or the job's slots on the node are capped), the
agent withdraws it on the worker's board (:mod:`prsd.wire.board`); a worker that has
not begun it yet answers ``skipped``, and the task goes back whole: to ``returned/``
for the leader when the feed is closed, else to the node's feed for a worker that may
run.

Promise: a task handed over ahead is begun by its worker (and collected like any
other), or not at all and returned whole; never both. Withdrawing is a wish, not an
order: a worker that read its board first begins the task, which then runs to its end
under the drain's grace like any running task.

Errors: a board that cannot be written (the worker is gone) withdraws nothing; the
task then returns as the task of a dead worker does (``OSError`` is not raised).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from prsd.agent.handover import run_frames
from prsd.agent.task import hand_back
from prsd.agent.workerstate import WorkerState

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.agent.feed import TaskFeed
    from prsd.agent.task import RunningTask
    from prsd.spool.layout import JobLayout
    from prsd.wire.board import Board


class HandsAhead:
    """The worker session's side: the one task it was handed ahead (the session sets
    every attribute; :meth:`send_frames` and :meth:`main_log` are its own)."""

    name: str
    state: WorkerState
    ahead: RunningTask | None  # its next task, handed over while one runs
    _collecting: bool  # in a task's collect: a task handed now comes next
    _board: Board | None
    _withdrew: str  # why the task handed ahead was withdrawn ("": it was not)

    async def send_frames(self, data: bytes) -> None:
        raise NotImplementedError

    async def make_result_file(self, task: RunningTask) -> None:
        raise NotImplementedError

    def main_log(self, line: str) -> None:
        raise NotImplementedError

    def takes_ahead(self) -> bool:
        """Would a task handed over now be this worker's next (it runs one, none ahead)?"""
        return self._collecting and self.ahead is None and self.state is WorkerState.BUSY

    async def hand_ahead(self, task: RunningTask) -> None:
        """Send ``task``'s ``run`` frames behind the running task's. ``task`` is :attr:`ahead`
        until the job run takes it (:meth:`take_ahead`): to run next, or back to the feed
        if the worker ends first (it never began it)."""
        # An earlier task's withdrawal is cleared before this task becomes :attr:`ahead`,
        # with no wait between: a withdrawal from then on (a drain) is this task's.
        if self._withdrew and self._board is not None:
            self._withdrew = ""
            with contextlib.suppress(OSError):
                self._board.withdraw(on=False)
        self.ahead = task
        with anyio.CancelScope(shield=True):  # a claimed task's file is made whole
            await self.make_result_file(task)
        await self.send_frames(run_frames(task.remaining(), str(task.out_tmp)))

    def take_ahead(self) -> RunningTask | None:
        task, self.ahead = self.ahead, None
        return task

    def withdraw_ahead(self, why: str) -> None:
        """Ask the worker not to begin the task handed to it ahead, if it has one."""
        if self.ahead is None or self._board is None or self._withdrew:
            return
        try:
            self._board.withdraw()
        except OSError:
            return  # the worker is gone: its task returns as a dead worker's does
        self._withdrew = why

    def skipped(self, task: RunningTask) -> None:
        """The worker answered ``skipped``: it did not begin ``task``."""
        task.withdrawn = True
        self.main_log(
            f"{self.name} did not begin task {task.task.name}, handed to it ahead: "
            f"withdrawn ({self._withdrew or 'no reason recorded'})"
        )


async def settle_withdrawn(
    layout: JobLayout, node_id: str, feed: TaskFeed, task: RunningTask
) -> None:
    """A withdrawn task (none of it ran) goes back whole: to ``returned/`` once the feed
    is closed (a drain: another node takes it now), else to the front of the feed."""
    task.withdrawn = False
    if feed.closed:
        await anyio.to_thread.run_sync(hand_back, layout, node_id, task)
    else:
        feed.put_front(task)


async def claim_ahead(
    layout: JobLayout,
    node_id: str,
    feed: TaskFeed,
    session: HandsAhead,
    capped: Callable[[], bool],
) -> None:
    """Claim a task while ``session``'s worker runs one; hand it to that worker if it
    still does (its next, with no gap) and many tasks are pending, else keep it for the
    first worker to ask; hand it back if the job's slots were ``capped`` meanwhile."""
    await feed.claim_ahead()
    if capped():  # its slot may not run now
        await hand_back_ahead(layout, node_id, feed)
    elif feed.hands_ahead() and session.takes_ahead():
        await session.hand_ahead(feed.ahead.popleft())


async def hand_back_ahead(layout: JobLayout, node_id: str, feed: TaskFeed) -> None:
    """Return the task claimed ahead of the workers (never started) to ``pending/``."""
    while feed.ahead:
        task = feed.ahead.popleft()
        await anyio.to_thread.run_sync(hand_back, layout, node_id, task)
