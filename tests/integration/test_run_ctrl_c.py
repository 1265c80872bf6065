"""Ctrl-C on ``prsd run``: the first cancels the job and waits for its workers; a second
leaves at once, and a job no leader has ended stays queued for a fleet."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

import psutil

from prsd.spool.layout import SpoolLayout
from prsd.spool.lease import LeaderBeat, new_holder, try_take, write_beat
from tests.helpers import final_record, wait_until
from tests.jobkit import make_job, prsctl
from tests.liverun import LiveRun, alive

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

YAML = """
    name: sleepy
    input_data: ./data
    mini_batch_size: "1"
    resources: {max_concurrency_per_instance: 2}
    task:
      code: ./code
      entry_script: score.py
"""


def sleeper(marks: Path, stop_s: float) -> str:
    """An entry script whose run() sleeps; on SIGTERM it takes ``stop_s`` to stop, then
    leaves a file named after its pid in ``marks``."""
    return textwrap.dedent(
        f"""
        import os, signal, time

        def _stop(signum, frame):
            time.sleep({stop_s})
            open(os.path.join({str(marks)!r}, "stopped-%d" % os.getpid()), "w").close()
            os._exit(0)

        def init():
            signal.signal(signal.SIGTERM, _stop)

        def run(mini_batch):
            time.sleep(600)
            return list(mini_batch)
        """
    )


@contextmanager
def another_leader(spool: Path) -> Iterator[None]:
    """Another leader holds the spool's lease (alive: it beats, but answers nothing)."""
    layout = SpoolLayout(spool)
    spool.mkdir()
    (spool / "leader").mkdir()
    assert try_take(layout, new_holder(1, "elsewhere"))
    beating = threading.Event()

    def beat() -> None:
        seq = 0
        while not beating.is_set():
            seq += 1
            write_beat(layout, LeaderBeat(1, "elsewhere", seq, "now"))
            time.sleep(0.3)

    beater = threading.Thread(target=beat, daemon=True)
    beater.start()
    try:
        yield
    finally:
        beating.set()
        beater.join()


def _final(spool: Path, job_id: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(final_record(spool / "jobs" / job_id / "state"))
    return data


def _is_worker(run: LiveRun, proc: psutil.Process) -> bool:
    """A worker: started from boot.py, and not the fork server (prsd run's own child that
    workers are forked from, their command line being its)."""
    try:
        line = " ".join(proc.cmdline())
        server = proc.ppid() == run.proc.pid and "--fork-server" in line
    except psutil.NoSuchProcess:
        return False
    return "prsd/worker/boot.py" in line and not server


def _busy_workers(run: LiveRun, count: int) -> list[int]:
    """Wait until ``count`` workers run a mini-batch; their pids."""
    found: list[int] = []

    def busy() -> bool:
        found[:] = [p.pid for p in run.workers() if _is_worker(run, p)]
        return len(found) >= count

    wait_until(busy, 60, f"{count} workers")
    run.wait_for_line("Running: ", 60)
    return found


def test_ctrl_c_cancels_the_job_and_waits_for_its_workers(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    job = make_job(tmp_path, sleeper(marks, 1.0), YAML, files=4)
    spool = tmp_path / "spool"
    run = LiveRun(job, spool)
    try:
        job_id = run.job_id
        pids = _busy_workers(run, 2)
        time.sleep(1)  # both in run()
        procs = [p for p in run.workers() if p.pid in pids]
        run.proc.send_signal(signal.SIGINT)
        code = run.wait(120)
        stopped = sorted(os.listdir(marks))  # at the moment prsd run returned
    finally:
        run.kill()
    assert f"Ctrl-C: canceling job {job_id} and waiting for its workers to stop" in run.text
    assert code == 43, run.text + run.stderr()
    assert _final(spool, job_id)["state"] == "Canceled"
    result = (spool / "jobs" / job_id / "logs" / "job_result.txt").read_text(encoding="utf-8")
    assert result.splitlines()[0] == "Canceled"
    status = prsctl(spool, "status", job_id, "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["state"] == "Canceled"
    assert stopped == sorted(f"stopped-{pid}" for pid in pids)  # waited for their 1 s stop
    assert alive(procs) == []
    assert "Traceback" not in run.stderr()


def test_second_ctrl_c_leaves_at_once(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    job = make_job(tmp_path, sleeper(marks, 300.0), YAML, files=4)
    spool = tmp_path / "spool"
    run = LiveRun(job, spool)
    try:
        job_id = run.job_id
        pids = _busy_workers(run, 2)
        procs = [p for p in run.workers() if p.pid in pids]
        run.proc.send_signal(signal.SIGINT)
        wait_until((spool / "jobs" / job_id / "state" / "final.json").exists, 60, "the cancel")
        assert run.proc.poll() is None  # still waiting for workers that take 300 s to stop
        run.proc.send_signal(signal.SIGINT)
        began = time.monotonic()
        code = run.wait(60)
        took = time.monotonic() - began
    finally:
        run.kill()
    assert code == 130, run.text + run.stderr()
    assert took < 15, took
    assert run.lines[-1][1] == (
        f"left at once: job {job_id} ended Canceled; its workers stop with this process"
    )
    wait_until(lambda: alive(procs) == [], 30, "the workers to die with prsd run")
    assert os.listdir(marks) == []  # killed, not stopped at their pace
    assert "Traceback" not in run.stderr()


def test_second_ctrl_c_leaves_a_job_no_leader_answered_queued(tmp_path: Path) -> None:
    """Another leader holds the lease (alive, but answering nothing): the cancel asked by
    the first Ctrl-C is withdrawn by the second, and the job stays queued for a fleet."""
    spool = tmp_path / "spool"
    job = make_job(tmp_path, sleeper(tmp_path, 0.0), YAML, files=2)
    with another_leader(spool):
        run = LiveRun(job, spool)
        try:
            job_id = run.job_id
            run.wait_for_line("another leader holds this spool's lease")
            run.proc.send_signal(signal.SIGINT)
            run.wait_for_line(f"Ctrl-C: canceling job {job_id}")
            assert [n for n in os.listdir(spool / "requests") if n.startswith(job_id)]
            run.proc.send_signal(signal.SIGINT)
            code = run.wait(60)
        finally:
            run.kill()
    assert code == 130, run.text + run.stderr()
    assert run.lines[-1][1] == (
        f"left at once: job {job_id} stays queued in the spool {spool} for a fleet "
        f"(`prsd leader --spool {spool}` and `prsd agent --spool {spool}` run it); "
        f"see it with `prsctl status {job_id} --spool {spool}`, "
        f"cancel it with `prsctl cancel {job_id} --spool {spool}`"
    )
    assert [n for n in os.listdir(spool / "requests") if n.startswith(job_id)] == []
    assert (spool / "inbox" / job_id).is_dir()  # queued: no leader took it in
    assert "Traceback" not in run.stderr()
