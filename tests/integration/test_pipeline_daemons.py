"""Pipelines on real daemons: prsctl submit/status/cancel/retry, leader and node loss."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

from tests.fleet import Fleet
from tests.helpers import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PRSCTL = [sys.executable, "-m", "prsd.cli.prsctl"]


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    f = Fleet(tmp_path / "spool", tmp_path / "daemon-logs")
    yield f
    f.close()


def prsctl(fleet: Fleet, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PRSCTL, *args, "--spool", str(fleet.spool)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


def write_pipeline(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pipeline.yml").write_text(text)
    return folder / "pipeline.yml"


def status(fleet: Fleet, pid: str) -> dict[str, Any]:
    r = prsctl(fleet, "status", pid, "--json")
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


def steps(doc: dict[str, Any]) -> dict[str, str]:
    return {s["step"]: s["state"] for s in doc["steps"]}


def ended(fleet: Fleet, pid: str) -> bool:
    return (fleet.spool / "pipelines" / pid / "final.json").exists()


THREE = """
type: pipeline
name: three
jobs:
  first:
    type: command
    command: echo first > ${{outputs.o}}/first.txt
    outputs: {o: {type: uri_folder}}
  slow:
    type: command
    command: sleep SLEEP; cat ${{inputs.i}}/first.txt > ${{outputs.o}}/slow.txt
    inputs: {i: {path: "${{parent.jobs.first.outputs.o}}"}}
    outputs: {o: {type: uri_folder}}
  score:
    type: parallel
    inputs: {data: {type: uri_folder, path: "${{parent.jobs.slow.outputs.o}}"}}
    input_data: ${{inputs.data}}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def three_steps(tmp_path: Path, sleep: float) -> Path:
    path = write_pipeline(tmp_path / "p", THREE.replace("SLEEP", str(sleep)))
    (tmp_path / "p" / "code").mkdir()
    (tmp_path / "p" / "code" / "score.py").write_text(
        "def run(mb):\n    return [open(p).read().strip() for p in mb]\n"
    )
    return path


def attempts(job: Path) -> list[str]:
    log = job / "logs" / "user" / "std_log.txt"
    return [x for x in log.read_text().splitlines() if x.startswith("[prsd] attempt ")]


def test_submit_status_and_leader_takeover_mid_pipeline(tmp_path: Path, fleet: Fleet) -> None:
    path = three_steps(tmp_path, 6)
    fleet.leader("leader-a")
    wait_until(lambda: fleet.leader_epoch() == 1, 30, "leader-a to lead")
    fleet.leader("leader-b")
    fleet.agent("node1")
    r = prsctl(fleet, "submit", str(path))
    assert r.returncode == 0, r.stderr
    pid = r.stdout.strip()
    wait_until(lambda: steps(status(fleet, pid))["slow"] == "Running", 60, "slow to run")
    doc = status(fleet, pid)
    assert steps(doc) == {"first": "Completed", "slow": "Running", "score": "Waiting"}
    assert doc["kind"] == "pipeline" and doc["state"] == "Running"
    table = prsctl(fleet, "status")
    assert f"{pid} (pipeline)" in table.stdout and "  slow (command)" in table.stdout
    everything = json.loads(prsctl(fleet, "status", "--json").stdout)
    assert [p["pipeline_id"] for p in everything["pipelines"]] == [pid]
    first = doc["steps"][0]
    assert first["succeeded_mbs"] == 1 and first["total_mbs"] == 1 and first["depends_on"] == []
    assert doc["steps"][2]["depends_on"] == ["slow"]
    fleet.kill("leader-a")
    wait_until(lambda: ended(fleet, pid), 120, "the pipeline to end under leader-b")
    doc = status(fleet, pid)
    assert doc["state"] == "Completed", doc
    assert isinstance(doc["elapsed_s"], float) and doc["elapsed_s"] >= 6  # the sleep
    assert steps(doc) == {"first": "Completed", "slow": "Completed", "score": "Completed"}
    jobs = {s["step"]: fleet.spool / "jobs" / s["job_id"] for s in doc["steps"]}
    assert attempts(jobs["first"]) == attempts(jobs["first"])[:1]  # never run again
    assert (jobs["score"] / "outputs" / "out.txt").read_text() == "first\n"
    assert fleet.leader_epoch() >= 2


