"""Take-over when a deposed leader's task file lands after the new leader renamed pending/.

A leader paused mid-split (SIGSTOP, a VM freeze) may rename one more task file of its
old epoch into ``pending/`` after its successor ran ``reepoch_pending``. Agents claim
no task of an older epoch, so the successor must rename such a task to its own epoch
when its take-over scan adopts it; otherwise that mini-batch waits forever.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from prsd.leader.intake.intake import load_taken_job, take_in
from prsd.leader.run.job import JobDriver
from prsd.leader.run.jobclock import started_path
from prsd.leader.takeover import takeover as takeover_module
from prsd.spool.atomic import write_atomic
from prsd.spool.layout import TaskName
from prsd.spool.opening import open_spool
from prsd.spool.startedrecord import Started
from prsd.submit import submit
from tests.jobkit import make_job

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

SCRIPT = """
    def run(mini_batch):
        return mini_batch
"""

YAML = """
    input_data: ./data
    mini_batch_size: "1"
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def _pending(layout_pending: Path) -> list[TaskName]:
    names = [TaskName.parse(p.name) for p in layout_pending.glob("*/*")]
    return sorted(n for n in names if n is not None)


def test_a_late_task_of_the_old_epoch_is_renamed_at_take_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = open_spool(tmp_path / "spool")
    job_id, _ = submit(make_job(tmp_path, SCRIPT, YAML, files=4), spool)
    layout = take_in(spool, job_id)
    assert layout is not None
    spec = load_taken_job(layout)
    first = JobDriver(layout, spec, epoch=1, now=0.0)
    for _ in range(20):  # a step writes within a time budget: on a loaded machine, a few
        first.step(0.0, [])
        if first.book.split_done:
            break
    assert first.book.split_done
    written = _pending(layout.pending)
    assert written and {t.epoch for t in written} == {1}
    first.abandon()
    # The successor's first renaming finds nothing: the old leader's files land after it.
    monkeypatch.setattr(takeover_module, "reepoch_pending", lambda *args: 0)
    successor = JobDriver(layout, spec, epoch=2, now=1.0, resume=True)
    give_up = time.monotonic() + 30
    while successor.takeover is not None and time.monotonic() < give_up:
        successor.step(1.0, [])  # the take-over looks in a thread of its own
        time.sleep(0.01)
    assert successor.takeover is None, "the take-over never settled"
    successor.abandon()
    after = _pending(layout.pending)
    assert [(t.first_mb, t.epoch) for t in after] == [(t.first_mb, 2) for t in written]


def test_a_resumed_driver_counts_the_jobs_age_from_its_recorded_start(tmp_path: Path) -> None:
    """The job's age survives a take-over: the successor's driver reads
    ``state/started.json`` (written at intake) instead of starting from zero."""
    spool = open_spool(tmp_path / "spool")
    job_id, _ = submit(make_job(tmp_path, SCRIPT, YAML, files=2), spool)
    layout = take_in(spool, job_id)
    assert layout is not None
    spec = load_taken_job(layout)
    started_path(layout).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(started_path(layout), Started(time.time() - 3600).to_json())
    fresh = JobDriver(layout, spec, epoch=1, now=500.0)
    assert fresh.book.started == 500.0  # a job taken in now starts now
    fresh.abandon()
    successor = JobDriver(layout, spec, epoch=2, now=500.0, resume=True)
    try:
        assert 3590 < 500.0 - successor.book.started < 3660
        wall = successor.status.started_wall
        assert wall is not None and abs(wall.timestamp() - (time.time() - 3600)) < 60
    finally:
        successor.abandon()
