"""The job's first task is written as soon as its planner sends the first mini-batch.

A planner that is still listing a big input sends nothing for a while; a split step
that found nothing used to wait for the leader's next tick (0.25 s) before looking
again. Until the first mini-batch arrives (and for at most FIRST_TASK_EAGER_S after
the job began) a step that found nothing says "behind", so the leader steps again at
once. A real planner process (a child that sleeps, then sends real records) feeds a
real driver's task table.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import TYPE_CHECKING

from prsd.inputsplit.planner import plan_mini_batches
from prsd.leader.intake.intake import load_taken_job, take_in
from prsd.leader.plan.planstream import HelperPlan
from prsd.leader.plan.planwire import Record, encode
from prsd.leader.plan.splitting import FIRST_TASK_EAGER_S, Plan, split_step
from prsd.leader.run.job import JobDriver
from prsd.spool.opening import open_spool
from prsd.submit import submit
from tests.jobkit import ECHO_SCRIPT, ECHO_YAML, make_job

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.wire.records import MiniBatch


def _late_planner(mbs: list[MiniBatch], delay_s: float) -> HelperPlan:
    """A real process that sends nothing for ``delay_s``, then the whole plan."""
    lines = b"".join(encode(Record("mb", mb=mb)) for mb in mbs) + encode(Record("end"))
    code = (
        f"import sys, time; time.sleep({delay_s}); "
        f"sys.stdout.buffer.write({lines!r}); sys.stdout.flush()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    return HelperPlan(proc, on_skip=lambda p, w: None, on_order=lambda o: None, name="x", who="t")


def _driver(tmp_path: Path) -> JobDriver:
    spool = open_spool(tmp_path / "spool")
    job_id, _ = submit(make_job(tmp_path, ECHO_SCRIPT, ECHO_YAML, files=3), spool)
    layout = take_in(spool, job_id)
    assert layout is not None
    return JobDriver(layout, load_taken_job(layout), epoch=1, now=0.0)


def test_the_first_task_is_written_at_the_step_after_its_mini_batch_arrives(
    tmp_path: Path,
) -> None:
    driver = _driver(tmp_path)
    mbs = list(plan_mini_batches(driver.spec))
    assert len(mbs) == 3
    plan = Plan(driver.spec, driver.layout, lambda p, w: None, _late_planner(mbs, 0.6))
    try:
        steps = 0
        started = time.monotonic()
        while driver.table.written == 0 and time.monotonic() - started < 20:
            behind = split_step(plan, driver.table, driver.book, driver.logs, 0.1)
            steps += 1
            if driver.table.written == 0:
                # nothing yet: the leader must step again at once, not at its next tick
                assert behind, f"step {steps} found nothing and let the leader wait a tick"
        assert driver.table.written > 0, "the first mini-batch never became a task"
        assert steps > 1, "the planner sent at once: the test saw no wait"
        for _ in range(100):
            if driver.book.split_done:
                break
            split_step(plan, driver.table, driver.book, driver.logs, 0.2)
        assert driver.book.split_done
        assert len(driver.book.ledger) == 3, "every mini-batch planned, once"
    finally:
        plan.close()
        driver.abandon()


def test_a_planner_silent_past_the_eager_window_lets_the_leader_tick(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    plan = Plan(driver.spec, driver.layout, lambda p, w: None, _late_planner([], 60.0))
    try:
        now = driver.book.started + 0.1
        assert split_step(plan, driver.table, driver.book, driver.logs, now)
        late = driver.book.started + FIRST_TASK_EAGER_S + 0.1
        assert not split_step(plan, driver.table, driver.book, driver.logs, late)
        assert driver.table.written == 0
    finally:
        plan.close()
        driver.abandon()
