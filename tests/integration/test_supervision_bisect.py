"""bisect_failed_mini_batches end to end: poison files isolated from a failed mini-batch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

SCRIPT = """
    import os
    POISON = ("item00002.txt", "item00005.txt")
    def run(mini_batch):
        for p in mini_batch:
            if os.path.basename(p) in POISON:
                raise ValueError(f"cannot decode {os.path.basename(p)}")
        return [os.path.basename(p) for p in mini_batch]
"""

YAML = """
    input_data: ./data
    mini_batch_size: "8"
    resources: {{max_concurrency_per_instance: 2}}
    retry_settings: {{max_retries: 1, timeout: 30}}
    bisect_failed_mini_batches: {bisect}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def test_poison_files_are_isolated_and_the_job_goes_on(tmp_path: Path) -> None:
    """Two bad files among 8: each is named alone; the mini-batch still counts as failed."""
    job = make_job(tmp_path, SCRIPT, YAML.format(bisect="true"), files=12)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    assert (r.job / "outputs" / "out.txt").read_text().splitlines() == [
        f"item{i:05d}.txt" for i in range(8, 12)
    ]
    master = (r.logs / "sys" / "master_role.txt").read_text()
    data = job / "data"
    for name in ("item00002.txt", "item00005.txt"):
        assert (
            f"bisect: mini-batch 000000000: {data / name} fails alone: "
            f"ValueError: cannot decode {name}"
        ) in master, master
    assert master.count("fails alone") == 2
    error_txt = (r.logs / "user" / "error.txt").read_text()
    for name in ("item00002.txt", "item00005.txt"):
        assert (
            f"{data / name} (mini-batch 000000000): ValueError: cannot decode {name}"
        ) in error_txt, error_txt
    rows = r.report()
    assert [row["status"] for row in rows if row["mini_batch_id"] == "000000000"] == [
        "failed",
        "failed",
    ], "probes are not attempts of the mini-batch"
    assert "1 failed" in r.result_text()


def test_without_the_option_nothing_is_bisected(tmp_path: Path) -> None:
    """The default: a failed mini-batch is not re-run in halves."""
    job = make_job(tmp_path, SCRIPT, YAML.format(bisect="false"), files=12)
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    assert "bisect" not in (r.logs / "sys" / "master_role.txt").read_text()
    ran = "".join(p.read_text() for p in (r.logs / "sys" / "node" / "n1").glob("process*.txt"))
    assert ran.count("mini-batch 000000000") == 2, "two attempts, no probes"
