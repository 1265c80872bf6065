"""A task handed to a worker: its ``run`` frames, its clock, and what it journaled.

The parts of :meth:`WorkerSession.run_task <prsd.agent.session.WorkerSession.run_task>`
that only talk to the worker; the session owns the worker's state and acts on a death
or a timeout (:mod:`prsd.agent.workerstate`):

- :func:`run_frames`: a task's ``run`` frames, one or several of about
  :data:`FRAME_BUDGET_BYTES` each, the last marked so;
- :func:`collect`: the task's outcomes as the worker's ``done`` frames bring them in,
  until all came, the worker's channel closed (it died), the mini-batch in hand ran
  out of time, or the worker answered ``skipped`` (a task withdrawn before it began);
- :func:`task_deadline`: when the mini-batch in hand runs out of time, from the
  worker's board (:mod:`prsd.wire.board`: which mini-batch loads or runs since when):
  ``task_overhead_timeout`` from handing the task over (or the mini-batch before
  finishing) until its ``run()`` begins, then ``retry_settings.timeout`` until it ends;
- :func:`take_journal`: the outcomes a worker journaled on its board before it died or
  ran out of time, recorded as if its ``done`` frame had come.

Errors: a journal that cannot be read (``OSError``, ``ValueError``) gives no outcomes
and a line for the log (:class:`Journaled`); an entry that is not an outcome is
skipped. The board's mark is read from a memory file this process holds open.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from prsd.agent.proc import BrokenWorker
from prsd.wire import frames, protocol
from prsd.wire.board import RUNNING, Board
from prsd.wire.fields import RecordError
from prsd.wire.records import Outcome

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.agent.proc import WorkerProcess
    from prsd.agent.task import RunningTask
    from prsd.wire.records import MiniBatch

FRAME_BUDGET_BYTES = 1 << 20  # a task bigger than this goes out in several run frames


@dataclass
class InHand:
    """The mini-batch the worker holds when its clock runs out or it dies (FAIL_BATCH)."""

    task: RunningTask
    mb: MiniBatch
    started: float | None  # when run() began (None: still loading)
    on_done: Callable[[Outcome], None]
    error: str = ""  # a timeout's text


@dataclass(frozen=True)
class Journaled:
    """What :func:`take_journal` found: when the mini-batch now in hand began ``run()``
    (None: loading, or not known), and a line for the log if the board was unreadable."""

    started: float | None
    problem: str = ""


def run_frames(mbs: list[MiniBatch], out: str) -> bytes:
    """A task's ``run`` frames, encoded: one, or several of about
    :data:`FRAME_BUDGET_BYTES` each when the task is larger (the last says so)."""
    whole = protocol.encode(frames.Run(tuple(mbs), out, last=True).to_json())
    if len(whole) <= FRAME_BUDGET_BYTES or len(mbs) == 1:
        return whole
    parts = max(2, -(-len(whole) // FRAME_BUDGET_BYTES))
    size = -(-len(mbs) // parts)
    chunks = [mbs[k : k + size] for k in range(0, len(mbs), size)]
    return b"".join(
        protocol.encode(frames.Run(tuple(c), out, last=k == len(chunks) - 1).to_json())
        for k, c in enumerate(chunks)
    )


def task_deadline(
    board: Board | None, handed: float, *, timeout_s: float, overhead_s: float
) -> float:
    """When the mini-batch in hand runs out of time (monotonic), from the board:
    ``run()`` began at the mark (``timeout_s`` after it), or it loads since the mark
    (``overhead_s`` after it; after ``handed`` before the worker's first mark of the
    task)."""
    mark = board.read_mark() if board is not None else None
    if mark is None:
        return handed + overhead_s
    if mark.phase == RUNNING:
        return mark.since + timeout_s
    return mark.since + overhead_s


def take_journal(
    board: Board | None,
    task: RunningTask,
    pending: dict[int, MiniBatch],
    on_done: Callable[[Outcome], None],
) -> Journaled:
    """Record the outcomes the worker journaled (each taken out of ``pending`` and given
    to ``on_done``); when the mini-batch now in hand began ``run()``."""
    if board is None:
        return Journaled(None)
    try:
        journal = board.read_journal()
    except (OSError, ValueError) as exc:
        return Journaled(None, f"its board could not be read ({exc})")
    for obj in journal:
        try:
            outcome = Outcome.from_json(obj)
        except RecordError:
            continue
        if pending.pop(outcome.index, None) is not None:
            task.outcomes[outcome.index] = outcome
            on_done(outcome)
    mark = board.read_mark()
    if not pending or mark is None or mark.phase != RUNNING:
        return Journaled(None)
    return Journaled(mark.since if mark.mb == next(iter(pending)) else None)


@dataclass(frozen=True)
class Collected:
    """How the wait for a task ended: every outcome came (``in_hand`` None), or the
    mini-batch ``in_hand`` did not, the worker having died (``died``) or run out of time;
    ``started`` and ``problem`` as :class:`Journaled` says. ``skipped``: the task was
    withdrawn before the worker began it (``in_hand`` None: nothing of it is in hand)."""

    in_hand: MiniBatch | None
    died: bool = False
    started: float | None = None
    problem: str = ""
    skipped: bool = False


async def collect(
    proc: WorkerProcess,
    board: Board | None,
    task: RunningTask,
    remaining: list[MiniBatch],
    on_done: Callable[[Outcome], None],
    handed: float,
    *,
    timeout_s: float,
    overhead_s: float,
) -> Collected:
    """Wait for the task's ``done`` under the clock of the mini-batch in hand; each
    outcome is recorded in ``task`` and given to ``on_done`` as it comes.

    The deadline comes from the board, read again on each wake-up: at the deadline
    as last read, or sooner, since a phase the worker enters after that reading
    (the next mini-batch's ``run()`` or load) may run out first, but no sooner than
    the shorter of the two timeouts after it. A deadline that holds when read again
    has passed: the mini-batch in hand ran out of time.
    """
    # Any phase the worker enters from now on runs out no sooner than this after
    # now: waking at least this often catches every deadline on time.
    shortest = min(timeout_s, overhead_s)
    pending = {mb.index: mb for mb in remaining}  # in hand-over order
    deadline = task_deadline(board, handed, timeout_s=timeout_s, overhead_s=overhead_s)
    died = False
    while pending:
        wake = min(deadline, time.monotonic() + shortest)
        with anyio.move_on_after(max(wake - time.monotonic(), 0.0)):
            try:
                msg = await proc.receive()
            except BrokenWorker:
                died = True
                break
            if isinstance(msg, frames.Done):
                for outcome in msg.outcomes:
                    if pending.pop(outcome.index, None) is not None:
                        task.outcomes[outcome.index] = outcome
                        on_done(outcome)
            elif isinstance(msg, frames.Skipped):
                return Collected(None, skipped=True)
            continue
        deadline = task_deadline(board, handed, timeout_s=timeout_s, overhead_s=overhead_s)
        if time.monotonic() >= deadline:
            break
    if not pending:
        return Collected(None)
    journaled = take_journal(board, task, pending, on_done)
    if not pending:  # the journal held every outcome: the task is whole, no one to blame
        return Collected(None)
    return Collected(next(iter(pending.values())), died, journaled.started, journaled.problem)
