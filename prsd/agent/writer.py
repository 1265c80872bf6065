"""The agent's file writes of one job, off the event loop, in the order they were asked.

Appending a line to ``_main.txt``, a worker's batch records or the node report is a
blocking call (a network spool can take milliseconds or stall for seconds); the
event loop that watches every worker must not wait for it. :class:`FileWriter` takes
writes as zero-argument callables, runs them in a worker thread in order (a burst
becomes one thread hop), and is drained when the job's run on this node ends.

Errors: a write that raises (OSError on a failing spool) ends :meth:`FileWriter.run`
with it, so the job's run on this node fails at its usual boundary. Outside a
running writer (before it starts, after it ends) a write runs at once, inline.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING

import anyio
import anyio.from_thread
import anyio.to_thread

if TYPE_CHECKING:
    from collections.abc import Callable


def _write_all(batch: list[Callable[[], None]]) -> None:
    for write in batch:
        write()


class FileWriter:
    """Runs queued writes in a thread, one batch at a time, in order."""

    def __init__(self) -> None:
        self._queue: deque[Callable[[], None]] = deque()
        self._bell = anyio.Event()
        self._running = False
        self._closing = False
        self._ended = anyio.Event()
        self._loop_thread = 0

    def put(self, write: Callable[[], None]) -> None:
        """Queue ``write`` (never blocks the loop); inline when no writer task runs.

        From another thread (an environment build) the write is queued through the
        event loop, so it keeps its place in the order.
        """
        if self._running and threading.get_ident() != self._loop_thread:
            try:
                anyio.from_thread.run_sync(self.put, write)
                return
            except RuntimeError:
                pass  # a thread anyio did not start: write inline
        if not self._running or threading.get_ident() != self._loop_thread:
            write()
            return
        self._queue.append(write)
        self._bell.set()

    async def run(self) -> None:
        """The writer task: drain the queue until :meth:`close` and the queue is empty."""
        self._running = True
        self._loop_thread = threading.get_ident()
        try:
            while self._queue or not self._closing:
                if not self._queue:
                    await self._bell.wait()
                    self._bell = anyio.Event()
                    continue
                batch = list(self._queue)
                self._queue.clear()
                with anyio.CancelScope(shield=True):  # a started batch is written whole
                    await anyio.to_thread.run_sync(_write_all, batch)
        finally:
            self._running = False
            self._ended.set()
            self._leftovers()

    def _leftovers(self) -> None:
        """Callable[[], None]s queued when the task was cancelled: written inline, best effort."""
        while self._queue:
            try:
                self._queue.popleft()()
            except OSError:
                continue  # the spool is failing: the run's own error says so

    async def close(self) -> None:
        """Callable[[], None] what is queued, then end :meth:`run`."""
        self._closing = True
        self._bell.set()
        if self._running:
            with anyio.CancelScope(shield=True):
                await self._ended.wait()
