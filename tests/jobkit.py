"""Building real job folders and running ``prsd run`` on them as a real process."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

PRSD = [sys.executable, "-m", "prsd.daemon"]
PRSCTL = [sys.executable, "-m", "prsd.cli.prsctl"]

ECHO_SCRIPT = """
    def run(mini_batch):
        return mini_batch
"""
"""An entry script whose rows are its mini-batch's items."""

ECHO_YAML = """
    input_data: ./data
    mini_batch_size: "1"
    max_concurrency_per_instance: 1
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""
"""One item per mini-batch, one worker, its rows appended to ``outputs/out.txt``."""


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    spool: Path
    job_id: str

    @property
    def job(self) -> Path:
        return self.spool / "jobs" / self.job_id

    @property
    def logs(self) -> Path:
        return self.job / "logs"

    def output(self, name: str = "parallel_run_step.txt") -> Path:
        return self.job / "outputs" / name

    def report(self) -> list[dict[str, str]]:
        path = self.logs / "sys" / "job_report" / "processed_mini-batches.csv"
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    def result_text(self) -> str:
        return (self.logs / "job_result.txt").read_text(encoding="utf-8")

    def main_logs(self) -> str:
        return "".join(
            p.read_text(encoding="utf-8") for p in (self.logs / "sys" / "node").glob("*/_main.txt")
        )


def make_job(
    root: Path,
    script: str,
    yaml_text: str,
    *,
    files: int = 0,
    input_dir: str = "data",
    script_name: str = "score.py",
) -> Path:
    """A job folder: job.yaml, code/<script>, and ``files`` small input files."""
    job = root / "job"
    (job / "code").mkdir(parents=True)
    (job / "code" / script_name).write_text(textwrap.dedent(script), encoding="utf-8")
    (job / "job.yaml").write_text(textwrap.dedent(yaml_text), encoding="utf-8")
    if files:
        data = job / input_dir
        data.mkdir(parents=True)
        for i in range(files):
            (data / f"item{i:05d}.txt").write_text(f"{i}\n", encoding="utf-8")
    return job


def run_prsd(
    job_dir: Path,
    spool: Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout_s: float = 150,
) -> RunResult:
    """``prsd run JOB_DIR --spool SPOOL``; the job id is read from its first line."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(
        [*PRSD, "run", str(job_dir), "--spool", str(spool), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=full_env,
        check=False,
    )
    job_id = ""
    first = proc.stdout.splitlines()[0] if proc.stdout else ""
    if first.startswith("job "):
        job_id = first.split()[1]
    return RunResult(proc.returncode, proc.stdout, proc.stderr, spool, job_id)


def prsctl(
    spool: Path, *args: str, timeout_s: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``prsctl ARGS --spool SPOOL`` as a real process, output captured, exit code unchecked."""
    return subprocess.run(
        [*PRSCTL, *args, "--spool", str(spool)],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        env=env,
    )
