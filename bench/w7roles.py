"""W7 by role: the spool's metadata operations per mini-batch, leader and agent apart.

``prsd run`` drives leader and agent in one process, so its trace cannot say whose a
call was. Here the leader and one agent (2 worker slots) run as the separate daemons
of a deployed spool, each under its own ``strace -f -y`` (the agent's trace includes
its workers); the job is submitted to the warm daemons. Every call is sorted by the
spool folder its path names (:func:`bench.special.categorize`, the same filter as
``prsd run``'s W7), and two job sizes are differenced so that the fixed cost (start-up,
job set-up, the final merge) cancels. Calls on timers (listings, heartbeats) are given
per second, not per mini-batch.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import psutil

from bench.execute import REPO, submit_job, wait_final
from bench.inputs import file_set
from bench.special import METADATA_SYSCALLS, _polled, categorize, daemon_env, echo_job

if TYPE_CHECKING:
    from pathlib import Path

ROLES = ("leader", "agent")
Counts = dict[str, Counter[tuple[str, str]]]


def _spawn(role: str, spool: Path, run_dir: Path) -> subprocess.Popen[bytes]:
    args = ["leader"] if role == "leader" else ["agent", "--node-id", "n1", "--slots", "2"]
    cmd = ["strace", "-f", "-qq", "-y", "-o", str(run_dir / f"{role}.trace")]
    cmd += ["-e", "trace=" + ",".join(METADATA_SYSCALLS)]
    cmd += [sys.executable, "-m", "prsd.daemon", *args, "--spool", str(spool)]
    cmd += ["--log-level", "WARNING"]
    with open(run_dir / f"{role}.log", "wb") as log:
        return subprocess.Popen(
            cmd, env=daemon_env(run_dir), cwd=REPO, stdout=log, stderr=subprocess.STDOUT
        )


def _stop(tracer: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the daemon under ``strace`` (strace then ends with it)."""
    try:
        for child in psutil.Process(tracer.pid).children():
            child.send_signal(signal.SIGTERM)
    except psutil.NoSuchProcess:
        pass
    try:
        tracer.wait(timeout=30)
    except subprocess.TimeoutExpired:
        tracer.kill()
        tracer.wait()


def traced_roles(items: int, work: Path) -> tuple[Counts, int, float]:
    """One job of ``items`` files (mini-batch 10) through a traced leader and agent."""
    root = file_set(items, 0)
    run_dir = work / f"W7roles-{items}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    job = echo_job(run_dir, root, 10, 2, "bench-w7r")
    spool = run_dir / "s"
    spool.mkdir()
    tracers = {role: _spawn(role, spool, run_dir) for role in ROLES}
    try:
        ready = [spool / "leader" / "heartbeat.json", spool / "nodes" / "n1.json"]
        deadline = time.monotonic() + 60
        while not all(p.exists() for p in ready):
            if time.monotonic() > deadline or any(t.poll() is not None for t in tracers.values()):
                raise RuntimeError(f"traced daemons did not start: {ready}")
            time.sleep(0.02)
        start = time.perf_counter()
        job_id = submit_job(job, spool)
        if not wait_final(spool, job_id, 600):
            raise RuntimeError("the traced job did not end")
        wall = time.perf_counter() - start
    finally:
        for tracer in tracers.values():
            _stop(tracer)
    counts: Counts = {}
    for role in ROLES:
        found: Counter[tuple[str, str]] = Counter()
        with open(run_dir / f"{role}.trace", encoding="utf-8", errors="replace") as f:
            for line in f:
                hit = categorize(line, str(spool))
                if hit is not None:
                    found[hit] += 1
        counts[role] = found
    shutil.rmtree(run_dir, ignore_errors=True)
    return counts, -(-items // 10), wall


def _hot(key: tuple[str, str]) -> bool:
    return key[1] != "not spool" and key[0] != "fstat" and not _polled(key)


def w7_by_role(sizes: tuple[int, int], work: Path) -> dict[str, Any]:
    """Per role: hot spool operations per task and per mini-batch, and polling per second.

    Tasks are packed by measured time (prsd/leader/plan/packing.py), so the number of tasks
    does not grow in step with the mini-batches and two sizes cannot be differenced:
    the larger job is traced alone, its operations divided by its tasks (counted by the
    agent's commit renames) and by its mini-batches (an upper bound: set-up included).
    """
    counts, mbs, wall = traced_roles(sizes[1], work)
    tasks = counts["agent"][("rename", "tasks/done")]
    result: dict[str, Any] = {
        "items": sizes[1],
        "mini_batch_size": 10,
        "mini_batches": mbs,
        "tasks": tasks,
        "wall_s": round(wall, 2),
    }
    for role in ROLES:
        hot = {k: v for k, v in counts[role].items() if _hot(k)}
        total = sum(hot.values())
        result[role] = {
            "spool_per_mb": round(total / mbs, 2),
            "spool_per_task": round(total / max(tasks, 1), 1),
            "spool_by_call_per_task": {
                f"{k[0]} {k[1]}": round(v / max(tasks, 1), 2)
                for k, v in sorted(hot.items(), key=lambda kv: -kv[1])
                if v / max(tasks, 1) >= 0.05
            },
            "polled_per_s": {
                f"{k[0]} {k[1]}": round(v / wall, 1)
                for k, v in sorted(counts[role].items(), key=lambda kv: -kv[1])
                if _polled(k)
            },
        }
    return result
