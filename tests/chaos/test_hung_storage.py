"""Liveness is progress: a file operation that hangs hands the work to a peer.

The spool is served through a FUSE passthrough (tests/chaos/hangfs.py) that makes one
process's renames of chosen files hang, as a partial NFS or Lustre outage does, while
every other call goes on. A leader whose status rename hangs stops renewing its lease
and the standby finishes the job; an agent whose commit hangs stops heartbeating and
the leader hands its claims to the other agent. Both jobs end with exact output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
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
from tests.fleet import Fleet
from tests.helpers import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO = Path(__file__).resolve().parents[2]


def _serve(backing: Path, mount: Path, control: Path, log: Path) -> subprocess.Popen[bytes]:
    mount.mkdir()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.chaos.hangfs", str(backing), str(mount), str(control)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    wait_until(lambda: os.path.ismount(mount), 30, f"the FUSE mount {mount}")
    return proc


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    """A fleet on tmp_path/backing/spool, its daemons on two hangfs mounts of it: "a" (the
    process that will hang) and "b" (everyone else). Two mounts are two clients: a
    rename hung in one holds that kernel's folder locks only, as on NFS."""
    backing = tmp_path / "backing"
    backing.mkdir()
    control = tmp_path / "control"
    fleet = Fleet(backing / "spool", tmp_path / "daemon-logs")
    servers: list[subprocess.Popen[bytes]] = []
    try:
        servers.extend(
            _serve(backing, tmp_path / side, control, tmp_path / f"{side}.log") for side in "ab"
        )
        yield fleet
    finally:
        control.unlink(missing_ok=True)  # release hung calls, so every process can end
        fleet.close()
        for side, proc in zip(("a", "b"), servers, strict=False):
            subprocess.run(["fusermount3", "-u", "-z", str(tmp_path / side)], check=False)
            proc.terminate()
            proc.wait(timeout=30)


def _views(fleet: Fleet, tmp_path: Path, hung: str, *others: str) -> None:
    fleet.views[hung] = tmp_path / "a" / "spool"
    for name in others:
        fleet.views[name] = tmp_path / "b" / "spool"


def _hang(tmp_path: Path, pid: int, **match: str) -> None:
    control = tmp_path / "control"  # read by both mounts' servers
    control.write_text(json.dumps({"op": "rename", "pid": pid, **match}), encoding="utf-8")


def _some_done(fleet: Fleet, job_id: str) -> bool:
    done = job_dir(fleet, job_id) / "tasks" / "done"
    return done.is_dir() and any(p.is_file() for p in done.rglob("*"))


@pytest.mark.timeout(300)
def test_a_leader_whose_status_write_hangs_gives_the_lease_up(tmp_path: Path, fleet: Fleet) -> None:
    """A hung rename of status.json in the leader: it stops renewing its lease and says
    why; the standby takes over and the job completes with exact output."""
    _views(fleet, tmp_path, "leader-a", "leader-b", "n1")
    a = fleet.leader("leader-a")
    wait_until(lambda: fleet.leader_epoch() == 1, 30, "leader-a to lead")
    fleet.leader("leader-b")
    fleet.agent("n1", "--slots", "2")
    job_id = fleet.submit(make_files_job(tmp_path, "hung", 80, per_mb=0.1))
    wait_until(lambda: _some_done(fleet, job_id), 60, "the first commits")
    _hang(tmp_path, a.pid, name="status.json")
    wait_until(
        lambda: "not renewing the leader lease" in daemon_log(fleet, "leader-a"),
        60,
        "leader-a to say it gives the lease up",
    )
    final = wait_final(fleet, job_id, 120)
    assert final["state"] == "Completed", final
    assert output_lines(fleet, job_id) == expected_lines(80)
    assert fleet.leader_epoch() == 2


@pytest.mark.timeout(300)
def test_an_agent_whose_commit_hangs_stops_heartbeating(tmp_path: Path, fleet: Fleet) -> None:
    """A hung commit rename in one agent: it stops heartbeating and says why; the leader
    requeues its claims to the other agent and the job completes with exact output."""
    _views(fleet, tmp_path, "n1", "leader", "n2")
    fleet.leader()
    n1 = fleet.agent("n1", "--slots", "2")
    fleet.agent("n2", "--slots", "2")
    job_id = fleet.submit(make_files_job(tmp_path, "hungcommit", 80, per_mb=0.1))
    wait_until(lambda: _some_done(fleet, job_id), 60, "the first commits")
    _hang(tmp_path, n1.pid, suffix=".n1")
    wait_until(
        lambda: "no heartbeat while a commit hangs" in daemon_log(fleet, "n1"),
        60,
        "n1 to say it stops heartbeating",
    )
    final = wait_final(fleet, job_id, 120)
    assert final["state"] == "Completed", final
    assert output_lines(fleet, job_id) == expected_lines(80)
    assert "requeued a lost node" in daemon_log(fleet, "leader")
