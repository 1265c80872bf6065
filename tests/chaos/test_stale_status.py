"""A status written by a frozen, deposed leader never wins over the job's end (issue 23.7)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from tests.chaos.faultkit import job_dir, make_files_job, status_json, wait_final
from tests.fleet import Fleet
from tests.helpers import wait_until

PRSCTL = [sys.executable, "-m", "prsd.cli.prsctl"]
PAUSING_LEADER = Path(__file__).with_name("pausing_leader.py")  # the seam the test passes in


def _stopped(pid: int) -> bool:
    return psutil.Process(pid).status() == psutil.STATUS_STOPPED


def _stale_status_landed(tmp_path: Path, fleet: Fleet) -> str | None:
    """Leader A freezes just before it publishes a status, B finishes the job, A wakes:
    the job's id once A's late "Running" lies over the end, None if A's write never
    came (then there is nothing stale to ignore, and the scenario is tried again)."""
    pause = tmp_path / "pause-now"
    a = fleet.leader("leader-a", wrap=[sys.executable, str(PAUSING_LEADER), str(pause)])
    wait_until(lambda: fleet.leader_epoch() == 1, 30, "leader-a to lead")
    fleet.leader("leader-b")
    fleet.agent("n1", "--slots", "4")
    job_id = fleet.submit(make_files_job(tmp_path, "stale", 120, per_mb=0.05))
    wait_until(lambda: job_dir(fleet, job_id).joinpath("state", "status.json").exists(), 60)
    pause.touch()
    wait_until(lambda: not pause.exists() and _stopped(a.pid), 30, "leader-a to freeze")
    assert wait_final(fleet, job_id)["state"] == "Completed"
    # B publishes final.json, then its last status: A must wake after both, or B's
    # status would overwrite A's late one and there would be nothing stale to ignore.
    wait_until(
        lambda: status_json(fleet, job_id).get("state") == "Completed", 30, "B's last status"
    )
    os.kill(a.pid, signal.SIGCONT)
    try:
        wait_until(lambda: status_json(fleet, job_id).get("epoch") == 1, 10, "the stale status")
    except AssertionError:
        return None
    return job_id


def test_frozen_leaders_late_status_loses_to_the_end(tmp_path: Path) -> None:
    """A deposed leader's late "Running" status over a Completed job: prsctl status shows
    the end, and --watch exits."""
    for attempt in range(3):
        fleet = Fleet(tmp_path / f"try{attempt}" / "spool", tmp_path / f"try{attempt}" / "logs")
        try:
            job_id = _stale_status_landed(tmp_path / f"try{attempt}", fleet)
            if job_id is not None:
                _check_status_shows_the_end(fleet, job_id)
                return
        finally:
            fleet.close()
    raise AssertionError("in 3 tries, the frozen leader's late status never landed")


def _check_status_shows_the_end(fleet: Fleet, job_id: str) -> None:
    assert status_json(fleet, job_id)["state"] == "Running"  # what a naive reader would show
    shown = subprocess.run(
        [*PRSCTL, "status", job_id, "--json", "--spool", str(fleet.spool)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    doc = json.loads(shown.stdout)
    assert doc["state"] == "Completed" and doc["stale_status_ignored"] is True, doc
    watched = subprocess.run(
        [*PRSCTL, "status", job_id, "--watch", "--spool", str(fleet.spool)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert watched.returncode == 0, watched.stderr
