"""``prsd run`` where daemons serve the spool: the job is handed to them, progress and
Ctrl-C as when it runs in the process; ``--embedded`` keeps the old way."""

from __future__ import annotations

import json
import signal
from typing import TYPE_CHECKING

import pytest

from tests.fleet import Fleet, serving
from tests.helpers import wait_until
from tests.jobkit import make_job, run_prsd
from tests.liverun import LiveRun

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

SCRIPT = """
import os, time

def run(mini_batch):
    time.sleep(float(os.environ.get("PER_MB_S", "0.01")))
    return [os.path.basename(p) + " " + open(p).read().strip() for p in mini_batch]
"""

YAML = """
type: parallel
name: warm-job
input_data: ./data
mini_batch_size: "2"
resources: {{max_concurrency_per_instance: 2}}
output_action: append_row
append_row_file_name: out.txt
environment_variables: {{PER_MB_S: "{per_mb}"}}
task:
  code: ./code
  entry_script: score.py
"""

HANDED = "a leader and agents serve the spool"


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    """A leader and an agent daemon serving ``tmp_path / "spool"``."""
    with serving(tmp_path) as f:
        yield f


def _done_by(spool: Path, job_id: str) -> set[str]:
    done = (spool / "jobs" / job_id / "tasks" / "done").glob("*/*")
    return {p.name.rsplit(".", 1)[1] for p in done}


def test_prsd_run_hands_its_job_to_the_daemons(tmp_path: Path, fleet: Fleet) -> None:
    n = 20
    job = make_job(tmp_path, SCRIPT, YAML.format(per_mb=0.01), files=n)
    result = run_prsd(job, fleet.spool, "--node-id", "run-node", env={"PRSD_UNSAFE_SPOOL": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert HANDED in result.stdout
    assert "another leader holds" not in result.stdout
    out = fleet.spool / "jobs" / result.job_id / "outputs" / "out.txt"
    lines = sorted(out.read_text(encoding="utf-8").splitlines())
    assert lines == [f"item{i:05d}.txt {i}" for i in range(n)]
    assert _done_by(fleet.spool, result.job_id) == {"daemon-node"}
    assert fleet.leader_epoch() == 1  # the daemon led it; prsd run never took the lease
    assert not (fleet.spool / "nodes" / "run-node.json").exists()


def test_embedded_flag_runs_the_job_in_the_process(tmp_path: Path, fleet: Fleet) -> None:
    job = make_job(tmp_path, SCRIPT, YAML.format(per_mb=0.01), files=6)
    result = run_prsd(
        job, fleet.spool, "--embedded", "--node-id", "run-node", env={"PRSD_UNSAFE_SPOOL": "1"}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert HANDED not in result.stdout
    assert (fleet.spool / "nodes" / "run-node.json").exists()  # its own agent served


def test_ctrl_c_cancels_a_handed_job_and_waits_for_its_end(tmp_path: Path, fleet: Fleet) -> None:
    job = make_job(tmp_path, SCRIPT, YAML.format(per_mb=600), files=4)
    run = LiveRun(job, fleet.spool, env={"PRSD_UNSAFE_SPOOL": "1"})
    try:
        job_id = run.job_id
        run.wait_for_line(HANDED)
        # The first progress line comes once prsd run's loop takes Ctrl-C (before it, a
        # SIGINT is Python's KeyboardInterrupt: the warm daemons claim within 0.1 s).
        run.wait_for_line("mini-batches")
        claimed = fleet.spool / "jobs" / job_id / "tasks" / "claimed"
        wait_until(lambda: claimed.is_dir() and any(claimed.iterdir()), 60, "a claimed task")
        run.proc.send_signal(signal.SIGINT)
        code = run.wait(120)
    finally:
        run.kill()
    assert f"Ctrl-C: canceling job {job_id}" in run.text
    assert code == 43, run.text + run.stderr()
    final = json.loads((fleet.spool / "jobs" / job_id / "state" / "final.json").read_bytes())
    assert final["state"] == "Canceled"
    assert "Traceback" not in run.stderr()
