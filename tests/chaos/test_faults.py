"""Faults of one job end that job (or skip the bad item) while the daemons serve the rest.

Real daemons on a real spool: a leader and an agent, a healthy job that must complete
with exact output meanwhile, and jobs broken in the ways issue 20 and 23 list.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING

from tests.chaos.faultkit import (
    daemon_log,
    expected_lines,
    job_dir,
    make_files_job,
    master_log,
    output_lines,
    result_text,
    wait_final,
)
from tests.helpers import wait_until
from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

    from tests.fleet import Fleet


def _running(fleet: Fleet, job_id: str) -> bool:
    report = job_dir(fleet, job_id) / "logs" / "sys" / "job_report" / "processed_mini-batches.csv"
    try:
        return len(report.read_text(encoding="utf-8").splitlines()) > 2
    except OSError:
        return False


def test_broken_jobs_fail_alone(tmp_path: Path, fleet: Fleet) -> None:
    """Undecodable and special input names, a deleted job folder, a renamed state/: each
    ends its own job clearly; the daemons live and a healthy job completes exactly."""
    fleet.leader()
    fleet.agent("n1", "--slots", "8")
    healthy = make_files_job(tmp_path, "healthy", 120, per_mb=0.05)
    odd = make_files_job(tmp_path, "odd-names", 6)
    os.close(os.open(bytes(odd / "data") + b"/bad\xff-name.txt", os.O_CREAT | os.O_WRONLY))
    os.mkfifo(odd / "data" / "a-fifo")
    doomed = make_files_job(tmp_path, "doomed", 200, per_mb=0.1)
    stateless = make_files_job(tmp_path, "stateless", 200, per_mb=0.1)
    h_id = fleet.submit(healthy)
    o_id = fleet.submit(odd)
    d_id = fleet.submit(doomed)
    s_id = fleet.submit(stateless)
    wait_until(lambda: _running(fleet, d_id) and _running(fleet, s_id), 60, "jobs to run")
    # A job folder replaced mid-run, and another job's state/ renamed away.
    os.rename(job_dir(fleet, d_id), tmp_path / "doomed-moved-away")  # noqa: TID251 - the fault under test
    os.rename(job_dir(fleet, s_id) / "state", job_dir(fleet, s_id) / "state.gone")  # noqa: TID251 - the fault

    assert wait_final(fleet, h_id)["state"] == "Completed"
    assert output_lines(fleet, h_id) == expected_lines(120)

    final = wait_final(fleet, o_id)
    assert final["state"] == "Completed", final
    assert output_lines(fleet, o_id) == expected_lines(6)
    log = master_log(fleet, o_id)
    assert "bad\\xff-name.txt" in log and "not valid UTF-8" in log, log
    assert "a-fifo" in log and "not a regular file" in log, log

    final = wait_final(fleet, s_id)
    assert final["state"] == "Failed", final
    first = result_text(fleet, s_id).splitlines()
    assert first[0] == "Failed", first
    assert f"jobs/{s_id}/state/ is missing" in first[1], first
    wait_until(lambda: not (fleet.spool / "active" / d_id).exists(), 60, "the vanished job to end")
    assert fleet.alive("leader") and fleet.alive("n1")
    again = fleet.submit(make_files_job(tmp_path, "after", 10))
    assert wait_final(fleet, again)["state"] == "Completed"


def test_garbage_spec_at_resume_fails_that_job(tmp_path: Path, fleet: Fleet) -> None:
    """A spec.json that is ``{}`` or garbage when a restarted leader and agent resume the
    job: that job fails saying so, the daemons stay up and another job completes."""
    fleet.leader()
    fleet.agent("n1", "--slots", "8")
    empty = make_files_job(tmp_path, "empty-spec", 200, per_mb=0.1)
    garbage = make_files_job(tmp_path, "garbage-spec", 200, per_mb=0.1)
    e_id = fleet.submit(empty)
    g_id = fleet.submit(garbage)
    wait_until(lambda: _running(fleet, e_id) and _running(fleet, g_id), 60, "jobs to run")
    fleet.kill("leader")
    fleet.kill("n1")
    (job_dir(fleet, e_id) / "spec.json").write_text("{}", encoding="utf-8")
    (job_dir(fleet, g_id) / "spec.json").write_bytes(b"\xff\xfe not json")
    healthy = fleet.submit(make_files_job(tmp_path, "healthy", 40))
    fleet.agent("n1", "--slots", "8")
    fleet.leader()
    for job_id in (e_id, g_id):
        final = wait_final(fleet, job_id)
        assert final["state"] == "Failed", final
        lines = result_text(fleet, job_id).splitlines()
        assert lines[0] == "Failed" and "spec.json is not a job spec" in lines[1], lines
        said = (job_dir(fleet, job_id) / "logs" / "job_error.txt").read_text().splitlines()
        assert "spec.json is not a job spec" in said[0] and said[1].startswith("Full text: ")
    assert wait_final(fleet, healthy)["state"] == "Completed"
    assert output_lines(fleet, healthy) == expected_lines(40)
    assert fleet.alive("leader") and fleet.alive("n1"), daemon_log(fleet, "leader")
    fleet.kill("leader", signal.SIGTERM)


def _pending(fleet: Fleet, job_id: str) -> list[Path]:
    root = job_dir(fleet, job_id) / "tasks" / "pending"
    return sorted(p for p in root.glob("*/*") if not p.name.startswith("."))


def test_unreadable_task_is_planned_again(tmp_path: Path, fleet: Fleet) -> None:
    """A queued task file that cannot be parsed: the agent voids it, the leader plans its
    mini-batches again, and the job completes with exact output (no progress timeout)."""
    fleet.leader()
    job_id = fleet.submit(make_files_job(tmp_path, "torn", 40, size=2))
    healthy = fleet.submit(make_files_job(tmp_path, "healthy", 40))
    wait_until(lambda: len(_pending(fleet, job_id)) >= 3, 60, "tasks to be queued")
    victim = _pending(fleet, job_id)[1]
    victim.write_bytes(b"\0\0 torn")
    fleet.agent("n1", "--slots", "4")
    final = wait_final(fleet, job_id)
    assert final["state"] == "Completed", final
    assert output_lines(fleet, job_id) == expected_lines(40)
    assert list((job_dir(fleet, job_id) / "tasks" / "void").iterdir())
    assert "planned again" in master_log(fleet, job_id)
    assert wait_final(fleet, healthy)["state"] == "Completed"
    assert output_lines(fleet, healthy) == expected_lines(40)


FAIL_ONE = """
import os, time

