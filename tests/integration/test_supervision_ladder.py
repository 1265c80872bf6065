"""The stop ladder on real processes: SIGTERM to the group, grace, SIGKILL, reap.

The last test runs a job in this process (the code of ``prsd run``) with a short
grace, so a worker that ignores SIGTERM is killed in 0.2 s rather than 5.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import textwrap
import time
from typing import TYPE_CHECKING

import anyio
import psutil

from prsd.agent.agent import AgentOptions
from prsd.agent.proc import WorkerProcess, spawn_worker
from prsd.agent.verdicts import ExitInfo
from prsd.embedded import run_until_done
from prsd.spool.opening import open_spool
from prsd.submit import submit
from tests.helpers import wait_until
from tests.jobkit import make_job

if TYPE_CHECKING:
    from pathlib import Path

STUBBORN = """
    import os, signal, subprocess, sys, time
    if sys.argv[2] == "ignore":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(child.pid))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    if sys.argv[2] == "exit3":
        os._exit(3)
    while True:
        time.sleep(0.05)
"""


async def _start(tmp_path: Path, mode: str) -> tuple[WorkerProcess, int]:
    script = tmp_path / "stubborn.py"
    script.write_text(textwrap.dedent(STUBBORN))
    ready = tmp_path / "ready"

    def command(fd: int) -> list[str]:
        return [sys.executable, str(script), str(ready), mode]

    proc = await spawn_worker(
        command,
        env=dict(os.environ),
        cwd=tmp_path,
        stdout_path=tmp_path / "out.txt",
        stderr_path=tmp_path / "err.txt",
    )
    deadline = time.monotonic() + 20
    while not ready.exists():
        assert time.monotonic() < deadline, "the script never became ready"
        await anyio.sleep(0.01)
    return proc, int(ready.read_text())


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _stop(tmp_path: Path, mode: str, grace_s: float) -> tuple[ExitInfo, float, int]:
    async def main() -> tuple[ExitInfo, float, int]:
        proc, grandchild = await _start(tmp_path, mode)
        try:
            if mode == "exit3":
                await proc.wait_exit()
            began = time.monotonic()
            exit_info = await proc.stop(grace_s)
            return exit_info, time.monotonic() - began, grandchild
        finally:
            with anyio.CancelScope(shield=True):
                await proc.stop(0.0)

    return anyio.run(main)


def test_worker_ignoring_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    """SIGTERM ignored: SIGKILL after the grace, recorded as sent by prsd; the group dies too."""
    exit_info, took_s, grandchild = _stop(tmp_path, "ignore", 0.2)
    assert exit_info == ExitInfo(-signal.SIGKILL, "SIGKILL", True)
    assert took_s >= 0.2
    assert exit_info.describe("process001").endswith("(SIGKILL, sent by prsd)")
    wait_until(lambda: _gone(grandchild), 10, "the grandchild to die with the group")


def test_worker_honouring_sigterm_ends_without_sigkill(tmp_path: Path) -> None:
    """A worker that honours SIGTERM ends with it, well before the grace."""
    exit_info, took_s, grandchild = _stop(tmp_path, "honour", 5.0)
    assert exit_info == ExitInfo(-signal.SIGTERM, "SIGTERM", True)
    assert took_s < 5.0
    wait_until(lambda: _gone(grandchild), 10, "the grandchild to die with the group")


def test_self_exit_is_not_sent_by_prsd_and_stragglers_are_killed(tmp_path: Path) -> None:
    """os._exit(3): return code 3, no signal; the ladder still kills what it left behind."""
    exit_info, _, grandchild = _stop(tmp_path, "exit3", 5.0)
    assert exit_info == ExitInfo(3, "", False)
    assert exit_info.describe("process000") == "process000 exits with returncode 3"
    wait_until(lambda: _gone(grandchild), 10, "the orphaned grandchild to be killed")


DEAF_RUN = """
    import os, signal, time
    def run(mini_batch):
        if any(p.endswith("item00001.txt") for p in mini_batch):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            deaf_and_stuck()
        return [os.path.basename(p) for p in mini_batch]
    def deaf_and_stuck():
        while True:
            time.sleep(0.05)
"""

DEAF_YAML = """
    input_data: ./data
    mini_batch_size: "1"
    resources: {max_concurrency_per_instance: 1}
    retry_settings: {max_retries: 1, timeout: 1}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def test_timed_out_run_ignoring_sigterm_is_dumped_then_killed(tmp_path: Path) -> None:
    """A hung run() that ignores SIGTERM: stacks dumped, SIGKILL after the grace, retried."""
    job = make_job(tmp_path, DEAF_RUN, DEAF_YAML, files=3)
    spool = open_spool(tmp_path / "spool")
    job_id, _ = submit(job, spool)
    options = AgentOptions(node_id="n1", stop_grace_s=0.2)
    final = anyio.run(lambda: run_until_done(spool, job_id, options))
    assert final.state == "Completed with failures", final.reason  # item 1 never returned
    logs = spool.job(job_id).logs
    main = (logs / "sys" / "node" / "n1" / "_main.txt").read_text()
    killed = re.findall(
        r"process00\d exits with returncode -9 \(SIGKILL, sent by prsd\): run\(\) did not "
        r"return within 1 s",
        main,
    )
    assert len(killed) == 2, main
    dumps = "".join(p.read_text() for p in (logs / "user" / "error" / "n1").iterdir())
    assert dumps.count("deaf_and_stuck") >= 2, "each attempt's stacks were dumped"
    out = (spool.job(job_id).outputs / "out.txt").read_text().splitlines()
    assert out == ["item00000.txt", "item00002.txt"]
