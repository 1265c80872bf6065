"""A status written by a frozen, deposed leader never wins over the job's end.

Leader A freezes (SIGSTOP) just before it publishes a status; B takes over and ends the
job; A wakes. A's late status is refused by the epoch fence (status.json keeps B's
epoch), final.json carries the counts, and prsctl status and --watch show the end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from tests.chaos.faultkit import daemon_log, job_dir, make_files_job, status_json, wait_final
from tests.fleet import Fleet
from tests.helpers import wait_until

PRSCTL = [sys.executable, "-m", "prsd.cli.prsctl"]
PAUSING_LEADER = Path(__file__).with_name("pausing_leader.py")  # the seam the test passes in


def _stopped(pid: int) -> bool:
    return psutil.Process(pid).status() == psutil.STATUS_STOPPED


def _late_status_refused(tmp_path: Path, fleet: Fleet) -> str | None:
    """Leader A freezes just before it publishes a status, B finishes the job, A wakes
    and tries to write its status; the job's id, None if A's write never came (then
    there is nothing late to refuse, and the scenario is tried again)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
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
    wait_until(
        lambda: status_json(fleet, job_id).get("state") == "Completed", 30, "B's last status"
    )
    os.kill(a.pid, signal.SIGCONT)
    try:
        wait_until(lambda: _late_write_done(fleet, job_id), 30, "A's late write")
    except AssertionError:
        doc = status_json(fleet, job_id)
        assert doc.get("epoch") == 2 and doc.get("state") == "Completed", doc
        return None  # the end stands; A never came to its write
    return job_id


def _late_write_done(fleet: Fleet, job_id: str) -> bool:
    """A refused its write (the fence), or its document landed (A was woken, or frozen,
    between the fence's check and its rename: readers then correct it from final.json)."""
    refused = "status not written" in daemon_log(fleet, "leader-a")
    return refused or status_json(fleet, job_id).get("epoch") == 1


def test_frozen_leaders_late_status_is_fenced_off(tmp_path: Path) -> None:
    """A deposed leader's late "Running" status never replaces the end: status.json keeps
    the newer epoch, final.json has the counts, prsctl status shows them, --watch exits."""
    for attempt in range(3):
        fleet = Fleet(tmp_path / f"spool{attempt}", tmp_path / f"logs{attempt}")
        try:
            job_id = _late_status_refused(tmp_path / f"try{attempt}", fleet)
            if job_id is not None:
                _check_the_end(fleet, job_id)
                return
            a_log = daemon_log(fleet, "leader-a")[-1500:]
        finally:
            fleet.close()
    raise AssertionError(f"in 3 tries A's late write never came; A's last log: {a_log}")


def _check_the_end(fleet: Fleet, job_id: str) -> None:
    """status.json keeps the newer epoch, final.json the counts; prsctl shows the end."""
    if "status not written" in daemon_log(fleet, "leader-a"):
        doc = status_json(fleet, job_id)
        assert doc["state"] == "Completed" and doc["epoch"] == 2, doc
    final = fleet.final(job_id)
    assert final is not None
    counts = final["counts"]
    assert isinstance(counts, dict)
    assert counts["succeeded_mbs"] == counts["total_mbs"] == 60, final
    _check_status_shows_the_end(fleet, job_id)


def _check_status_shows_the_end(fleet: Fleet, job_id: str) -> None:
    shown = subprocess.run(
        [*PRSCTL, "status", job_id, "--json", "--spool", str(fleet.spool)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    doc = json.loads(shown.stdout)
    assert doc["state"] == "Completed" and doc["succeeded_mbs"] == 60, doc
    watched = subprocess.run(
        [*PRSCTL, "status", job_id, "--watch", "--spool", str(fleet.spool)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert watched.returncode == 0, watched.stderr