def run(mini_batch):
    time.sleep(0.02)
    names = [os.path.basename(p) for p in mini_batch]
    if "item00030.txt" in names:
        time.sleep(1.0)  # whichever task an agent claims first, others succeed meanwhile
        raise RuntimeError("this one always fails")
    return [n + " " + open(p).read().strip() for n, p in zip(names, mini_batch)]
"""


def test_failed_job_keeps_what_succeeded(tmp_path: Path) -> None:
    """A job failed by its threshold still publishes the succeeded mini-batches' rows,
    each once and in order, and its result names that output (Azure keeps them)."""
    yaml_text = """
    type: parallel
    name: partial
    input_data: ./data
    mini_batch_size: "1"
    resources: {max_concurrency_per_instance: 2}
    retry_settings: {max_retries: 0, timeout: 60}
    mini_batch_error_threshold: 0
    output_action: append_row
    append_row_file_name: out.txt
    task:
      code: ./code
      entry_script: score.py
    """
    job = make_job(tmp_path, FAIL_ONE, yaml_text, files=60)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 42, r.stderr + r.stdout
    succeeded = sorted(
        int(row["mini_batch_id"]) for row in r.report() if row["status"] == "succeeded"
    )
    assert succeeded and 30 not in succeeded
    lines = r.output("out.txt").read_text(encoding="utf-8").splitlines()
    assert lines == [f"item{i:05d}.txt {i}" for i in succeeded]
    assert f"Output: {r.output('out.txt')}" in r.result_text()
