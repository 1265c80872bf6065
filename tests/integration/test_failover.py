"""Leader failover, lost nodes, drain and idle exit, with real daemons and real kill -9."""

from __future__ import annotations

import signal
import time
from typing import TYPE_CHECKING

import pytest

from tests.fleet import Fleet
from tests.helpers import wait_until
from tests.jobkit import make_job

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

SLOW_SCRIPT = """
import os, time

def init():
    pass

def run(mini_batch):
    time.sleep(float(os.environ.get("PER_MB_S", "0.05")))
    return [os.path.basename(p) + " " + open(p).read().strip() for p in mini_batch]
"""

YAML = """
type: parallel
name: fleet-job
input_data: ./data
mini_batch_size: "{size}"
resources: {{max_concurrency_per_instance: 2}}
retry_settings: {{max_retries: 2, timeout: 60}}
output_action: append_row
append_row_file_name: out.txt
environment_variables: {{PER_MB_S: "{per_mb}"}}
task:
  code: ./code
  entry_script: score.py
"""


def expected_lines(n: int) -> list[str]:
    return [f"item{i:05d}.txt {i}" for i in range(n)]


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    f = Fleet(tmp_path / "spool", tmp_path / "daemon-logs")
    yield f
    f.close()


def output_lines(fleet: Fleet, job_id: str) -> list[str]:
    out = fleet.spool / "jobs" / job_id / "outputs" / "out.txt"
    return out.read_text(encoding="utf-8").splitlines()


def test_leader_killed_mid_job_standby_takes_over(tmp_path: Path, fleet: Fleet) -> None:
    n = 400
    job = make_job(tmp_path, SLOW_SCRIPT, YAML.format(size=4, per_mb=0.03), files=n)
    fleet.leader("leader-a")
    wait_until(lambda: fleet.leader_epoch() == 1, 30, "leader-a to lead")
    fleet.leader("leader-b")
    fleet.agent("node1")
    fleet.agent("node2")
    job_id = fleet.submit(job)
    csv_path = fleet.spool / "jobs" / job_id / "logs" / "sys" / "job_report"
    wait_until(
        lambda: (
            (csv_path / "processed_mini-batches.csv").exists()
            and len((csv_path / "processed_mini-batches.csv").read_text().splitlines()) > 20
        ),
        60,
        "some mini-batches to finish",
    )
    fleet.kill("leader-a")
    wait_until(lambda: fleet.leader_epoch() == 2, 30, "leader-b to take over")
    wait_until(lambda: fleet.final(job_id) is not None, 120, "the job to end")
    final = fleet.final(job_id)
    assert final is not None and final["state"] == "Completed", final
    assert output_lines(fleet, job_id) == expected_lines(n)
    master = (fleet.spool / "jobs" / job_id / "logs" / "sys" / "master_role.txt").read_text()
    assert "leader epoch 2 takes the job over" in master


def test_paused_leader_is_deposed_and_writes_nothing_after(tmp_path: Path, fleet: Fleet) -> None:
    n = 300
    job = make_job(tmp_path, SLOW_SCRIPT, YAML.format(size=3, per_mb=0.03), files=n)
    fleet.leader("leader-a")
    wait_until(lambda: fleet.leader_epoch() == 1, 30, "leader-a to lead")
    fleet.leader("leader-b")
    fleet.agent("node1")
    job_id = fleet.submit(job)
    wait_until(lambda: (fleet.spool / "jobs" / job_id / "tasks").exists(), 30, "the job's tasks")
    fleet.kill("leader-a", signal.SIGSTOP)
    wait_until(lambda: fleet.leader_epoch() == 2, 30, "leader-b to take over from a paused one")
    fleet.kill("leader-a", signal.SIGCONT)
    wait_until(lambda: fleet.final(job_id) is not None, 120, "the job to end")
    final = fleet.final(job_id)
    assert final is not None and final["state"] == "Completed", final
    assert output_lines(fleet, job_id) == expected_lines(n)
    time.sleep(1.0)
    assert fleet.alive("leader-a"), "a deposed leader goes back to standby, it does not crash"
    log = (fleet.logs / "leader-a.1.log").read_text()
    assert "deposed" in log


def test_lost_node_claims_are_requeued_to_a_live_one(tmp_path: Path, fleet: Fleet) -> None:
    n = 200
    job = make_job(tmp_path, SLOW_SCRIPT, YAML.format(size=2, per_mb=0.2), files=n)
    fleet.leader()
    fleet.agent("doomed")
    job_id = fleet.submit(job)
    claimed = fleet.spool / "jobs" / job_id / "tasks" / "claimed" / "doomed"
    wait_until(lambda: claimed.exists() and any(claimed.iterdir()), 60, "doomed to claim")
    fleet.kill("doomed")
    fleet.agent("survivor")
    wait_until(lambda: fleet.final(job_id) is not None, 120, "the job to end")
    final = fleet.final(job_id)
    assert final is not None and final["state"] == "Completed", final
    assert output_lines(fleet, job_id) == expected_lines(n)
    master = (fleet.spool / "jobs" / job_id / "logs" / "sys" / "master_role.txt").read_text()
    assert "node doomed lost" in master
    assert not any(claimed.iterdir())


