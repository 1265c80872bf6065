"""``python -m bench.profile [--items N] [--mbs 10]``: W1's CPU cost per mini-batch, by phase.

``py-spy record --subprocesses`` samples ``prsd run`` (leader and agent in one
process, plus its workers) from outside; each sampled stack is put in the phase of
its innermost frame that names one (split, task write, claim, hand-off, result
commit, accounting, ...). Samples x interval / mini-batches = CPU µs per mini-batch.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.inputs import file_set
from bench.special import daemon_env, echo_job

RATE_HZ = 1000
PHASES: tuple[tuple[str, str, str], ...] = (
    # (phase, function, file the function is in)
    ("split: task write", "write", "leader/run/tasks.py"),
    ("split: listing and planning", "_split", "leader/run/job.py"),
    ("claim", "_claim_next", "agent/feed.py"),
    ("claim", "get", "agent/feed.py"),
    ("result commit", "finish_task", "agent/task.py"),
    ("result commit", "_commit", "agent/jobrun.py"),
    ("hand-off (agent <-> worker)", "run_task", "agent/session.py"),
    ("hand-off (agent <-> worker)", "_serve", "agent/jobrun.py"),
    ("accounting: ingest result", "_ingest", "leader/run/job.py"),
    ("accounting: scan done/", "_scan", "leader/run/job.py"),
    ("accounting: logs", "attempts", "leader/run/joblogs.py"),
    ("status.json", "maybe_write", "leader/run/status.py"),
    ("heartbeat", "_heartbeats", "agent/agent.py"),
    ("agent loop (active jobs)", "run", "agent/agent.py"),
    ("leader loop (intake, checks)", "step", "leader/leader.py"),
    ("final merge", "finish", "leader/run/job.py"),
    ("start-up: imports", "_find_and_load", "importlib._bootstrap>"),
    ("start-up: submit (spec, code snapshot)", "submit", "prsd/submit.py"),
    ("worker start (spawn, init)", "_ready_worker", "agent/jobrun.py"),
    ("resource monitor", "open_resource_monitor", ""),
    (
        "thread hand-off (anyio.to_thread)",
        "run_sync_in_worker_thread",
        "anyio/_backends/_asyncio.py",
    ),
    ("thread hand-off (anyio.to_thread)", "_report_result", "anyio/_backends/_asyncio.py"),
    ("event loop wake-ups", "_read_from_self", "asyncio/selector_events.py"),
    ("worker: user run()", "run", "code/echo.py"),
    ("worker: host (protocol, loader, result append)", "<module>", "prsd/worker/boot.py"),
)


IDLE = (
    "ThreadedChildWatcher._do_waitpid",
    "Condition.wait",
    "EpollSelector.select",
    "_do_waitpid",
    "Event.wait",
    "sleep",
)


def _frame(frame: str) -> tuple[str, str]:
    """``Class.func (path:line)`` -> (func, path)."""
    func, _, rest = frame.partition(" (")
    return func.strip().rsplit(".", 1)[-1], rest.rsplit(":", 1)[0]


def phase_of(frames: list[str]) -> str:
    """The phase of one sampled stack (outermost frame first)."""
    if not frames:
        return "no Python frame (idle, or native code)"
    if frames[-1].partition(" (")[0] in IDLE:
        return "idle (waiting in a lock, select or waitpid)"
    for frame in reversed(frames):
        func, path = _frame(frame)
        for phase, want_func, want_file in PHASES:
            if func == want_func and path.endswith(want_file):
                return phase
    return "other (event loop, threads, interpreter)"


def aggregate(raw: str) -> Counter[tuple[str, str]]:
    """Samples per (process kind, phase) from py-spy's ``--format raw`` output."""
    counts: Counter[tuple[str, str]] = Counter()
    for line in raw.splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        parts = stack.split(";")
        procs = [p for p in parts if p.startswith("process ")]
        kind = "worker" if procs and "prsd/worker" in procs[-1] else "prsd run"
        frames = [p for p in parts if " (" in p and not p.startswith(("process ", "thread "))]
        counts[(kind, phase_of(frames))] += int(n)
    return counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile")
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--mbs", type=int, default=10)
    p.add_argument("--raw", type=Path, default=None, help="keep py-spy's raw stacks here")
    p.add_argument("--detail", default="hand-off", help="list the hottest frames of this phase")
    args = p.parse_args(argv)
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    work = Path(tempfile.mkdtemp(prefix="prsd-profile-"))
    try:
        root = file_set(args.items, 0)
        job = echo_job(work, root, args.mbs, 2, "bench-profile")
        raw = work / "raw.txt"
        cmd = [py_spy, "record", "--subprocesses", "--format", "raw", "-r", str(RATE_HZ)]
        cmd += ["-o", str(raw), "--", sys.executable, "-m", "prsd.daemon", "run", str(job)]
        cmd += ["--spool", str(work / "spool"), "--node-id", "n1"]
        start = time.perf_counter()
        r = subprocess.run(cmd, env=daemon_env(work), capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        if r.returncode != 0:
            print(r.stdout[-2000:], r.stderr[-2000:])
            return 1
        text = raw.read_text(errors="replace")
        counts = aggregate(text)
        if args.raw is not None:
            shutil.copyfile(raw, args.raw)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    mbs = -(-args.items // args.mbs)
    total = sum(counts.values())
    print(
        f"W1 {args.items} items, mini-batch {args.mbs}: {mbs} mini-batches, {wall:.2f} s "
        f"under py-spy at {RATE_HZ} Hz ({total} samples)"
    )
    print("| process | phase | CPU s | CPU µs / mini-batch | share |")
    print("|---|---|---|---|---|")
    for (kind, phase), n in sorted(counts.items(), key=lambda kv: -kv[1]):
        cpu_s = n / RATE_HZ
        print(f"| {kind} | {phase} | {cpu_s:.2f} | {cpu_s / mbs * 1e6:.0f} | {n / total:.1%} |")
    print(
        f"\nHottest innermost prsd frames in phases starting {args.detail!r} (CPU µs / mini-batch):"
    )
    for frame, n in hottest(text, args.detail).most_common(15):
        print(f"  {n / RATE_HZ / mbs * 1e6:7.0f}  {frame}")
    return 0


def hottest(raw: str, phase_prefix: str) -> Counter[str]:
    """Samples per innermost prsd (or anyio/asyncio) frame, within the phases named so."""
    counts: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = [
            p for p in stack.split(";") if " (" in p and not p.startswith(("process ", "thread "))
        ]
        if not phase_of(frames).startswith(phase_prefix):
            continue
        inner = [f for f in frames if "prsd/" in f] or frames
        counts[" < ".join(f.split(" (")[0] for f in (inner[-1], *frames[-1:]))] += int(n)
    return counts


if __name__ == "__main__":
    sys.exit(main())
