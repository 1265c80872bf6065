"""The session's side of a task handed ahead, on a real board (a memory file).

The worker's process is the one thing left out: the session's two I/O edges (making
the result file, sending frames) are this test's own, so a withdrawal can be made at
the exact point where a hand-over waits for its result file.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from prsd.agent.ahead import HandsAhead
from prsd.agent.task import RunningTask
from prsd.agent.workerstate import WorkerState
from prsd.spool.layout import TaskName
from prsd.wire.board import Board
from prsd.wire.records import MiniBatch


class Session(HandsAhead):
    """A busy worker's session whose result-file step waits for ``gate``."""

    def __init__(self, board: Board) -> None:
        self.name = "process000"
        self.state = WorkerState.BUSY
        self.ahead = None
        self._collecting = True
        self._board = board
        self._withdrew = ""
        self.gate = anyio.Event()
        self.sent: list[bytes] = []
        self.lines: list[str] = []

    async def make_result_file(self, task: RunningTask) -> None:
        await self.gate.wait()

    async def send_frames(self, data: bytes) -> None:
        self.sent.append(data)

    def main_log(self, line: str) -> None:
        self.lines.append(line)


def _task(first: int) -> RunningTask:
    return RunningTask(TaskName(first, 1, 1), [MiniBatch(first, ["/in/a"])], Path("/r/t.res"))


def test_a_drain_during_a_hand_over_withdraws_the_task_handed() -> None:
    """An earlier task's withdrawal is cleared as the next is handed over; a withdrawal
    made while that hand-over waits (a drain) stands for the task handed."""
    board = Board.create()
    try:
        session = Session(board)
        session.ahead = _task(0)
        session.withdraw_ahead("capped")  # an earlier task's: set on the board
        assert board.withdrawn()
        session.ahead = None  # taken by the job run (the worker began it anyway)

        while_waiting: list[bool] = []

        async def main() -> None:
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(session.hand_ahead, _task(5))
                    await anyio.wait_all_tasks_blocked()  # it waits for its result file
                    while_waiting.append(board.withdrawn())
                    session.withdraw_ahead("the node drains")
                    session.gate.set()

        anyio.run(main)
        assert while_waiting == [False]  # the earlier withdrawal was gone
        assert board.withdrawn(), "the drain's withdrawal was undone by the hand-over"
        assert len(session.sent) == 1
        task = session.take_ahead()
        assert task is not None and task.task.first_mb == 5
        session.skipped(task)
        assert task.withdrawn
        said = "process000 did not begin task 000000005.a1.e1, handed to it ahead: withdrawn"
        assert session.lines == [f"{said} (the node drains)"]
    finally:
        board.close()


def test_no_withdrawal_without_a_task_handed_ahead() -> None:
    board = Board.create()
    try:
        session = Session(board)
        session.withdraw_ahead("the node drains")
        assert not board.withdrawn()
    finally:
        board.close()
