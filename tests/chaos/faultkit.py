"""Shared parts of the fault suite: jobs that are easy to check, and their end states."""

from __future__ import annotations

import json
import os
import textwrap
from typing import TYPE_CHECKING

from tests.helpers import wait_until

if TYPE_CHECKING:
    from pathlib import Path

    from tests.fleet import Fleet

SCRIPT = """
import os, time

def init():
    pass

def run(mini_batch):
    time.sleep(float(os.environ.get("PER_MB_S", "0.02")))
    return [os.path.basename(p) + " " + open(p).read().strip() for p in mini_batch]
"""

YAML = """
type: parallel
name: {name}
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


def make_files_job(
    root: Path, name: str, files: int, *, size: int = 2, per_mb: float = 0.02
) -> Path:
    """A job folder whose output line for file i is ``item<i>.txt <i>``."""
    job = root / name
    (job / "code").mkdir(parents=True)
    (job / "code" / "score.py").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    text = YAML.format(name=name, size=size, per_mb=per_mb)
    (job / "job.yaml").write_text(textwrap.dedent(text), encoding="utf-8")
    data = job / "data"
    data.mkdir()
    for i in range(files):
        (data / f"item{i:05d}.txt").write_text(f"{i}\n", encoding="utf-8")
    return job


def expected_lines(n: int) -> list[str]:
    return [f"item{i:05d}.txt {i}" for i in range(n)]


def job_dir(fleet: Fleet, job_id: str) -> Path:
    return fleet.spool / "jobs" / job_id


def output_lines(fleet: Fleet, job_id: str) -> list[str]:
    out = job_dir(fleet, job_id) / "outputs" / "out.txt"
    return out.read_text(encoding="utf-8").splitlines()


def result_text(fleet: Fleet, job_id: str) -> str:
    return (job_dir(fleet, job_id) / "logs" / "job_result.txt").read_text(encoding="utf-8")


def master_log(fleet: Fleet, job_id: str) -> str:
    path = job_dir(fleet, job_id) / "logs" / "sys" / "master_role.txt"
    return path.read_text(encoding="utf-8", errors="replace")


def wait_final(fleet: Fleet, job_id: str, timeout_s: float = 90) -> dict[str, object]:
    wait_until(lambda: fleet.final(job_id) is not None, timeout_s, f"job {job_id} to end")
    final = fleet.final(job_id)
    assert final is not None
    return final


def report_rows(fleet: Fleet, job_id: str) -> list[str]:
    path = job_dir(fleet, job_id) / "logs" / "sys" / "job_report" / "processed_mini-batches.csv"
    return path.read_text(encoding="utf-8").splitlines()[1:]


def status_json(fleet: Fleet, job_id: str) -> dict[str, object]:
    return dict(json.loads((job_dir(fleet, job_id) / "state" / "status.json").read_bytes()))


def alive(fleet: Fleet, *names: str) -> bool:
    return all(fleet.alive(n) for n in names)


def daemon_log(fleet: Fleet, name: str) -> str:
    return "".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(fleet.logs.glob(f"{name}.*.log"))
    )


def processes_gone(pids: list[int]) -> bool:
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        return False
    return True