def test_lost_node_reruns_the_command_step_and_its_log_says_so(
    tmp_path: Path, fleet: Fleet
) -> None:
    path = three_steps(tmp_path, 8)
    fleet.leader("leader")
    fleet.agent("node1")
    r = prsctl(fleet, "submit", str(path))
    pid = r.stdout.strip()
    wait_until(lambda: steps(status(fleet, pid))["slow"] == "Running", 60, "slow to run")
    slow = fleet.spool / "jobs" / status(fleet, pid)["steps"][1]["job_id"]
    node_log = slow / "logs" / "user" / "entry_script_log" / "node1" / "std_log.txt"
    wait_until(node_log.exists, 30, "the command to start on node1")
    fleet.kill("node1")
    fleet.agent("node2")
    wait_until(lambda: ended(fleet, pid), 120, "the pipeline to end on node2")
    assert status(fleet, pid)["state"] == "Completed"
    log = (slow / "logs" / "user" / "std_log.txt").read_text()
    assert "[prsd] node node1" in log and "[prsd] node node2" in log
    assert "[prsd] attempt 2 of step slow" in log
    assert "this is a re-run: 1 earlier attempt(s) did not complete" in log


FAILING = """
type: pipeline
name: flaky
jobs:
  make:
    type: command
    command: echo made > ${{outputs.o}}/made.txt
    outputs: {o: {type: uri_folder}}
  check:
    type: command
    command: test -e MARKER && cat ${{inputs.i}}/made.txt
    inputs: {i: {path: "${{parent.jobs.make.outputs.o}}"}}
    retry_settings: {max_retries: 0}
  after:
    type: command
    command: echo after
    inputs: {i: {path: "${{parent.jobs.make.outputs.o}}"}}
    outputs: {o: {type: uri_folder}}
  last:
    type: command
    command: echo last
    inputs: {i: {path: "${{parent.jobs.after.outputs.o}}"}}
"""


def test_retry_runs_failed_and_skipped_steps_reusing_completed_outputs(
    tmp_path: Path, fleet: Fleet
) -> None:
    marker = tmp_path / "marker"
    path = write_pipeline(tmp_path / "p", FAILING.replace("MARKER", str(marker)))
    fleet.leader("leader")
    fleet.agent("node1")
    pid = prsctl(fleet, "submit", str(path)).stdout.strip()
    wait_until(lambda: ended(fleet, pid), 120, "the pipeline to fail")
    doc = status(fleet, pid)
    assert doc["state"] == "Failed" and doc["exit_code"] == 42
    assert doc["reason"].startswith("step check ended Failed: ")
    first = steps(doc)
    assert first["make"] == "Completed" and first["check"] == "Failed"
    made = {s["step"]: s["job_id"] for s in doc["steps"]}
    marker.write_text("")
    r = prsctl(fleet, "retry", pid)
    assert r.returncode == 0, r.stderr
    new = r.stdout.strip()
    assert "reused: make" in r.stderr
    wait_until(lambda: ended(fleet, new), 120, "the retry to end")
    again = status(fleet, new)
    assert again["state"] == "Completed", again
    ids = {s["step"]: s["job_id"] for s in again["steps"]}
    assert ids["make"] == made["make"]  # reused, not run again
    assert ids["check"] != made["check"]
    for step, state in first.items():
        if state in ("Completed", "Completed with failures"):
            assert ids[step] == made[step]
    assert again["retry_of"] == pid
    logs = prsctl(fleet, "logs", new)
    assert logs.returncode == 0, logs.stderr
    headers = [x for x in logs.stdout.splitlines() if x.startswith("== step ")]
    assert headers == [f"== step {n}: job {ids[n]}" for n in ("make", "check", "after", "last")]


def test_cancel_cancels_the_running_step_and_skips_the_rest(tmp_path: Path, fleet: Fleet) -> None:
    path = three_steps(tmp_path, 60)
    fleet.leader("leader")
    fleet.agent("node1")
    pid = prsctl(fleet, "submit", str(path)).stdout.strip()
    wait_until(lambda: steps(status(fleet, pid))["slow"] == "Running", 60, "slow to run")
    r = prsctl(fleet, "cancel", pid)
    assert r.returncode == 0 and "cancel asked" in r.stdout
    wait_until(lambda: ended(fleet, pid), 60, "the pipeline to end")
    doc = status(fleet, pid)
    assert doc["state"] == "Canceled" and doc["exit_code"] == 43
    assert steps(doc) == {"first": "Completed", "slow": "Canceled", "score": "Skipped"}
    assert [s["reason"] for s in doc["steps"]][2] == "not run: the pipeline was canceled"


