"""A task handed to a real worker ahead of its running one's end, withdrawn on its board.

The agent's side is played by hand on the worker's real control socket and board: the
next task's ``run`` frames are sent while the current task runs, then the board's
withdrawal byte is set. A worker that has not begun the task answers ``skipped`` and
runs none of it; one that began it first runs it to its end; emptying the board (the
agent's hand-over to an idle worker) lets the next task run.
"""

from __future__ import annotations

import textwrap
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from prsd.wire.board import Board
from tests.helpers import wait_until
from tests.integration.worker_driver import WorkerPaths, files_mb, ready_worker

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tests.integration.worker_driver import WorkerProcess

# Every run() call is written down; "/hold" waits for a release file, "/hold-begun"
# says it began first.
HOLDING = """
    import os, time

    OUT = os.environ["AZUREML_BI_OUTPUT_PATH"]

    def run(mini_batch):
        with open(os.path.join(OUT, "calls.txt"), "a") as f:
            f.write(" ".join(mini_batch) + "\\n")
        if mini_batch[0].startswith("/hold"):
            open(os.path.join(OUT, "began" + mini_batch[0].replace("/", "-")), "w").close()
            while not os.path.exists(os.path.join(OUT, "release")):
                time.sleep(0.01)
        return mini_batch
"""


def _run(mbs: list[dict[str, Any]], out: Path, last: bool = True) -> dict[str, Any]:
    return {"op": "run", "mbs": mbs, "out": str(out), "last": last}


def _calls(paths: WorkerPaths) -> list[str]:
    return (paths.output_dir / "calls.txt").read_text().splitlines()


@contextmanager
def _holding_worker(tmp_path: Path) -> Iterator[tuple[WorkerPaths, WorkerProcess, Board]]:
    """A ready worker of :data:`HOLDING` and the agent's descriptor of its board."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script(textwrap.dedent(HOLDING))
    with ready_worker(paths) as worker:
        board = Board.open_of(worker.proc.pid, worker.board_fd)
        try:
            yield paths, worker, board
        finally:
            board.close()


def test_a_withdrawn_task_is_skipped_whole_and_the_next_one_runs(tmp_path: Path) -> None:
    with _holding_worker(tmp_path) as (paths, worker, board):
        worker.send(_run([files_mb(0, ["/hold"])], paths.out))
        wait_until((paths.output_dir / "began-hold").exists, 30, "run() of the first task")
        # The next task, in two frames, behind the running one; then withdrawn.
        worker.send(_run([files_mb(1, ["/b1"]), files_mb(2, ["/b2"])], paths.out, last=False))
        worker.send(_run([files_mb(3, ["/b3"])], paths.out))
        board.withdraw()
        (paths.output_dir / "release").touch()
        first = worker.expect("done")
        assert [o["index"] for o in first["outcomes"]] == [0]
        assert worker.recv() == {"ev": "skipped"}  # one answer for both frames
        assert _calls(paths) == ["/hold"]  # none of the withdrawn task ran
        board.empty()  # handed to an idle worker: the withdrawal is cleared
        outcomes = worker.run_task([files_mb(4, ["/c"])])
        assert [o["status"] for o in outcomes] == ["succeeded"]
        assert worker.shutdown() == 0
    assert _calls(paths) == ["/hold", "/c"]
    assert paths.out.read_bytes() == b"/hold\n/c\n"


def test_a_task_begun_before_its_withdrawal_runs_to_its_end(tmp_path: Path) -> None:
    with _holding_worker(tmp_path) as (paths, worker, board):
        worker.send(_run([files_mb(0, ["/a"])], paths.out))
        worker.send(_run([files_mb(1, ["/hold-begun"]), files_mb(2, ["/d"])], paths.out))
        wait_until((paths.output_dir / "began-hold-begun").exists, 30, "run() of the second task")
        board.withdraw()  # too late: the worker read its board as it began the task
        (paths.output_dir / "release").touch()
        assert [o["index"] for o in worker.expect("done")["outcomes"]] == [0]
        second = worker.expect("done")
        assert [(o["index"], o["status"]) for o in second["outcomes"]] == [
            (1, "succeeded"),
            (2, "succeeded"),
        ]
        assert worker.shutdown() == 0
    assert _calls(paths) == ["/a", "/hold-begun", "/d"]
