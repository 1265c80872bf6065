"""Tasks of many large mini-batches: the agent writes frames while the worker answers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.jobkit import run_prsd

if TYPE_CHECKING:
    from pathlib import Path

SCRIPT = """
import os

def init():
    pass

def run(mini_batch):
    return [os.path.basename(p)[:12] for p in mini_batch]
"""

YAML = """
type: parallel
name: big-tasks
input_data: ./data
mini_batch_size: "100"
resources: {max_concurrency_per_instance: 2}
output_action: append_row
task:
  code: ./code
  entry_script: score.py
"""


def test_packed_tasks_of_long_paths_do_not_deadlock_the_channel(tmp_path: Path) -> None:
    job = tmp_path / "job"
    (job / "code").mkdir(parents=True)
    (job / "code" / "score.py").write_text(SCRIPT, encoding="utf-8")
    (job / "job.yaml").write_text(YAML, encoding="utf-8")
    data = job / "data"
    data.mkdir()
    n = 60_000
    pad = "x" * 100
    for i in range(n):
        (data / f"f{i:06d}-{pad}").touch()
    result = run_prsd(job, tmp_path / "spool", timeout_s=90)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    lines = result.output().read_text(encoding="utf-8").splitlines()
    assert lines == [f"f{i:06d}-xxxx" for i in range(n)]