def test_sigterm_drains_the_agent_and_exits_0(tmp_path: Path, fleet: Fleet) -> None:
    n = 60
    job = make_job(tmp_path, SLOW_SCRIPT, YAML.format(size=2, per_mb=0.5), files=n)
    fleet.leader()
    agent = fleet.agent("node1")
    job_id = fleet.submit(job)
    running = fleet.spool / "jobs" / job_id / "tasks" / "claimed" / "node1"
    wait_until(lambda: running.exists() and any(running.iterdir()), 60, "node1 to claim")
    fleet.kill("node1", signal.SIGTERM)
    assert agent.wait(timeout=60) == 0
    assert not any(running.iterdir()), "a drained node holds no claims"
    fleet.agent("node2")
    wait_until(lambda: fleet.final(job_id) is not None, 120, "the job to end")
    assert output_lines(fleet, job_id) == expected_lines(n)


def test_exit_when_idle_exits_41(fleet: Fleet) -> None:
    fleet.spool.mkdir(parents=True)
    agent = fleet.agent("idle", "--exit-when-idle")
    assert agent.wait(timeout=60) == 41


def test_node_that_cannot_see_the_inputs_claims_nothing(tmp_path: Path, fleet: Fleet) -> None:
    n = 40
    job = make_job(tmp_path, SLOW_SCRIPT, YAML.format(size=2, per_mb=0.01), files=n)
    # This node's mount namespace hides the job folder (like a VM whose share is not mounted).
    hide = f'mount -t tmpfs none {job} && exec "$@"'
    fleet.leader()
    fleet.agent("blind", wrap=["unshare", "-m", "sh", "-c", hide, "sh"])
    job_id = fleet.submit(job)
    master = fleet.spool / "jobs" / job_id / "logs" / "sys" / "master_role.txt"
    wait_until(
        lambda: master.exists() and "node blind cannot see" in master.read_text(),
        60,
        "the leader to name the blind node",
    )
    fleet.agent("sighted")
    wait_until(lambda: fleet.final(job_id) is not None, 120, "the job to end")
    assert output_lines(fleet, job_id) == expected_lines(n)
    done = [p.name for p in (fleet.spool / "jobs" / job_id / "tasks" / "done").glob("*/*")]
    assert done and all(name.endswith(".sighted") for name in done)


def test_instance_count_caps_the_nodes_of_a_job(tmp_path: Path, fleet: Fleet) -> None:
    n = 60
    yaml = YAML.format(size=2, per_mb=0.05).replace(
        "resources: {max_concurrency_per_instance: 2}",
        "resources: {max_concurrency_per_instance: 2, instance_count: 1}",
    )
    job = make_job(tmp_path, SLOW_SCRIPT, yaml, files=n)
    fleet.leader()
    fleet.agent("node1")
    fleet.agent("node2")
    job_id = fleet.submit(job)
    wait_until(lambda: fleet.final(job_id) is not None, 120, "the job to end")
    assert output_lines(fleet, job_id) == expected_lines(n)
    done = [p.name for p in (fleet.spool / "jobs" / job_id / "tasks" / "done").glob("*/*")]
    assert len({name.rsplit(".", 1)[1] for name in done}) == 1, done


def test_prsd_run_beside_a_leader_daemon_serves_its_job_under_it(
    tmp_path: Path, fleet: Fleet
) -> None:
    from tests.jobkit import run_prsd

    n = 30
    job = make_job(tmp_path, SLOW_SCRIPT, YAML.format(size=3, per_mb=0.01), files=n)
    fleet.leader()
    wait_until(lambda: fleet.leader_epoch() == 1, 30, "the daemon to lead")
    result = run_prsd(job, fleet.spool, env={"PRSD_UNSAFE_SPOOL": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "another leader holds this spool's lease" in result.stdout
    assert fleet.leader_epoch() == 1, "prsd run did not depose the daemon"
    assert output_lines(fleet, result.job_id) == expected_lines(n)


def test_jobs_share_the_slots_of_a_node(tmp_path: Path, fleet: Fleet) -> None:
    """Three jobs, two slots: one worker each for two of them, the third waits its turn."""
    n = 40
    jobs = []
    for k in range(3):
        root = tmp_path / f"j{k}"
        root.mkdir()
        jobs.append(make_job(root, SLOW_SCRIPT, YAML.format(size=2, per_mb=0.05), files=n))
    fleet.leader()
    ids = [fleet.submit(job) for job in jobs]
    wait_until(
        lambda: all((fleet.spool / "active" / job_id).exists() for job_id in ids),
        60,
        "both jobs to be taken in",
    )
    fleet.agent("node1", "--slots", "2")
    wait_until(lambda: all(fleet.final(j) is not None for j in ids), 120, "the jobs to end")
    workers = []
    for job_id in ids:
        assert output_lines(fleet, job_id) == expected_lines(n)
        node_logs = fleet.spool / "jobs" / job_id / "logs" / "sys" / "node" / "node1"
        workers.append(len(list(node_logs.glob("process*.txt"))))
    # Two jobs ran on one slot each while the third waited; the job left alone at the
    # end may take both slots.
    assert sorted(workers)[:2] == [1, 1], workers
    assert all(w >= 1 for w in workers), workers
