"""The resource monitor: every ``resource_monitor_interval`` seconds, the node's use in CSV.

For each job a node serves it appends to ``logs/perf/<node>/node_resource_usage.csv``,
``processes_resource_usage.csv`` (one row per worker, its descendants summed) and
``node_disk_usage.csv``, and writes a ``ps``-style snapshot to
``os/<%Y%m%d%H>/processes_<%M>``. It is set up beside the job's first steps (NVML's
init, its folder), samples once the node's first workers are up (each answered
``ready`` or failed; :data:`FIRST_SAMPLE_S` at the latest, sooner when the interval is
shorter), every interval after that, and once when it stops, so even a short job has
a sample with its workers and one at its end (one that ends before the first sample
has the last alone). Not at the very start: a sample reads every process of the node
(10-15 ms of CPU), and there it competes with the workers' start for the same cores.
An interval of 0 turns it off.

The monitor measures itself: the CPU and wall time of every sample, reported in the
node's ``_main.txt`` when it stops, so its cost is visible in every job.
"""

from __future__ import annotations

import contextlib
import csv
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

import anyio
import anyio.to_thread
import psutil

from prsd.agent import perfrows
from prsd.agent.nodelog import append_line
from prsd.agent.probes import (
    GpuProbe,
    NvmlProbe,
    ProcessProbe,
    sample_disks,
    sample_node,
)
from prsd.agent.pslist import PsLister
from prsd.wire.logtree import DISK_USAGE_FILE, NODE_USAGE_FILE, PROCESSES_USAGE_FILE

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable
    from pathlib import Path

    from prsd.agent.context import JobContext

FIRST_SAMPLE_S = 1.0
"""The first sample waits this long at most for the node's workers to be up."""


class _Proc(Protocol):
    @property
    def pid(self) -> int: ...


class WorkerLike(Protocol):
    """What the monitor needs of a worker session."""

    name: str
    gpu: int | None

    @property
    def proc(self) -> _Proc | None: ...


@dataclass
class MonitorCost:
    """The monitor's own cost: CPU seconds (of the sampling thread) and wall seconds."""

    samples: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    per_sample_cpu_s: list[float] = field(default_factory=list)

    def add(self, cpu_s: float, wall_s: float) -> None:
        self.samples += 1
        self.cpu_s += cpu_s
        self.wall_s += wall_s
        self.per_sample_cpu_s.append(cpu_s)

    def describe(self, interval_s: float) -> str:
        if not self.samples:
            return "resource monitor: no samples"
        cpu_ms = self.cpu_s / self.samples * 1000
        wall_ms = self.wall_s / self.samples * 1000
        share = cpu_ms / 1000 / interval_s * 100
        return (
            f"resource monitor: {self.samples} samples every {interval_s:g} s; "
            f"{cpu_ms:.1f} ms CPU and {wall_ms:.1f} ms wall per sample "
            f"({share:.3f}% of one core at this interval)"
        )


class ResourceMonitor:
    """Samples the node and writes the perf files of one job (synchronous; call in a thread)."""

    def __init__(
        self, perf_dir: Path, *, gpu_count: int, gpus: GpuProbe, extra_paths: list[str]
    ) -> None:
        self.perf_dir = perf_dir
        self.gpus = gpus
        self.gpu_count = max(gpu_count, gpus.count())
        self.extra_paths = extra_paths
        self.procs = ProcessProbe()
        self.ps = PsLister()
        self.cost = MonitorCost()
        self.failures = 0
        self.first_failure = ""
        perf_dir.mkdir(parents=True, exist_ok=True)
        sample_node()  # primes psutil's CPU percent, so the first row means something

    def sample(self, workers: list[tuple[str, int, int | None]], when: datetime) -> None:
        cpu0, wall0 = time.thread_time(), time.perf_counter()
        node = sample_node()
        gpus = self.gpus.sample()
        ps = self.ps.sample()  # every process, once: the workers' trees come from it too
        procs = self.procs.sample(workers, {row.pid: row.ppid for row in ps})
        disks = sample_disks(self.extra_paths)
        d = self.perf_dir
        _append_csv(
            d / NODE_USAGE_FILE,
            perfrows.node_columns(self.gpu_count),
            [perfrows.node_row(when, node, gpus, self.gpu_count)],
        )
        _append_csv(
            d / PROCESSES_USAGE_FILE,
            list(perfrows.PROCESS_COLUMNS),
            perfrows.process_rows(when, procs, gpus),
        )
        _append_csv(
            d / DISK_USAGE_FILE, list(perfrows.DISK_COLUMNS), perfrows.disk_rows(when, disks)
        )
        snap = d / perfrows.snapshot_relpath(when)
        snap.parent.mkdir(parents=True, exist_ok=True)
        snap.write_text(perfrows.ps_text(when, ps), encoding="utf-8")
        self.cost.add(time.thread_time() - cpu0, time.perf_counter() - wall0)

    def sample_safely(self, workers: list[tuple[str, int, int | None]], when: datetime) -> None:
        """A sample whose failure (disk full, a process gone mid-read) is counted, not raised:
        the monitor never stops a job."""
        try:
            self.sample(workers, when)
        except (OSError, psutil.Error) as exc:
            self.failures += 1
            self.first_failure = self.first_failure or f"{type(exc).__name__}: {exc}"

    def describe(self, interval_s: float) -> str:
        text = self.cost.describe(interval_s)
        if self.failures:
            text += f"; {self.failures} samples failed, the first with {self.first_failure}"
        return text


