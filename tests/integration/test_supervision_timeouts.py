"""Job-wide clocks and worker options end to end: progress timeout, profiling, logging level."""

from __future__ import annotations

import pstats
import re
from typing import TYPE_CHECKING

from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from pathlib import Path

YAML = """
    input_data: ./data
    mini_batch_size: "1"
    resources: {{max_concurrency_per_instance: 2}}
    retry_settings: {{max_retries: 0, timeout: 60}}
    logging_level: {level}
    task:
      code: ./code
      entry_script: score.py
      program_arguments: "{args}"
      append_row_to: ./outputs/out.txt
"""

STALLS = """
    import time
    def run(mini_batch):
        time.sleep(30)
        return mini_batch
"""

LOGS = """
    import logging
    from azureml_user.parallel_run import EntryScript
    def init():
        EntryScript().logger.info("entry info from init")
        EntryScript().logger.warning("entry warning from init")
    def run(mini_batch):
        logging.getLogger("user.model").debug("root debug from run")
        logging.getLogger("user.model").warning("root warning from run")
        return [len(p) for p in mini_batch]
"""


def test_no_progress_fails_the_job_and_stops_work_in_flight(tmp_path: Path) -> None:
    """--progress_update_timeout: no mini-batch finished for that long fails the job."""
    job = make_job(
        tmp_path, STALLS, YAML.format(level="INFO", args="--progress_update_timeout 1.5"), files=2
    )
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1", timeout_s=60)
    assert r.returncode == 42, r.stderr + r.stdout
    assert "No progress update in 1.5 seconds (progress_update_timeout)" in r.result_text()
    main = r.main_logs()
    started = set(re.findall(r"(process\d+) started", main))
    stopped = set(
        re.findall(
            r"(process\d+) exits with returncode -15 \(SIGTERM, sent by prsd\): the job ended", main
        )
    )
    assert started == stopped == {"process000", "process001"}, main


def test_profile_and_logging_level(tmp_path: Path) -> None:
    """cProfile writes sys/node/<node>/<process>.profile; logging_level filters both loggers."""
    job = make_job(
        tmp_path, LOGS, YAML.format(level="WARNING", args="--profiling_module cProfile"), files=3
    )
    r = run_prsd(job, tmp_path / "spool", "--node-id", "n1")
    assert r.returncode == 0, r.stderr + r.stdout
    profiles = sorted((r.logs / "sys" / "node" / "n1").glob("process*.profile"))
    # A worker still in init() when the job completed is stopped and writes none; the
    # ones that ran mini-batches retire with shutdown() and write theirs.
    assert profiles, "no profile written"
    assert {p.name for p in profiles} <= {"process000.profile", "process001.profile"}
    functions = set()
    for p in profiles:
        functions |= {fn for (_, _, fn) in pstats.Stats(str(p)).stats}  # type: ignore[attr-defined]  # stats is undocumented in the stubs
    assert {"init", "run"} <= functions
    entry = "".join(
        p.read_text() for p in (r.logs / "user" / "entry_script_log" / "n1").glob("*.txt")
    )
    assert "entry warning from init" in entry and "entry info from init" not in entry
    stdout = "".join(p.read_text() for p in (r.logs / "user" / "stdout" / "n1").glob("*.txt"))
    assert "root warning from run" in stdout and "root debug from run" not in stdout
