"""Epochs that cannot be reused: the epoch files deleted while the leader is paused.

Leader A (epoch 1) is frozen with SIGSTOP while a job runs, and ``leader/epoch-*`` is
deleted. A standby takes over; when A wakes it must step down, so that two leaders
never lead one epoch (before, the standby re-created epoch 1 and both led it to the
end). Case "running": the standby ran before the deletion and remembers epoch 1, so it
takes epoch 2. Case "fresh": the heartbeat is deleted too and the standby starts only
after, re-creating epoch 1; A finds its epoch's file naming another holder.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING

import pytest

from tests.chaos.faultkit import (
    daemon_log,
    expected_lines,
    job_dir,
    make_files_job,
    output_lines,
    wait_final,
)
from tests.helpers import wait_until

if TYPE_CHECKING:
    from pathlib import Path

    from tests.fleet import Fleet


def _some_results(fleet: Fleet, job_id: str) -> bool:
    results = job_dir(fleet, job_id) / "results"
    return results.is_dir() and any(results.rglob("*.res"))


@pytest.mark.timeout(240)
@pytest.mark.parametrize("standby", ["running", "fresh"])
def test_deleted_epochs_never_give_two_leaders_one_epoch(
    tmp_path: Path, fleet: Fleet, standby: str
) -> None:
    """A paused leader whose epoch files were deleted steps down when it wakes; the job
    completes with exact output under the standby."""
    a = fleet.leader("leader-a")
    wait_until(lambda: fleet.leader_epoch() == 1, 30, "leader-a to lead")
    if standby == "running":
        fleet.leader("leader-b")
    fleet.agent("n1", "--slots", "2")
    job_id = fleet.submit(make_files_job(tmp_path, "epochs", 200, per_mb=0.1))
    wait_until(lambda: _some_results(fleet, job_id), 60, "the first results")
    os.kill(a.pid, signal.SIGSTOP)
    leader_dir = fleet.spool / "leader"
    for name in os.listdir(leader_dir):
        if name.startswith("epoch-") or (standby == "fresh" and name == "heartbeat.json"):
            (leader_dir / name).unlink()
    if standby == "fresh":
        fleet.leader("leader-b")
    wait_until(lambda: "leading" in daemon_log(fleet, "leader-b"), 60, "leader-b to lead")
    os.kill(a.pid, signal.SIGCONT)
    wait_until(lambda: "deposed" in daemon_log(fleet, "leader-a"), 30, "leader-a to step down")
    if standby == "running":
        assert fleet.leader_epoch() == 2
        assert "epochs are not reused" in daemon_log(fleet, "leader-b")
    else:
        assert "held by another leader" in daemon_log(fleet, "leader-a")
    final = wait_final(fleet, job_id, 180)
    assert final["state"] == "Completed", final
    assert output_lines(fleet, job_id) == expected_lines(200)