def _append_csv(path: Path, columns: list[str], rows: list[list[str]]) -> None:
    new = not path.exists()
    with open(path, "a", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        if new:
            w.writerow(columns)
        w.writerows(rows)


def worker_refs(sessions: Iterable[WorkerLike]) -> list[tuple[str, int, int | None]]:
    """(name, pid, GPU index) of the workers that have a process now."""
    refs = []
    for s in list(sessions):
        proc = s.proc
        if proc is not None:
            refs.append((s.name, proc.pid, s.gpu))
    return sorted(refs)


@asynccontextmanager
async def open_resource_monitor(
    ctx: JobContext,
    sessions: Callable[[], Iterable[WorkerLike]],
    *,
    gpus: GpuProbe | None = None,
    workers_up: anyio.Event | None = None,
) -> AsyncIterator[None]:
    """Run the job's resource monitor on this node while the block runs (nothing when off).

    The block starts at once: the monitor is set up (NVML's init, its perf folder, a
    first reading of the node) in a thread beside it, so it neither holds back the
    job's first workers nor blocks the event loop (NVML's init was called on it). The
    first sample is taken when ``workers_up`` is set, or after :data:`FIRST_SAMPLE_S`
    (the interval, if shorter) at the latest.
    """
    interval_s = ctx.spec.resource_monitor_interval_s
    if interval_s <= 0:
        yield
        return
    perf_dir = ctx.layout.log_tree.perf(ctx.node_id)
    made: list[ResourceMonitor] = []
    tried: list[GpuProbe] = []  # the GPU probe, once set-up began (NVML's init included)

    def set_up() -> None:  # in a thread; once (the loop's, or the end's if the loop had none)
        if tried:
            return
        probe = gpus or NvmlProbe()
        tried.append(probe)
        try:
            made.append(
                ResourceMonitor(
                    perf_dir,
                    gpu_count=ctx.gpu_count,
                    gpus=probe,
                    extra_paths=[str(ctx.layout.root)],
                )
            )
        except OSError as exc:
            with contextlib.suppress(OSError):
                append_line(
                    ctx.main_log(),
                    f"resource monitor off: cannot write {perf_dir}: {exc}",
                    ctx.layout.root,
                )

    async def take() -> None:
        if made:
            refs = worker_refs(sessions())
            await anyio.to_thread.run_sync(made[0].sample_safely, refs, datetime.now(UTC))

    async def loop() -> None:
        # Set up beside the job's first steps; the first sample once the workers are
        # up (a ps of every process on the node would hold back their start).
        await anyio.to_thread.run_sync(set_up)
        if not made:
            return
        with anyio.move_on_after(min(interval_s, FIRST_SAMPLE_S)):
            await (workers_up.wait() if workers_up is not None else anyio.sleep_forever())
        while True:
            await take()
            await anyio.sleep(interval_s)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(loop)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(set_up)  # a block that ended before the loop ran
            if made:
                await take()
                with contextlib.suppress(OSError):
                    append_line(ctx.main_log(), made[0].describe(interval_s), ctx.layout.root)
            if tried and isinstance(tried[0], NvmlProbe):
                tried[0].close()
