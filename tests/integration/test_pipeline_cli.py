"""Pipelines on the command line as jobs are: ``prsctl status PIPELINE --watch`` follows
the pipeline and exits with its code; ``prsctl cancel`` and ``retry`` say when nothing
serves the spool; ``prsd run --retry`` runs a retry here (real processes, no daemons)."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import TYPE_CHECKING

from tests.jobkit import PRSCTL, make_job, prsctl, run_prsd
from tests.liverun import LiveRun
from tests.pipekit import run_pipeline, write_files

if TYPE_CHECKING:
    from pathlib import Path

GATED = """
    type: pipeline
    name: gated
    jobs:
      slow:
        type: command
        command: sleep 3; echo slow done
      gate:
        type: command
        inputs:
          flag: {type: uri_file, path: ./flag.txt}
        command: grep -q pass ${{inputs.flag}} || { echo gate closed >&2; exit 3; }
        retry_settings: {max_retries: 0}
"""


def _gated(tmp_path: Path, flag: str) -> Path:
    write_files(tmp_path / "p", {"pipeline.yml": GATED, "flag.txt": flag})
    return tmp_path / "p" / "pipeline.yml"


def test_watch_follows_a_pipeline_and_exits_with_its_failed_code(tmp_path: Path) -> None:
    """A CI gate on ``prsctl status PIPELINE --watch`` fails when the pipeline fails."""
    spool = tmp_path / "spool"
    run = LiveRun(_gated(tmp_path, "closed\n"), spool)
    try:
        run.wait_for_line("pipeline ")
        pid = run.lines[0][1].split()[1]
        began = time.monotonic()
        watch = subprocess.run(
            [*PRSCTL, "status", pid, "--watch", "--interval", "0.2", "--spool", str(spool)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        took = time.monotonic() - began
        assert run.wait(60) == 42, run.text + run.stderr()
    finally:
        run.kill()
    assert watch.returncode == 42, watch.stdout + watch.stderr
    assert took > 1, took  # it waited for the pipeline's end
    lines = watch.stdout.splitlines()
    assert lines[0].startswith(f"pipeline {pid} Running: "), lines
    assert f"pipeline {pid} (gated): Failed" in lines
    assert any(x.strip().startswith("gate (command) Failed") for x in lines), lines
    done = prsctl(spool, "status", pid, "--watch")  # an ended pipeline: at once, same code
    assert done.returncode == 42, done.stdout + done.stderr


def test_watch_of_a_completed_pipeline_exits_0(tmp_path: Path) -> None:
    r = run_pipeline(_gated(tmp_path, "pass\n"), tmp_path / "spool")
    assert r.returncode == 0, r.stdout + r.stderr
    watch = prsctl(tmp_path / "spool", "status", r.pipeline_id, "--watch")
    assert watch.returncode == 0, watch.stdout + watch.stderr
    assert f"pipeline {r.pipeline_id} (gated): Completed" in watch.stdout


def test_cancel_of_a_pipeline_no_leader_serves_says_so(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    submitted = prsctl(spool, "submit", str(_gated(tmp_path, "pass\n")))
    assert submitted.returncode == 0, submitted.stderr
    pid = submitted.stdout.strip()
    canceled = prsctl(spool, "cancel", pid)
    assert canceled.returncode == 0, canceled.stderr
    assert canceled.stdout.startswith(
        f"cancel of pipeline {pid} asked: no leader has ever run on this spool"
    ), canceled.stdout
    assert "nothing serves the pipeline now" in canceled.stdout
    assert "canceled and the rest skipped when a leader starts" in canceled.stdout


def test_retry_of_a_pipeline_here_and_the_fleet_warning(tmp_path: Path) -> None:
    """``prsctl retry`` queues for a fleet and says none runs; ``prsd run --retry`` runs
    the failed step again here, reusing the completed one."""
    spool = tmp_path / "spool"
    path = _gated(tmp_path, "closed\n")
    first = run_pipeline(path, spool)
    assert first.returncode == 42, first.stdout + first.stderr
    (path.parent / "flag.txt").write_text("pass\n")
    queued = prsctl(spool, "retry", first.pipeline_id)
    assert queued.returncode == 0, queued.stderr
    assert (
        f"queued (or `prsd run --retry {first.pipeline_id}` runs it here): no leader alive "
        "(the last one, pid "
    ) in queued.stderr, queued.stderr
    again = subprocess.run(
        [sys.executable, "-m", "prsd.daemon", "run", "--retry", first.pipeline_id]
        + ["--spool", str(spool)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.startswith("pipeline gated-"), again.stdout
    assert f"pipeline {first.pipeline_id}: steps to run again: gate; reused: slow" in again.stderr


JOB = """
    name: picky
    input_data: ./data
    mini_batch_size: "1"
    retry_settings: {max_retries: 0}
    task:
      code: ./code
      entry_script: score.py
"""


def test_prsd_run_retry_of_a_job_runs_only_what_failed(tmp_path: Path) -> None:
    marker = tmp_path / "fixed"
    script = f"""
        import os

        def run(mini_batch):
            if any(p.endswith("item00001.txt") for p in mini_batch):
                if not os.path.exists({str(marker)!r}):
                    raise ValueError("not fixed yet")
            return list(mini_batch)
    """
    job = make_job(tmp_path, script, JOB, files=3)
    spool = tmp_path / "spool"
    first = run_prsd(job, spool)
    assert "Completed with failures" in first.stdout, first.stdout + first.stderr
    marker.touch()
    retried = subprocess.run(
        [sys.executable, "-m", "prsd.daemon", "run", "--retry", first.job_id]
        + ["--spool", str(spool)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert retried.stdout.startswith("job picky-"), retried.stdout
    assert f"1 mini-batches of {first.job_id} to run again" in retried.stderr
