"""Running one benchmark process tree and measuring it: wall time, first ``run()``, peak RSS.

Peak RSS is sampled every ``SAMPLE_S`` from ``/proc``: the tree's total (every process
the runner started, workers included) at its highest sample, and prsd's own processes
(leader, agent: the command lines that hold ``bench.prsd_launch``) by their kernel
high-water mark ``VmHWM``, which no sampling gap can miss while the process lives.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Self

import psutil

if TYPE_CHECKING:
    from collections.abc import Callable

if TYPE_CHECKING:
    from pathlib import Path

SAMPLE_S = 0.05
PRSD_MARK = "bench.prsd_launch"


@dataclass
class Peaks:
    """Peak memory seen in a process tree, in MB."""

    tree_mb: float = 0.0
    prsd_mb: dict[int, float] = field(default_factory=dict)  # pid -> VmHWM

    @property
    def prsd_max_mb(self) -> float:
        return max(self.prsd_mb.values(), default=0.0)


def vm_hwm_mb(pid: int) -> float | None:
    """The kernel's peak RSS of a live process (``VmHWM``), in MB."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None


class TreeSampler:
    """Samples the process trees under ``roots`` in a thread until stopped."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = list(roots)
        self.peaks = Peaks()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._prsd: set[int] = set()

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add_root(self, pid: int) -> None:
        self.roots.append(pid)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        """One sample now (also called just before prsd's daemons are stopped)."""
        total = 0
        for proc in self._tree():
            try:
                total += proc.memory_info().rss
                if proc.pid not in self._prsd and PRSD_MARK in " ".join(proc.cmdline()):
                    self._prsd.add(proc.pid)
            except psutil.Error:
                continue
        self.peaks.tree_mb = max(self.peaks.tree_mb, total / 2**20)
        for pid in self._prsd:
            hwm = vm_hwm_mb(pid)
            if hwm is not None:
                self.peaks.prsd_mb[pid] = max(self.peaks.prsd_mb.get(pid, 0.0), hwm)

    def _tree(self) -> list[psutil.Process]:
        procs: list[psutil.Process] = []
        for pid in self.roots:
            try:
                root = psutil.Process(pid)
                procs.append(root)
                procs.extend(root.children(recursive=True))
            except psutil.Error:
                continue
        return procs

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(SAMPLE_S)


@dataclass
class ProcResult:
    started_wall: float
    returncode: int
    wall_s: float
    peaks: Peaks
    tail: str


STALL_S = 60.0
STALLED = 125


class StallWatch:
    """Notices a job that stopped making progress (``progress()`` unchanged for ``limit_s``)."""

    def __init__(self, progress: Callable[[], object], limit_s: float = STALL_S) -> None:
        self.progress = progress
        self.limit_s = limit_s
        self._last: object = None
        self._since = time.monotonic()

    def stalled(self) -> bool:
        now, value = time.monotonic(), self.progress()
        if value != self._last:
            self._last, self._since = value, now
        return now - self._since > self.limit_s


def run_measured(
    cmd: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    log: Path,
    timeout_s: float,
    progress: Callable[[], object] | None = None,
) -> ProcResult:
    """Run ``cmd`` to its end, sampling its tree; stdout and stderr go to ``log``.

    The tree is killed after ``timeout_s`` (exit 124), or once ``progress()`` has not
    changed for ``STALL_S`` (exit 125: a job that hangs is reported, not waited for).
    """
    watch = StallWatch(progress) if progress is not None else None
    with open(log, "wb") as out:
        started_wall, start = time.time(), time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        with TreeSampler([proc.pid]) as sampler:
            rc: int | None = None
            while rc is None:
                try:
                    rc = proc.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    over = time.perf_counter() - start > timeout_s
                    if over or (watch is not None and watch.stalled()):
                        kill_tree(proc.pid)
                        proc.wait()
                        rc = 124 if over else STALLED
        wall = time.perf_counter() - start
    return ProcResult(started_wall, rc, wall, sampler.peaks, tail(log))


def kill_tree(pid: int) -> None:
    """SIGKILL a process and everything under it (only what the harness started)."""
    try:
        root = psutil.Process(pid)
        procs = [*root.children(recursive=True), root]
    except psutil.Error:
        return
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            continue


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def first_mark(folder: Path) -> float | None:
    """The earliest wall time a worker wrote into ``folder`` at its first ``run()``."""
    times = []
    for p in folder.glob("first-*"):
        try:
            times.append(float(p.read_text()))
        except (OSError, ValueError):
            continue
    return min(times) if times else None


def bench_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment every runner gets: ours plus the workload's variables."""
    env = dict(os.environ)
    env.update(extra)
    env.setdefault("PYTHONHASHSEED", "0")
    env["RAY_DEDUP_LOGS"] = "0"
    return env
