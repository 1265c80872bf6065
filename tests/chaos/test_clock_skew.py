"""Clock skew and a fast clock decide nothing (issue 20.7): real processes under libfaketime.

Agents whose wall clocks are hours off, and a standby leader whose clock runs at twice
the speed, while a job runs: no node is called stale or lost, no standby takes over,
the job completes with exact output and without a single requeue.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from prsd.read.nodes import leader_view
from prsd.spool.opening import open_spool
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
    from tests.fleet import Fleet

PRSCTL = [sys.executable, "-m", "prsd.cli.prsctl"]


def _faketime(spec: str) -> list[str]:
    tool = shutil.which("faketime")
    assert tool, "faketime is missing: apt-get install -y faketime (.ci/run installs it)"
    _clear_stale_faketime()
    return [tool, "-f", spec]


def _clear_stale_faketime(shm: Path = Path("/dev/shm")) -> None:
    """Remove what killed faketime wrappers left in ``shm``. The wrapper names its
    semaphore and memory by its own pid and refuses to start where they exist
    ("sem_open: File exists"): the daemons it wraps are killed at each test's end, so
    after enough runs a reused pid met its own leftovers and the daemon never started."""
    for path in [*shm.glob("sem.faketime_sem_*"), *shm.glob("faketime_shm_*")]:
        pid = path.name.rsplit("_", 1)[-1]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            path.unlink(missing_ok=True)


def _nodes(fleet: Fleet) -> list[dict[str, object]]:
    done = subprocess.run(
        [*PRSCTL, "nodes", "--json", "--spool", str(fleet.spool)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return list(json.loads(done.stdout)["nodes"])


def _start_skewed_agents(fleet: Fleet, skews: dict[str, str]) -> None:
    """Start the agents under faketime and wait until each has written its heartbeat.

    Both are up before the job, so a loaded machine that starts them slowly cannot let
    the job end before both are seen. Under a loaded CI machine one of them once wrote no
    heartbeat in 60 s (not reproduced here; a process under libfaketime's clock
    interposition that never got going): an agent still unseen after 30 s is killed and
    started once more, and its log is in the message if it still does not show.
    """
    for name, skew in skews.items():
        fleet.agent(name, "--slots", "2", wrap=_faketime(skew))
    for attempt in (1, 2):
        try:
            wait_until(lambda: len(_nodes(fleet)) == len(skews), 30, "both agents")
            return
        except AssertionError:
            seen = {str(n["node_id"]) for n in _nodes(fleet)}
            missing = [name for name in skews if name not in seen]
            logs = {n: sorted(fleet.logs.glob(f"{n}.*.log")) for n in missing}
            tails = {n: p[-1].read_text(errors="replace")[-1500:] for n, p in logs.items() if p}
            if attempt == 2:
                raise AssertionError(f"agents {missing} wrote no heartbeat: {tails}") from None
            for name in missing:
                fleet.kill(name)
                fleet.agent(name, "--slots", "2", wrap=_faketime(skews[name]))


def test_skewed_and_fast_clocks_depose_nobody(tmp_path: Path, fleet: Fleet) -> None:
    """Agents 2 h behind and ahead, a standby at double speed: nothing is requeued."""
    fleet.leader("leader-a")
    wait_until(lambda: fleet.leader_epoch() == 1, 30, "leader-a to lead")
    fleet._start(
        "leader-b", ["leader", "--lease-s", "3", "--heartbeat-s", "0.3"], _faketime("+0 x2")
    )
    _start_skewed_agents(fleet, {"behind": "-2h", "ahead": "+2h"})
    job_id = fleet.submit(make_files_job(tmp_path, "skewed", 240, per_mb=0.05))
    wait_until(
        lambda: set(leader_view(open_spool(fleet.spool, create=False))) >= {"behind", "ahead"},
        30,
        "the leader's view of both nodes",
    )
    rows = _nodes(fleet)
    assert [r["stale"] for r in rows] == [False, False], rows
    behind = json.loads((fleet.spool / "nodes" / "behind.json").read_bytes())["updated_at"]
    skew_s = (datetime.now(UTC) - datetime.fromisoformat(behind)).total_seconds()
    assert skew_s > 3600, f"faketime did not shift the agent's clock: {behind}"
    final = wait_final(fleet, job_id, 120)
    assert final["state"] == "Completed", final
    assert output_lines(fleet, job_id) == expected_lines(240)
    status = json.loads((job_dir(fleet, job_id) / "state" / "status.json").read_bytes())
    assert status["requeues"] == 0, status
    assert fleet.leader_epoch() == 1, daemon_log(fleet, "leader-b")
    assert "requeued a lost node" not in daemon_log(fleet, "leader-a")


def test_a_standby_ten_times_fast_deposes_nobody(tmp_path: Path, fleet: Fleet) -> None:
    """A standby whose clock runs x10 sees the leader silent at once: it says its clock
    is off instead of taking over; no node is presumed lost; exact output, no requeue."""
    fleet.leader("leader-a")
    wait_until(lambda: fleet.leader_epoch() == 1, 30, "leader-a to lead")
    fleet._start(
        "leader-b", ["leader", "--lease-s", "2", "--heartbeat-s", "0.3"], _faketime("+0 x10")
    )
    fleet.agent("n1", "--slots", "2")
    job_id = fleet.submit(make_files_job(tmp_path, "fast", 240, per_mb=0.05))
    wait_until(
        lambda: "faster than the spool's" in daemon_log(fleet, "leader-b"),
        60,
        "the fast standby to say its clock is off",
    )
    final = wait_final(fleet, job_id, 120)
    assert final["state"] == "Completed", final
    assert output_lines(fleet, job_id) == expected_lines(240)
    status = json.loads((job_dir(fleet, job_id) / "state" / "status.json").read_bytes())
    assert status["requeues"] == 0, status
    assert fleet.leader_epoch() == 1, daemon_log(fleet, "leader-b")
    assert fleet.alive("leader-b")
