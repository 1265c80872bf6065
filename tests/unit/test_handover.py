"""A task handed to a worker (prsd/agent/handover.py): its run frames, the clock of the
mini-batch in hand read off a real board, and the outcomes a worker journaled."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest
from anyio.abc import SocketStream

from prsd.agent.handover import (
    FRAME_BUDGET_BYTES,
    Collected,
    collect,
    run_frames,
    take_journal,
    task_deadline,
)
from prsd.agent.proc import WorkerProcess
from prsd.agent.task import RunningTask
from prsd.spool.layout import TaskName
from prsd.wire import frames, protocol
from prsd.wire.board import FINISHED, RUNNING, Board
from prsd.wire.records import MiniBatch, Outcome

if TYPE_CHECKING:
    from collections.abc import Iterator

TIMEOUT_S = 60.0
OVERHEAD_S = 30.0


def _frames(data: bytes) -> list[frames.Run]:
    """Decode a stream of run frames back (with the channel's one frame reader)."""
    reader = protocol.FrameBuffer()
    reader.feed(data)
    runs = []
    while (message := reader.next()) is not None:
        command = frames.decode_command(message)
        assert isinstance(command, frames.Run)
        runs.append(command)
    assert not reader.partial
    return runs


def test_a_small_task_goes_in_one_run_frame() -> None:
    mbs = [MiniBatch(i, [f"f{i}.txt"], 1) for i in range(3)]
    runs = _frames(run_frames(mbs, "/out"))
    assert [(list(r.mbs), r.out, r.last) for r in runs] == [(mbs, "/out", True)]


def test_a_large_task_goes_in_several_frames_the_last_marked() -> None:
    payload = "x" * 100_000
    mbs = [MiniBatch(i, [payload], 1) for i in range(25)]  # about 2.5 MB
    runs = _frames(run_frames(mbs, "/out"))
    assert len(runs) >= 3
    assert [r.last for r in runs] == [False] * (len(runs) - 1) + [True]
    assert [mb for r in runs for mb in r.mbs] == mbs  # all of them, in order
    assert all(len(protocol.encode(r.to_json())) <= FRAME_BUDGET_BYTES * 1.2 for r in runs)


@pytest.fixture
def boards() -> Iterator[tuple[Board, Board]]:
    """The worker's board and the agent's descriptor of it, as a session has them."""
    worker = Board.create()
    agent = Board.open_of(os.getpid(), worker.fd)
    yield worker, agent
    worker.close()
    agent.close()


@pytest.mark.parametrize(
    ("phase", "expected"),
    [(None, 100.0 + OVERHEAD_S), (RUNNING, 105.0 + TIMEOUT_S), (FINISHED, 105.0 + OVERHEAD_S)],
)
def test_the_clock_of_the_mini_batch_in_hand_comes_from_the_mark(
    boards: tuple[Board, Board], phase: int | None, expected: float
) -> None:
    """No mark yet: loading since the hand-over; run() began: the run timeout from the
    mark; the last one finished (the next loads): the overhead timeout from the mark."""
    worker, agent = boards
    worker.begin_task()
    if phase is not None:
        worker.mark(4, phase, 105.0)
    got = task_deadline(agent, 100.0, timeout_s=TIMEOUT_S, overhead_s=OVERHEAD_S)
    assert got == expected


def test_no_board_loads_since_the_hand_over() -> None:
    assert task_deadline(None, 7.0, timeout_s=TIMEOUT_S, overhead_s=OVERHEAD_S) == 37.0


def test_journaled_outcomes_are_taken_and_the_running_one_is_in_hand(
    boards: tuple[Board, Board],
) -> None:
    """Two of three mini-batches journaled before the worker died in run() of the third:
    both recorded once, the third is in hand since its mark; a stray entry is skipped."""
    worker, agent = boards
    mbs = [MiniBatch(i, [f"f{i}.txt"], 1) for i in (10, 11, 12)]
    task = RunningTask(TaskName(10, 1, 1), mbs, Path("/nowhere"))
    pending = {mb.index: mb for mb in mbs}
    worker.begin_task()
    worker.journal(Outcome(10, "succeeded", 1, 1).to_json())
    worker.journal({"not": "an outcome"})
    worker.journal(Outcome(11, "failed", 1, 0, 1).to_json())
    worker.mark(12, RUNNING, 50.0)
    seen: list[int] = []
    got = take_journal(agent, task, pending, lambda o: seen.append(o.index))
    assert seen == [10, 11]
    assert sorted(task.outcomes) == [10, 11]
    assert list(pending) == [12]
    assert (got.started, got.problem) == (50.0, "")


def test_a_mini_batch_still_loading_has_no_start(boards: tuple[Board, Board]) -> None:
    worker, agent = boards
    mbs = [MiniBatch(i, [f"f{i}.txt"], 1) for i in (0, 1)]
    task = RunningTask(TaskName(0, 1, 1), mbs, Path("/nowhere"))
    pending = {mb.index: mb for mb in mbs}
    worker.begin_task()
    worker.journal(Outcome(0, "succeeded", 1, 1).to_json())
    worker.mark(0, FINISHED, 50.0)  # mini-batch 1 loads
    got = take_journal(agent, task, pending, lambda o: None)
    assert list(pending) == [1]
    assert got.started is None


def test_a_worker_that_died_after_journaling_every_outcome_leaves_the_task_whole(
    boards: tuple[Board, Board],
) -> None:
    """The channel closes before the ``done`` frame, but the journal holds every
    outcome: all are recorded and nothing is in hand (no mini-batch to blame)."""
    worker, agent = boards
    mbs = [MiniBatch(i, [f"f{i}.txt"], 1) for i in (3, 4)]
    task = RunningTask(TaskName(3, 1, 1), mbs, Path("/nowhere"))
    worker.begin_task()
    for mb in mbs:
        worker.journal(Outcome(mb.index, "succeeded", 1, 1).to_json())
    worker.mark(4, FINISHED, 50.0)
    seen: list[int] = []

    ours, theirs = socket.socketpair()
    theirs.close()  # the worker's end of the channel: gone, as when it dies

    async def main() -> Collected:
        async with (
            await anyio.open_process([sys.executable, "-c", "pass"]) as process,
            await SocketStream.from_socket(ours) as stream,
        ):
            return await collect(
                WorkerProcess(process, stream),
                agent,
                task,
                mbs,
                lambda o: seen.append(o.index),
                time.monotonic(),
                timeout_s=TIMEOUT_S,
                overhead_s=OVERHEAD_S,
            )

    got = anyio.run(main)
    assert got.in_hand is None
    assert seen == [3, 4] and sorted(task.outcomes) == [3, 4]