def test_a_step_whose_id_was_taken_is_skipped_and_fails_the_pipeline(
    tmp_path: Path, fleet: Fleet
) -> None:
    path = three_steps(tmp_path, 0)
    pid = prsctl(fleet, "submit", str(path)).stdout.strip()
    record = json.loads((fleet.spool / "pipelines" / pid / "pipeline.json").read_text())
    (fleet.spool / "jobs" / record["steps"]["slow"]["job_id"]).mkdir()  # another job's
    fleet.leader("leader")
    fleet.agent("node1")
    wait_until(lambda: ended(fleet, pid), 60, "the pipeline to end")
    doc = status(fleet, pid)
    assert steps(doc) == {"first": "Completed", "slow": "Skipped", "score": "Skipped"}
    assert doc["state"] == "Failed"
    assert "is taken by another job" in doc["steps"][1]["reason"]


def test_prsctl_submit_a_job_file_by_name_with_set(tmp_path: Path, fleet: Fleet) -> None:
    (tmp_path / "j" / "code").mkdir(parents=True)
    (tmp_path / "j" / "data").mkdir()
    (tmp_path / "j" / "code" / "s.py").write_text("def run(mb):\n    return mb\n")
    (tmp_path / "j" / "any-name.yml").write_text(
        "type: parallel\ninput_data: ./data\ntask: {code: ./code, entry_script: s.py}\n"
    )
    r = prsctl(fleet, "submit", str(tmp_path / "j" / "any-name.yml"), "--set", "mini_batch_size=7")
    assert r.returncode == 0, r.stderr
    job_id = r.stdout.strip()
    submitted = fleet.spool / "inbox" / job_id
    assert "mini_batch_size: 7" in (submitted / "job.yaml").read_text()
    assert sorted(p.name for p in submitted.iterdir()) == ["code", "job.yaml", "origin.json"]
    bad = prsctl(
        fleet, "submit", str(tmp_path / "j" / "any-name.yml"), "--set", "retry_setings.timeout=5"
    )
    assert bad.returncode == 2 and "did you mean 'retry_settings'?" in bad.stderr, bad.stderr


SCORED = """
type: pipeline
name: scored
jobs:
  make:
    type: command
    command: for i in $(seq 0 59); do echo $i > ${{outputs.o}}/f$i.txt; done
    outputs: {o: {type: uri_folder}}
  score:
    type: parallel
    inputs: {d: {type: uri_folder, path: "${{parent.jobs.make.outputs.o}}"}}
    input_data: ${{inputs.d}}
    mini_batch_size: "2"
    resources: {max_concurrency_per_instance: 2}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def test_leader_killed_while_a_parallel_step_runs(tmp_path: Path, fleet: Fleet) -> None:
    path = write_pipeline(tmp_path / "p", SCORED)
    (tmp_path / "p" / "code").mkdir()
    (tmp_path / "p" / "code" / "score.py").write_text(
        "import time\ndef run(mb):\n    time.sleep(0.3)\n"
        "    return [open(p).read().strip() for p in mb]\n"
    )
    fleet.leader("leader-a")
    wait_until(lambda: fleet.leader_epoch() == 1, 30, "leader-a to lead")
    fleet.leader("leader-b")
    fleet.agent("node1")
    pid = prsctl(fleet, "submit", str(path)).stdout.strip()

    def scoring() -> bool:
        step = status(fleet, pid)["steps"][1]
        return step["state"] == "Running" and (step.get("succeeded_mbs") or 0) >= 3

    wait_until(scoring, 60, "the parallel step to be under way")
    fleet.kill("leader-a")
    wait_until(lambda: ended(fleet, pid), 120, "the pipeline to end under leader-b")
    doc = status(fleet, pid)
    assert doc["state"] == "Completed", doc
    out = fleet.spool / "jobs" / doc["steps"][1]["job_id"] / "outputs" / "out.txt"
    assert sorted(int(x) for x in out.read_text().split()) == list(range(60))
    assert fleet.leader_epoch() >= 2
