"""The agent's file writes of one job, off the event loop, in the order they were asked.

Appending a line to ``_main.txt``, a worker's batch records or the node report is a
blocking call (a network spool can take milliseconds or stall for seconds); the
event loop that watches every worker must not wait for it. :class:`FileWriter` takes
writes as zero-argument callables, runs them in a worker thread in order (a burst
becomes one thread hop), and is drained when the job's run on this node ends.

A call whose result the loop needs (a task's commit, a claim) can ride the same hop:
:meth:`FileWriter.submit` queues it behind the writes asked before it. At a task's end
its batch records, its commit and the claim of a worker's next task are one hop, not
three (a hop is a thread's wake-up and the loop's, about a tenth of what a task costs
the agent: bench/README.md, round 4t).

Errors: a write that raises (OSError on a failing spool) ends :meth:`FileWriter.run`
with it, so the job's run on this node fails at its usual boundary. A submitted call's
error is its caller's (:meth:`Submitted.wait` raises it), and never ends the writer; a
call the writer could not reach (its run ended first) runs in a thread of its own.
Outside a running writer (before it starts, after it ends) a write runs at once, inline.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Generic, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")


class Submitted(Generic[T]):
    """A call queued behind the writer's writes; :meth:`wait` gives its result."""

    def __init__(self, func: Callable[[], T], *, queued: bool) -> None:
        self._func = func
        self._queued = queued
        self._ran = False
        self._result: T | None = None
        self._error: Exception | None = None
        self._settled = anyio.Event()

    def __call__(self) -> None:
        """Run the call (in the writer's thread); its error is kept for :meth:`wait`."""
        if self._ran:
            return
        self._ran = True
        try:
            self._result = self._func()
        except Exception as exc:  # noqa: BLE001 - carried to the caller, raised in wait()
            self._error = exc

    def settle(self) -> None:
        """Wake the waiter (on the loop, after the batch that held the call)."""
        self._settled.set()

    async def wait(self) -> T:
        """The call's result, once the writer has run it. A cancellation meanwhile
        comes after the result is in the caller's hands (a claimed task is not lost).

        Raises:
            Exception: whatever the call raised.
        """
        if self._queued:  # as a thread call waits: a result is never dropped by a cancel
            with anyio.CancelScope(shield=True):
                await self._settled.wait()
        if not self._ran:  # no writer ran it (none was running, or its run ended first)
            await anyio.to_thread.run_sync(self)
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # set by the call that ran


def _write_all(batch: list[Callable[[], object]]) -> None:
    for write in batch:
        write()


class FileWriter:
    """Runs queued writes in a thread, one batch at a time, in order."""

    def __init__(self) -> None:
        self._queue: deque[Callable[[], object]] = deque()
        self._bell = anyio.Event()
        self._running = False
        self._closing = False
        self._ended = anyio.Event()
        self._loop_thread = 0

    def put(self, write: Callable[[], object]) -> None:
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

    def submit(self, func: Callable[[], T]) -> Submitted[T]:
        """Queue ``func`` behind the writes asked so far (call from the loop); its result
        comes from :meth:`Submitted.wait`. Without a running writer it runs in a thread
        of its own when waited for."""
        queued = self._running and not self._closing
        call = Submitted(func, queued=queued)
        if queued:
            self._queue.append(call)
            self._bell.set()
        return call

    async def call(self, func: Callable[[], T]) -> T:
        """:meth:`submit` ``func`` and wait for its result."""
        return await self.submit(func).wait()

    async def run(self) -> None:
        """The writer task: drain the queue until :meth:`close` and the queue is empty."""
        self._running = True
        self._loop_thread = threading.get_ident()
        try:
            while self._queue or not self._closing:
                if not self._queue:
                    await self._bell.wait()
                    self._bell = anyio.Event()
                    # The tasks woken with this one (a task's commit, the claim of a
                    # worker's next task) queue their calls first: one hop for them all.
                    await anyio.lowlevel.checkpoint()
                    continue
                batch = list(self._queue)
                self._queue.clear()
                try:
                    with anyio.CancelScope(shield=True):  # a started batch is written whole
                        await anyio.to_thread.run_sync(_write_all, batch)
                finally:
                    _settle(batch)
        finally:
            self._running = False
            self._ended.set()
            self._leftovers()

    def _leftovers(self) -> None:
        """Writes queued when the task was cancelled: written inline, best effort; the
        calls among them are woken, to run in a thread of their own."""
        while self._queue:
            write = self._queue.popleft()
            if isinstance(write, Submitted):
                write.settle()
                continue
            try:
                write()
            except OSError:
                continue  # the spool is failing: the run's own error says so

    async def close(self) -> None:
        """Write what is queued, then end :meth:`run`."""
        self._closing = True
        self._bell.set()
        if self._running:
            with anyio.CancelScope(shield=True):
                await self._ended.wait()


def _settle(batch: list[Callable[[], object]]) -> None:
    """Wake the waiters of the batch's calls (those a failed write kept from running
    then run in a thread of their own)."""
    for write in batch:
        if isinstance(write, Submitted):
            write.settle()
