"""``prsctl`` says when nothing serves the spool, and never invents a spool to submit to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import IO, TYPE_CHECKING

from prsd.spool.heartbeat import write_heartbeat
from prsd.spool.heartbeatrecord import Heartbeat
from prsd.spool.layout import SpoolLayout
from prsd.spool.lease import LeaderBeat, write_beat
from tests.helpers import wait_until
from tests.jobkit import PRSD, make_job

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PRSCTL = [sys.executable, "-m", "prsd.cli.prsctl"]

QUICK = """
    def run(mini_batch):
        return list(mini_batch)
"""

YAML = """
    name: live
    input_data: ./data
    mini_batch_size: "2"
    resources: {max_concurrency_per_instance: 1}
    task:
      code: ./code
      entry_script: score.py
"""


def ctl(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """prsctl in ``tmp``, with the settings file ``tmp/prsd.env`` and no PRSD_SPOOL exported."""
    env = {k: v for k, v in os.environ.items() if k != "PRSD_SPOOL"}
    env["PRSD_ENV_FILE"] = str(tmp / "prsd.env")
    return subprocess.run(
        [*PRSCTL, *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _ago(seconds: float) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds)).isoformat(timespec="seconds")


def test_submit_without_a_spool_names_the_setting(tmp_path: Path) -> None:
    """No --spool, no PRSD_SPOOL, no settings file: an error naming them; no ./spool made."""
    job = make_job(tmp_path, QUICK, YAML, files=2)
    r = ctl(tmp_path, "submit", str(job))
    assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
    assert r.stderr.strip().endswith(
        f"error: no spool given: pass --spool DIR, or set PRSD_SPOOL (in the environment, or "
        f"in {tmp_path / 'prsd.env'} for every user of this machine)"
    )
    assert not (tmp_path / "spool").exists()


def _waiting_line(tmp: Path) -> str:
    r = ctl(tmp, "status")
    assert r.returncode == 0, r.stderr
    return r.stderr


def _start(log: IO[bytes], spool: Path, *role: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PRSD_GPU_COUNT="0")
    return subprocess.Popen([*PRSD, *role, "--spool", str(spool)], env=env, stdout=log, stderr=log)


def _stop(procs: Iterator[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_no_leader_no_agent_said_at_submit_status_and_cancel(tmp_path: Path) -> None:
    """Queued work names what is missing: never a leader, a dead leader, no agent, a dead agent."""
    spool = tmp_path / "spool"
    (tmp_path / "prsd.env").write_text(f"# settings\nPRSD_SPOOL={spool}\n", encoding="utf-8")
    job = make_job(tmp_path, QUICK, YAML, files=2)
    r = ctl(tmp_path, "submit", str(job))  # the spool comes from the settings file
    assert r.returncode == 0, r.stderr
    kept = r.stdout.strip()
    assert "warning: queued: no leader has ever run on this spool" in r.stderr
    doomed = ctl(tmp_path, "submit", str(job)).stdout.strip()
    r = ctl(tmp_path, "cancel", doomed)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"cancel of {doomed} requested: no leader has ever run")
    assert r.stdout.strip().endswith("the request waits for a leader")
    layout = SpoolLayout(spool)
    write_beat(layout, LeaderBeat(epoch=1, holder="gone", seq=9, updated_at=_ago(300)))
    assert "waiting jobs: no leader alive since " in _waiting_line(tmp_path)
    with open(tmp_path / "daemons.log", "wb") as log:
        _serve_and_watch(tmp_path, spool, log, kept, doomed)


def _serve_and_watch(tmp_path: Path, spool: Path, log: IO[bytes], kept: str, doomed: str) -> None:
    layout = SpoolLayout(spool)
    # A short node lease: the leader's own view of a node decides liveness, and it sees the
    # planted heartbeat below as a change (alive) until the lease runs out.
    procs = [_start(log, spool, "leader", "--node-lease-s", "6")]
    try:
        wait_until(
            lambda: "no agent has ever served this spool" in _waiting_line(tmp_path),
            60,
            "the leader's heartbeat, and no agent",
        )
        # the waiting request is served once the job's spec has loaded (beside the round)
        wait_until(
            lambda: (
                json.loads(ctl(tmp_path, "status", doomed, "--json").stdout)["state"] == "Canceled"
            ),
            30,
            "the waiting cancel request served",
        )
        beat = Heartbeat("lost", 3, "b", 1, "h", _ago(400), _ago(95), slots=1, gpus=0)
        write_heartbeat(layout, beat)
        wait_until(
            lambda: "waiting jobs: no agent alive since " in _waiting_line(tmp_path),
            60,
            "the planted agent heartbeat seen as dead by the leader",
        )
        procs.append(_start(log, spool, "agent", "--node-id", "n1"))
        wait_until(
            lambda: (
                json.loads(ctl(tmp_path, "status", kept, "--json").stdout)["state"] == "Completed"
            ),
            120,
            "the kept job completed",
        )
        assert _waiting_line(tmp_path) == ""  # nothing waits: nothing to warn about
    finally:
        _stop(iter(procs))


SLOW = """
    import time

    def run(mini_batch):
        time.sleep(600)
        return list(mini_batch)
"""


def test_a_prsd_run_killed_mid_job_is_a_leader_gone_at_once(tmp_path: Path) -> None:
    """``prsd run`` killed with -9: its lease still looks fresh for a while, but its
    process is gone from this host, so cancel and status say no leader serves the job
    at once (the cancel waits for one) instead of promising an answer."""
    spool = tmp_path / "spool"
    job = make_job(tmp_path, SLOW, YAML, files=2)
    env = dict(os.environ, PRSD_GPU_COUNT="0")
    run = subprocess.Popen(
        [*PRSD, "run", str(job), "--spool", str(spool)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its workers die with it (their own prctl)
    )
    try:
        assert run.stdout is not None
        job_id = run.stdout.readline().decode().split()[1]
        wait_until(lambda: (spool / "jobs" / job_id / "state").is_dir(), 60, "the job taken in")
        pid = run.pid
        os.killpg(run.pid, 9)
        run.wait(30)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, 9)
            run.wait()
        if run.stdout is not None:
            run.stdout.close()
    canceled = ctl(tmp_path, "cancel", job_id, "--spool", str(spool))
    assert canceled.returncode == 0, canceled.stderr
    assert canceled.stdout.strip() == (
        f"cancel of {job_id} requested: no leader alive (the last one, pid {pid} on this "
        "host, has exited); start `prsd leader`: the request waits for a leader"
    )
