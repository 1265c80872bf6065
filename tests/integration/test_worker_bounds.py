"""Bounds of one worker, with real workers: memory, returned size, captured output.

Each exceeded bound is reported as what it is, fails only the mini-batch that
crossed it, and the job's other mini-batches go on.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from prsd.agent.outcap import cut_notice
from prsd.spool.opening import open_spool
from tests.fleet import Fleet
from tests.helpers import wait_until
from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

PRSCTL = [sys.executable, "-m", "prsd.cli.prsctl"]

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


@pytest.mark.parametrize(
    ("env", "key"),
    [
        ({"PRSD_WORKER_MEMORY_MAX": "200MB"}, ""),
        ({"PRSD_WORKER_MEMORY_MAX": "2G"}, "    resources: {max_memory_per_worker: 200M}\n"),
    ],
    ids=["agent-setting", "job-key"],
)
def test_a_worker_over_its_memory_limit_ends_oom(
    tmp_path: Path, env: dict[str, str], key: str
) -> None:
    """A 200 MB limit (the node's, or the job's tighter one): 600 MB ends that mini-batch oom."""
    yaml = YAML.replace("    resources: {max_concurrency_per_instance: 1}\n", key)
    job = make_job(tmp_path, MEMORY_SCRIPT, yaml, files=2)
    result = run_prsd(job, tmp_path / "spool", env={**env, "PRSD_GPU_COUNT": "1"})
    rows = {r["mini_batch_id"]: r for r in result.report()}
    assert rows["000000000"]["status"] == "succeeded", rows
    assert rows["000000001"]["status"] == "oom", rows
    assert "OOM killer" in rows["000000001"]["error"], rows
    text = result.result_text()
    assert text.startswith("Failed"), text
    assert "First error: mini-batch 000000001" in text, text
    assert "OOM killer ended it at the worker memory limit of 200 MiB" in text, text
    assert "worker memory limit: 209715200 bytes" in result.main_logs()


LIST_SCRIPT = """
    import os

    def run(mini_batch):
        return [os.path.basename(p) for p in mini_batch]
"""

CONCURRENCY_YAML = """
    input_data: ./data
    mini_batch_size: "1"
    resources: {{{resources}}}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def _drop(spool: Path, root: Path, name: str, resources: str) -> None:
    """A job folder written beside the inbox and renamed in (the leader reads it as is)."""
    yaml = CONCURRENCY_YAML.format(resources=resources)
    job = make_job(root / name, LIST_SCRIPT, yaml, files=4)
    job.rename(spool / "inbox" / name)


BAD_RESOURCES = {
    "huge": ("max_concurrency_per_instance: 1000000000", "from 1 to 1024"),
    "large": ("max_concurrency_per_instance: 100000", "from 1 to 1024"),
    "tiny": ("max_memory_per_worker: 1M", "expected at least 64M"),
}


def test_absurd_bounds_fail_their_jobs_and_a_large_one_is_clamped(tmp_path: Path) -> None:
    """Absurd worker counts and memory fail at load naming the bound; 1000 runs on the slot cap."""
    fleet = Fleet(tmp_path / "spool", tmp_path / "logs")
    fleet.env.update(PRSD_GPU_COUNT="0", PRSD_MAX_WORKERS_PER_NODE="2")
    open_spool(fleet.spool)
    try:
        fleet.leader()
        fleet.agent("n1")
        good = fleet.submit(make_job(tmp_path / "good", LIST_SCRIPT, YAML_GOOD, files=6))
        for name, (resources, _) in BAD_RESOURCES.items():
            _drop(fleet.spool, tmp_path, name, resources)
        _drop(fleet.spool, tmp_path, "clamped", "max_concurrency_per_instance: 1000")
        wait_until(lambda: fleet.final(good) is not None, 120, "the healthy job to end")
        jobs = fleet.spool / "jobs"
        wait_until(lambda: len(list(jobs.glob("*/state/final.json"))) == 5, 120, "every job to end")
        results = {
            j.name: (j / "logs" / "job_result.txt").read_text(encoding="utf-8")
            for j in jobs.iterdir()
            if not j.name.startswith(".")  # .ids: the leader's id registry
        }
        assert results[good].startswith("Completed"), results[good]
        failed = {j: r for j, r in results.items() if r.startswith("Failed")}
        assert len(failed) == 3, results
        reasons = [text.splitlines()[1] for text in failed.values()]
        for resources, why in BAD_RESOURCES.values():
            key = f"resources.{resources.split(':')[0]}"
            assert any(key in r and why in r for r in reasons), (key, reasons)
        for job_id in failed:
            status = subprocess.run(
                [*PRSCTL, "status", job_id, "--spool", str(fleet.spool)],
                capture_output=True,
                text=True,
                check=False,
                timeout=60,
            ).stdout
            assert any(why in status for _, why in BAD_RESOURCES.values()), status
        (clamped,) = [j for j, r in results.items() if j != good and r.startswith("Completed")]
        main_log = (jobs / clamped / "logs" / "sys" / "node" / "n1" / "_main.txt").read_text()
        assert "max_concurrency_per_instance 1000 is more than this node's slot cap 2" in main_log
        assert "process002" not in main_log  # never more than 2 workers started
        assert fleet.alive("leader") and fleet.alive("n1")
    finally:
        fleet.close()


