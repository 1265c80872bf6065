"""A busy worker is handed its next task before its current one ends, and a worker that
dies holding one loses and repeats nothing.

Real ``prsd run`` processes and workers. The entry scripts look at the worker's own
end of its control channel (``select`` on the socket the worker reads its ``run``
frames from): while ``run()`` runs, bytes there are the next task's frames, sent by
the agent ahead of the current task's end (before, the agent sent them only once the
worker had answered ``done``: the channel was never readable inside ``run()``).
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

from tests.jobkit import ECHO_YAML, make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

ITEMS = 60
# A job this small never lists 16 pending tasks (the default below which no task is
# handed over ahead: tests/integration/test_feed_ahead.py checks that rule).
ANY_LISTING = {"PRSD_HAND_AHEAD_WHEN_LISTED": "1"}

CHANNEL = """
import gc, select, time

def _next_task_waiting(within_s):
    # The worker's end of its control channel (prsd.worker.host.Channel).
    channel = next(o for o in gc.get_objects() if type(o).__name__ == "Channel" and hasattr(o, "sock"))
    end = time.monotonic() + within_s
    while True:
        if select.select([channel.sock], [], [], 0)[0]:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.005)
"""

SEES_AHEAD = (
    CHANNEL
    + """
def run(mini_batch):
    time.sleep(0.02)
    ahead = _next_task_waiting(0.2)
    return [p.rsplit("/", 1)[-1] + (" ahead" if ahead else " alone") for p in mini_batch]
"""
)

DIES_HOLDING_AHEAD = (
    CHANNEL
    + """
import os

def run(mini_batch):
    name = mini_batch[0].rsplit("/", 1)[-1]
    marker = MARKER
    if name >= "item00020.txt" and not os.path.exists(marker) and _next_task_waiting(2.0):
        open(marker, "w").write(name)
        os._exit(3)  # a crash while the next task waits in the channel
    time.sleep(0.01)
    return [name]
"""
)


def _rows(output: Path) -> list[str]:
    return output.read_text(encoding="utf-8").splitlines()


def test_a_busy_worker_has_its_next_task_before_its_current_ends(tmp_path: Path) -> None:
    job = make_job(tmp_path, SEES_AHEAD, ECHO_YAML, files=ITEMS)
    result = run_prsd(job, tmp_path / "spool", env=ANY_LISTING)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = _rows(result.output("out.txt"))
    names = sorted(r.split()[0] for r in rows)
    assert names == [f"item{i:05d}.txt" for i in range(ITEMS)]
    ahead = sum(1 for r in rows if r.endswith(" ahead"))
    # The mini-batches of every task but the last ones (none left to hand over, and the
    # leader packs tasks of about 0.5 s once it knows a mini-batch's time) see one.
    assert ahead >= 4, rows


def test_a_worker_that_dies_holding_its_next_task_loses_and_repeats_nothing(
    tmp_path: Path,
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    script = f"MARKER = {str(marks / 'died')!r}\n" + DIES_HOLDING_AHEAD
    job = make_job(tmp_path, script, ECHO_YAML, files=ITEMS)
    result = run_prsd(job, tmp_path / "spool", env=ANY_LISTING)
    assert result.returncode == 0, result.stdout + result.stderr
    died = (marks / "died").read_text(encoding="utf-8")  # it did die holding one
    rows = _rows(result.output("out.txt"))
    assert sorted(rows) == [f"item{i:05d}.txt" for i in range(ITEMS)], rows
    report = result.report()
    succeeded = collections.Counter(
        r["mini_batch_id"] for r in report if r["status"] == "succeeded"
    )
    assert len(succeeded) == ITEMS and set(succeeded.values()) == {1}, succeeded
    failed = [r for r in report if r["status"] != "succeeded"]
    assert len(failed) == 1 and failed[0]["status"] == "crashed", failed
    assert "died while running mini-batch" in result.main_logs(), died
