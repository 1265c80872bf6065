"""A task handed to a worker: its ``run`` frames, its clock, and what it journaled.

The pure and board-reading parts of :meth:`WorkerSession.run_task
<prsd.agent.session.WorkerSession.run_task>`, which owns the worker and its state:

- :func:`run_frames`: a task's ``run`` frames, one or several of about
  :data:`FRAME_BUDGET_BYTES` each, the last marked so;
- :func:`task_deadline`: when the mini-batch in hand runs out of time, from the
  worker's board (:mod:`prsd.wire.board`: which mini-batch loads or runs since when):
  ``task_overhead_timeout`` from handing the task over (or the mini-batch before
  finishing) until its ``run()`` begins, then ``retry_settings.timeout`` until it ends;
- :func:`take_journal`: the outcomes a worker journaled on its board before it died or
  ran out of time, recorded as if its ``done`` frame had come.

Errors: none raised. A board that cannot be read gives no outcomes, and
:func:`take_journal` says so in the one line it returns; a journal entry that is not
an outcome is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.storage.records import Outcome
from prsd.wire import frames
from prsd.wire.board import RUNNING, Board
from prsd.wire.fields import RecordError
from prsd.worker import protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.agent.task import RunningTask
    from prsd.jobspec import JobSpec
    from prsd.storage.records import MiniBatch

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


def task_deadline(board: Board | None, spec: JobSpec, handed: float) -> float:
    """When the mini-batch in hand runs out of time (monotonic), from the board:
    ``run()`` began at the mark, or it loads since the mark (since ``handed``
    before the worker's first mark of the task)."""
    mark = board.read_mark() if board is not None else None
    if mark is None:
        return handed + spec.task_overhead_timeout_s
    if mark.phase == RUNNING:
        return mark.since + spec.timeout_s
    return mark.since + spec.task_overhead_timeout_s


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
