"""The worker's board on a real memory file: marks, the journal, emptying, a second
descriptor opened through /proc as the agent does."""

from __future__ import annotations

import os
import time

import pytest

from prsd.wire.board import FINISHED, JOURNAL_AT, MARK, RUNNING, Board, Mark


def test_a_new_board_has_no_mark_and_no_journal() -> None:
    board = Board.create()
    try:
        assert board.read_mark() is None
        assert board.read_journal() == []
    finally:
        board.close()


def test_the_agents_descriptor_sees_the_workers_marks_and_journal() -> None:
    worker = Board.create()
    agent = Board.open_of(os.getpid(), worker.fd)
    try:
        now = time.monotonic()
        worker.begin_task()
        worker.mark(5, RUNNING, now)
        assert agent.read_mark() == Mark(5, RUNNING, now)
        worker.journal({"index": 5, "status": "succeeded", "error": "ünï ✓"})
        worker.mark(5, FINISHED, now + 1)
        worker.mark(6, RUNNING, now + 2)
        assert agent.read_mark() == Mark(6, RUNNING, now + 2)
        worker.journal({"index": 6, "status": "failed"})
        assert [o["index"] for o in agent.read_journal()] == [5, 6]
        assert agent.read_journal()[0]["error"] == "ünï ✓"
    finally:
        worker.close()
        agent.close()


def test_emptying_forgets_the_last_tasks_mark_and_journal() -> None:
    worker = Board.create()
    agent = Board.open_of(os.getpid(), worker.fd)
    try:
        worker.begin_task()
        for i in range(3):
            worker.journal({"index": i, "status": "succeeded", "pad": "x" * 100})
        worker.mark(2, FINISHED, 1.0)
        agent.empty()
        assert agent.read_mark() is None
        worker.begin_task()
        worker.journal({"index": 9, "status": "succeeded"})
        assert [o["index"] for o in agent.read_journal()] == [9]  # nothing stale after it
        worker.mark(9, FINISHED, 2.0)
        assert agent.read_mark() == Mark(9, FINISHED, 2.0)
    finally:
        worker.close()
        agent.close()


def test_a_line_cut_short_is_not_used_and_a_mark_in_flight_is_not_read() -> None:
    board = Board.create()
    try:
        board.begin_task()
        board.journal({"index": 1, "status": "succeeded"})
        size = os.fstat(board.fd).st_size
        os.pwrite(board.fd, b'{"index":2,"sta', size)  # a worker killed inside its write
        assert [o["index"] for o in board.read_journal()] == [1]
        # Two different sequence numbers: a write in flight (never finished here).
        os.pwrite(board.fd, MARK.pack(7, 3, RUNNING, 1.0, 8), 0)
        assert board.read_mark() is None
        assert JOURNAL_AT >= MARK.size
    finally:
        board.close()


def test_garbage_in_the_journal_is_an_error() -> None:
    board = Board.create()
    try:
        os.pwrite(board.fd, b"not json\n", JOURNAL_AT)
        with pytest.raises(ValueError):
            board.read_journal()
    finally:
        board.close()


def test_the_board_of_a_gone_process_cannot_be_opened() -> None:
    with pytest.raises(OSError):
        Board.open_of(os.getpid(), 987654)


def test_a_withdrawal_survives_the_workers_cut_and_goes_with_an_emptying() -> None:
    worker = Board.create()
    agent = Board.open_of(os.getpid(), worker.fd)
    try:
        assert not worker.withdrawn()  # a new board: nothing withdrawn
        worker.begin_task()
        worker.journal({"index": 0, "status": "succeeded", "pad": "x" * 100})
        worker.mark(0, FINISHED, 1.0)
        agent.withdraw()
        assert worker.withdrawn()
        assert agent.read_mark() == Mark(0, FINISHED, 1.0)  # the mark is untouched
        assert [o["index"] for o in agent.read_journal()] == [0]
        worker.begin_task()  # a task begun anyway: the cut keeps the byte
        assert worker.withdrawn()
        agent.withdraw(on=False)
        assert not worker.withdrawn()
        agent.withdraw()
        agent.empty()  # an idle worker's hand-over
        assert not worker.withdrawn()
        agent.withdraw()  # on an emptied board: no mark appears
        assert agent.read_mark() is None and agent.read_journal() == []
    finally:
        worker.close()
        agent.close()
