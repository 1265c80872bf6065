"""Bounds of one worker, with real workers: memory, returned size, captured output.

Each exceeded bound is reported as what it is, fails only the mini-batch that
crossed it, and the job's other mini-batches go on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

MEMORY_SCRIPT = """
    import os

    def run(mini_batch):
        for path in mini_batch:
            if os.path.basename(path) == "item00001.txt":
                hog = b"x" * (600 * 1024 * 1024)  # written, so every page is used
                return [len(hog)]
        return [os.path.basename(p) for p in mini_batch]
"""

YAML = """
    input_data: ./data
    mini_batch_size: "1"
    resources: {max_concurrency_per_instance: 1}
    retry_settings: {max_retries: 0, timeout: 60}
    mini_batch_error_threshold: 0
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def test_a_worker_over_its_memory_limit_ends_oom(tmp_path: Path) -> None:
    """PRSD_WORKER_MEMORY_MAX=200MB: allocating 600 MB ends that mini-batch oom; the next succeeds."""
    job = make_job(tmp_path, MEMORY_SCRIPT, YAML, files=2)
    env = {"PRSD_WORKER_MEMORY_MAX": "200MB", "PRSD_GPU_COUNT": "0"}
    result = run_prsd(job, tmp_path / "spool", env=env)
    rows = {r["mini_batch_id"]: r for r in result.report()}
    assert rows["000000000"]["status"] == "succeeded", rows
    assert rows["000000001"]["status"] == "oom", rows
    assert "OOM killer" in rows["000000001"]["error"], rows
    text = result.result_text()
    assert text.startswith("Failed"), text
    assert "First error: mini-batch 000000001" in text, text
    assert "OOM killer ended it at the worker memory limit of 200 MiB" in text, text
    assert "worker memory limit: 209715200 bytes" in result.main_logs()
