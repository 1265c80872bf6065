"""Ctrl-C on ``prsd run pipeline.yml`` typed in a terminal: the first cancels the pipeline
(its running step canceled, the rest skipped) and waits for its workers; a second leaves
at once. As ``prsd run`` of a job does (tests/integration/test_run_ctrl_c.py)."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING

import psutil

from tests.helpers import wait_until
from tests.integration.test_run_ctrl_c import another_leader, sleeper
from tests.jobkit import prsctl
from tests.liverun import alive
from tests.pipekit import write_files
from tests.ptyrun import PtyRun

if TYPE_CHECKING:
    from pathlib import Path

PIPELINE = """
    type: pipeline
    name: sleepy
    jobs:
      score:
        type: parallel
        inputs:
          data: {type: uri_folder, path: ./data}
        outputs:
          scored: {type: uri_folder}
        input_data: ${{inputs.data}}
        mini_batch_size: "1"
        resources: {max_concurrency_per_instance: 2}
        task:
          type: run_function
          code: ./code
          entry_script: score.py
      after:
        type: command
        inputs:
          scored: ${{parent.jobs.score.outputs.scored}}
        command: ls ${{inputs.scored}}
"""


def _pipeline(tmp_path: Path, stop_s: float) -> tuple[Path, Path]:
    marks = tmp_path / "marks"
    marks.mkdir()
    files = {"pipeline.yml": PIPELINE, "code/score.py": sleeper(marks, stop_s)}
    files.update({f"data/item{i}.txt": f"{i}\n" for i in range(4)})
    write_files(tmp_path / "p", files)
    return tmp_path / "p" / "pipeline.yml", marks


def _start(path: Path, spool: Path) -> PtyRun:
    env = dict(os.environ, PRSD_GPU_COUNT="0", COLUMNS="200")
    return PtyRun(
        [sys.executable, "-m", "prsd.daemon", "run", str(path), "--spool", str(spool)], env
    )


def _busy(run: PtyRun, count: int) -> list[psutil.Process]:
    """Wait until ``count`` workers run a mini-batch; those workers."""
    found: list[psutil.Process] = []

    def busy() -> bool:
        kids = psutil.Process(run.pid).children(recursive=True)
        found[:] = [p for p in kids if "prsd/worker/boot.py" in " ".join(p.cmdline())]
        return len(found) >= count

    wait_until(busy, 90, f"{count} workers")
    return found


def _pid(run: PtyRun) -> str:
    run.wait_for("pipeline ")
    line = next(x for x in run.text.splitlines() if x.startswith("pipeline "))
    return line.split()[1]


def test_ctrl_c_cancels_the_pipeline_and_waits_for_its_workers(tmp_path: Path) -> None:
    path, marks = _pipeline(tmp_path, 1.0)
    spool = tmp_path / "spool"
    run = _start(path, spool)
    try:
        pid = _pid(run)
        workers = _busy(run, 2)
        time.sleep(1)  # both in run()
        run.ctrl_c()
        code = run.wait(120)
        stopped = sorted(os.listdir(marks))  # at the moment prsd run returned
    finally:
        run.kill()
    assert f"Ctrl-C: canceling pipeline {pid} and waiting for its workers to stop" in run.text
    assert code == 43, run.text
    final = json.loads((spool / "pipelines" / pid / "final.json").read_bytes())
    assert final["state"] == "Canceled", final
    assert stopped == sorted(f"stopped-{p.pid}" for p in workers)  # waited for their 1 s stop
    assert alive(workers) == []
    status = prsctl(spool, "status", pid, "--json")
    steps = {s["step"]: s["state"] for s in json.loads(status.stdout)["steps"]}
    assert steps == {"score": "Canceled", "after": "Skipped"}, steps
    assert "Traceback" not in run.text


def test_second_ctrl_c_leaves_a_pipeline_at_once(tmp_path: Path) -> None:
    path, marks = _pipeline(tmp_path, 300.0)
    spool = tmp_path / "spool"
    run = _start(path, spool)
    try:
        pid = _pid(run)
        workers = _busy(run, 2)
        run.ctrl_c()
        wait_until((spool / "pipelines" / pid / "final.json").exists, 60, "the cancel")
        assert run.code is None  # still waiting for workers that take 300 s to stop
        run.ctrl_c()
        began = time.monotonic()
        code = run.wait(60)
        took = time.monotonic() - began
    finally:
        run.kill()
    assert code == 130, run.text
    assert took < 15, took
    last = run.text.rstrip().splitlines()[-1].removeprefix("^C")  # the terminal's echo
    assert (
        last == f"left at once: pipeline {pid} ended Canceled; its workers stop with this process"
    )
    wait_until(lambda: alive(workers) == [], 30, "the workers to die with prsd run")
    assert os.listdir(marks) == []  # killed, not stopped at their pace
    assert "Traceback" not in run.text


def test_a_pipeline_waits_for_another_leader_and_a_second_ctrl_c_leaves_it(
    tmp_path: Path,
) -> None:
    """Another leader holds the lease (alive, answering nothing): ``prsd run`` of a
    pipeline says so, as of a job; the second Ctrl-C takes back the cancel mark the first
    made, and the pipeline stays in the spool for a fleet."""
    path, marks = _pipeline(tmp_path, 0.0)
    spool = tmp_path / "spool"
    with another_leader(spool):
        run = _start(path, spool)
        try:
            pid = _pid(run)
            run.wait_for("another leader holds this spool's lease")
            run.ctrl_c()
            run.wait_for(f"Ctrl-C: canceling pipeline {pid}")
            assert (spool / "pipelines" / pid / "cancel").exists()
            run.ctrl_c()
            code = run.wait(60)
        finally:
            run.kill()
    assert code == 130, run.text
    assert f"pipeline {pid} waits for it" in run.text
    last = run.text.rstrip().splitlines()[-1].removeprefix("^C")  # the terminal's echo
    assert last == (
        f"left at once: pipeline {pid} stays in the spool {spool} for a fleet "
        f"(`prsd leader --spool {spool}` and `prsd agent --spool {spool}` run it); "
        f"see it with `prsctl status {pid} --spool {spool}`, "
        f"cancel it with `prsctl cancel {pid} --spool {spool}`"
    )
    assert not (spool / "pipelines" / pid / "cancel").exists()  # taken back
    assert not (spool / "pipelines" / pid / "final.json").exists()
    assert os.listdir(marks) == []  # no worker ran
    assert "Traceback" not in run.text