YAML_GOOD = """
    input_data: ./data
    mini_batch_size: "1"
    resources: {max_concurrency_per_instance: 1}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


RESULT_SCRIPT = """
    import os

    def run(mini_batch):
        name = os.path.basename(mini_batch[0])
        if name == "item00000.txt":
            return ["row"] * 5000
        if name == "item00001.txt":
            return ["x" * (2 * 1024 * 1024)]
        return [name]
"""


def test_a_result_over_the_caps_fails_naming_the_cap(tmp_path: Path) -> None:
    """Too many rows or too many bytes fail that attempt with the cap's name; nothing is written."""
    job = make_job(
        tmp_path, RESULT_SCRIPT, YAML.replace("    mini_batch_error_threshold: 0\n", ""), files=3
    )
    env = {"PRSD_MAX_RESULT_ROWS": "1000", "PRSD_MAX_RESULT_BYTES": "1MB", "PRSD_GPU_COUNT": "0"}
    result = run_prsd(job, tmp_path / "spool", env=env)
    rows = {r["mini_batch_id"]: r for r in result.report()}
    assert rows["000000000"]["status"] == "failed", rows
    assert "5000 rows" in rows["000000000"]["error"], rows
    assert "cap of 1000 rows per mini-batch (PRSD_MAX_RESULT_ROWS)" in rows["000000000"]["error"]
    assert rows["000000001"]["status"] == "failed", rows
    assert (
        "cap of 1048576 bytes per mini-batch (PRSD_MAX_RESULT_BYTES)" in rows["000000001"]["error"]
    )
    assert rows["000000002"]["status"] == "succeeded", rows
    assert result.output("out.txt").read_text() == "item00002.txt\n"


PRINT_SCRIPT = """
    import sys, time

    def run(mini_batch):
        chunk = "y" * (1024 * 1024 - 1) + "\\n"
        for _ in range(400):  # 400 MB
            sys.stdout.write(chunk)
            sys.stdout.flush()
        time.sleep(0.5)  # a cut of the file (every 0.2 s) is not under way for the last line
        sys.stdout.write("the last line\\n")
        return [len(mini_batch)]
"""


def test_captured_output_keeps_its_tail_under_the_cap(tmp_path: Path) -> None:
    """400 MB printed with PRSD_MAX_CAPTURED_OUTPUT=4MB: the files stay small, the tail is kept."""
    job = make_job(tmp_path, PRINT_SCRIPT, YAML, files=1)
    env = {"PRSD_MAX_CAPTURED_OUTPUT": "4MB", "PRSD_GPU_COUNT": "0"}
    result = run_prsd(job, tmp_path / "spool", env=env)
    assert result.result_text().startswith("Completed"), result.result_text()
    (stdout,) = result.logs.glob("user/stdout/*/process000.stdout.txt")
    rotated = stdout.with_name(stdout.name + ".1")
    total = stdout.stat().st_size + rotated.stat().st_size
    assert total < 64 * 1024**2, total  # not 400 MB: at most ~2 x 4 MB and one interval's worth
    # The worker keeps writing while the file is cut: its next write may come before the line.
    text, tail = stdout.read_text(), rotated.read_text()
    assert "[prsd] output was truncated here: over the 4 MiB cap" in text, text[:200]
    assert text.endswith("\nthe last line\n"), text[-200:]
    # The tail of the 400 MB (maybe cut mid-write). Under load a cut can come while the
    # file holds little past an earlier cut's line, and the worker's writes and that line
    # interleave (prsd/agent/outcap.py): the line may then sit inside the copied tail.
    notice = cut_notice(4 * 1024**2, stdout.name).decode()
    assert tail[-4096:].replace(notice, "").strip("y\n") == "", tail[-4096:][:300]
    # The last 4 MiB, and what the worker wrote while they were copied.
    assert rotated.stat().st_size >= 4 * 1024**2
