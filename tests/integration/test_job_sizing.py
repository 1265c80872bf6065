"""A job taken in is split for the fleet the leader last saw, from its first tasks.

Real heartbeat files of three nodes (one draining) on a real spool, the leader's
:class:`~prsd.leader.nodewatch.NodeWatch` reading them, a real job driver writing its
first task files: before any mini-batch is measured the split stays two tasks per
worker slot ahead, so the number written says how many slots the job was sized for.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from prsd.leader.intake.intake import load_taken_job, take_in
from prsd.leader.nodewatch import NodeWatch
from prsd.leader.plan.packing import unmeasured_lookahead
from prsd.leader.run.job import JobDriver
from prsd.spool.heartbeat import write_heartbeat
from prsd.spool.heartbeatrecord import Heartbeat
from prsd.spool.opening import open_spool
from prsd.submit import submit
from tests.jobkit import ECHO_SCRIPT, make_job

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import SpoolLayout

YAML = """
input_data: ./data
mini_batch_size: "1"
max_concurrency_per_instance: 6
task:
  code: ./code
  entry_script: score.py
  append_row_to: ./outputs/out.txt
"""


def _beat(spool: SpoolLayout, node_id: str, slots: int, *, draining: bool = False) -> None:
    write_heartbeat(
        spool,
        Heartbeat(
            node_id, 1, "boot", 1, "host", "t0", "t0", slots=slots, gpus=0, draining=draining
        ),
    )


def _first_tasks(tmp_path: Path, watch: NodeWatch | None, slots: int) -> int:
    """The task files the job's split writes before it waits for a measurement, stepped
    (its clock held at the start) until it has written ``unmeasured_lookahead(slots)``
    or 10 s passed, then stepped three times more: a split sized for more slots goes on.
    A step writes within a time budget, and the planner streams the input's names in,
    so one step alone may write fewer on a loaded machine."""
    spool = open_spool(tmp_path / "spool")
    job_id, _ = submit(make_job(tmp_path, ECHO_SCRIPT, YAML, files=200), spool)
    layout = take_in(spool, job_id)
    assert layout is not None
    driver = JobDriver(layout, load_taken_job(layout), epoch=1, now=0.0)
    try:
        if watch is not None:
            watch.size(driver)
        end = time.monotonic() + 10
        while len(driver.table) < unmeasured_lookahead(slots) and time.monotonic() < end:
            driver.step(0.0, [])
            time.sleep(0.01)
        for _ in range(3):
            driver.step(0.0, [])
        return len(driver.table)
    finally:
        driver.abandon()


def test_a_job_taken_in_is_split_for_the_live_fleet_at_once(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    _beat(spool, "n1", 8)
    _beat(spool, "n2", 4)
    _beat(spool, "n3", 16, draining=True)  # takes no new work: not counted
    watch = NodeWatch(spool, lease_s=30.0)
    watch.start(0.0)
    assert watch.look(5.0, [], presume=False) is not None
    assert watch.live == [8, 4]
    # 6 slots on n1 (the job's max_concurrency_per_instance) and 4 on n2.
    assert _first_tasks(tmp_path, watch, 10) == unmeasured_lookahead(10) == 20
    # Not sized (as before the leader's first look): one node's concurrency.
    other = tmp_path / "unsized"
    other.mkdir()
    assert _first_tasks(other, None, 6) == unmeasured_lookahead(6) == 12


def test_before_the_first_look_a_job_keeps_its_own_concurrency(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    _beat(spool, "n1", 8)
    watch = NodeWatch(spool, lease_s=30.0)
    watch.start(0.0)  # a new term: nothing seen yet
    assert watch.live is None
    assert _first_tasks(tmp_path, watch, 6) == unmeasured_lookahead(6) == 12
