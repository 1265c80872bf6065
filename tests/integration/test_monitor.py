"""The resource monitor against real processes, with a fake NVML at the edge."""

from __future__ import annotations

import csv
import dataclasses
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import anyio
import psutil

from prsd.agent.context import JobContext
from prsd.agent.monitor import FIRST_SAMPLE_S, ResourceMonitor, open_resource_monitor
from prsd.agent.perfrows import gpu_columns
from prsd.agent.probes import GpuSample, ProcessProbe
from prsd.agent.pslist import PsLister
from prsd.jobspec.model import InputSpec, JobSpec
from prsd.spool.layout import JobLayout
from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from prsd.agent.monitor import WorkerLike

MB = 1024 * 1024
CHILD = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print('ready', flush=True); time.sleep(60)"


class FakeGpus:
    """Two GPUs; the worker's pid holds 300 MB on GPU 1."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def count(self) -> int:
        return 2

    def sample(self) -> list[GpuSample]:
        return [
            GpuSample(0, 5.0, 100 * MB, 16000 * MB),
            GpuSample(1, 75.0, 400 * MB, 16000 * MB, {self.pid: 300 * MB}),
        ]


@contextmanager
def _worker_with_a_child() -> Iterator[int]:
    """A running process with one child (both killed at the end): its pid."""
    worker = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None and worker.stdout.readline() == "ready\n"
        yield worker.pid
    finally:
        for child in psutil.Process(worker.pid).children(recursive=True):
            child.kill()
        worker.kill()
        worker.wait()
        if worker.stdout is not None:
            worker.stdout.close()


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_samples_of_a_worker_and_its_child(tmp_path: Path) -> None:
    """Node, GPU, per-worker (child summed) and disk rows; a ps snapshot per minute."""
    with _worker_with_a_child() as pid:
        mon = ResourceMonitor(
            tmp_path / "perf", gpu_count=0, gpus=FakeGpus(pid), extra_paths=[str(tmp_path)]
        )
        start = datetime(2026, 11, 23, 9, 59, 30, tzinfo=UTC)
        for k in range(3):
            mon.sample([("process000", pid, 1)], start + timedelta(seconds=30 * k))
    node = _rows(tmp_path / "perf" / "node_resource_usage.csv")
    assert len(node) == 3
    assert node[0]["Gpu 1 Utilization Percent"] == "75.0"
    assert node[0]["Gpu 0 Memory Total (MB)"] == "16000.0"
    procs = _rows(tmp_path / "perf" / "processes_resource_usage.csv")
    assert [p["Process Name"] for p in procs] == ["process000"] * 3
    assert {p["Child Processes"] for p in procs} == {"1"}
    assert {p["Gpu Index"] for p in procs} == {"1"}
    assert {p["Gpu Memory Used (MB)"] for p in procs} == {"300.0"}
    assert float(procs[0]["Memory Rss (MB)"]) > 5
    disks = _rows(tmp_path / "perf" / "node_disk_usage.csv")
    assert {d["Utc Time"] for d in disks} == {
        "2026-11-23T09:59:30Z",
        "2026-11-23T10:00:00Z",
        "2026-11-23T10:00:30Z",
    }
    snaps = sorted(
        p.relative_to(tmp_path / "perf").as_posix() for p in (tmp_path / "perf" / "os").rglob("*")
    )
    assert snaps == [
        "os/2026112309",
        "os/2026112309/processes_59",
        "os/2026112310",
        "os/2026112310/processes_00",
    ]
    assert str(pid) in (tmp_path / "perf" / "os" / "2026112310" / "processes_00").read_text()
    assert mon.cost.samples == 3 and mon.cost.cpu_s > 0


def _ctx(tmp_path: Path, interval_s: float) -> JobContext:
    spec = JobSpec(
        name="m",
        job_dir=str(tmp_path),
        input=InputSpec(paths=(str(tmp_path),), format="files"),
        mini_batch_size=1,
        code_dir=str(tmp_path),
        entry_script="score.py",
    )
    spec = dataclasses.replace(spec, resource_monitor_interval_s=interval_s)
    return JobContext(JobLayout(tmp_path / "job", "job"), spec, "n1", 0, "files")


def test_a_workers_tree_from_the_ps_snapshot_is_psutils(tmp_path: Path) -> None:
    """The workers' descendants found from the snapshot's parent pids (one read of every
    process per sample) are the ones psutil finds (one read per worker)."""
    with _worker_with_a_child() as pid:
        refs: list[tuple[str, int, int | None]] = [("process000", pid, None)]
        refs.append(("gone", 2**22 + 7, None))
        parents = {row.pid: row.ppid for row in PsLister().sample()}
        by_ps = ProcessProbe().sample(refs, parents)
        by_psutil = [len(psutil.Process(pid).children(recursive=True))]
    assert [(r.name, r.children) for r in by_ps] == [("process000", 1)]
    assert [r.children for r in by_ps] == by_psutil == [1]


def test_interval_zero_is_off_and_a_run_reports_its_cost(tmp_path: Path) -> None:
    """Interval 0 writes nothing; otherwise samples while running (the first after the
    interval, with no event to wait for) and one at the end."""

    async def main() -> None:
        async with open_resource_monitor(_ctx(tmp_path / "off", 0), list):
            await anyio.sleep(0.3)
        async with open_resource_monitor(_ctx(tmp_path / "on", 0.2), list):
            await anyio.sleep(1.5)

    anyio.run(main)
    assert not (tmp_path / "off" / "job" / "logs").exists()
    rows = _rows(tmp_path / "on" / "job" / "logs" / "perf" / "n1" / "node_resource_usage.csv")
    assert 4 <= len(rows) <= 10
    main_log = (tmp_path / "on" / "job" / "logs" / "sys" / "node" / "n1" / "_main.txt").read_text()
    assert f"resource monitor: {len(rows)} samples every 0.2 s" in main_log


class SlowGpus(FakeGpus):
    """GPUs whose counting (NVML's init on a GPU machine) takes ``delay_s``."""

    def __init__(self, pid: int, delay_s: float) -> None:
        super().__init__(pid)
        self.delay_s = delay_s

    def count(self) -> int:
        time.sleep(self.delay_s)
        return super().count()


def test_the_block_starts_before_the_monitor_is_set_up(tmp_path: Path) -> None:
    """A job's workers start while the monitor sets itself up (NVML's init, the first
    reading of the node): the block is entered at once, and the samples still come,
    while it runs and at the end; a block that ends first still gets the last one."""
    entered: list[float] = []

    async def main() -> None:
        t0 = time.monotonic()
        ctx = _ctx(tmp_path / "slow", 0.2)
        async with open_resource_monitor(ctx, list, gpus=SlowGpus(os.getpid(), 1.0)):
            entered.append(time.monotonic() - t0)
            await anyio.sleep(1.8)
        async with open_resource_monitor(
            _ctx(tmp_path / "short", 0.2), list, gpus=SlowGpus(os.getpid(), 0.5)
        ):
            pass  # ends long before the set-up does

    anyio.run(main)
    assert entered[0] < 0.5, f"the block waited {entered[0]:.2f} s for the monitor's set-up"
    slow = _rows(tmp_path / "slow" / "job" / "logs" / "perf" / "n1" / "node_resource_usage.csv")
    assert 2 <= len(slow) <= 6  # the first after the 1 s set-up, every 0.2 s, the last
    assert set(gpu_columns(1)) <= set(slow[0]), "the slow probe's two GPUs were not counted"
    short = _rows(tmp_path / "short" / "job" / "logs" / "perf" / "n1" / "node_resource_usage.csv")
    assert len(short) == 1
    log = (tmp_path / "short" / "job" / "logs" / "sys" / "node" / "n1" / "_main.txt").read_text()
    assert "resource monitor: 1 samples every 0.2 s" in log


def test_a_failing_sample_is_counted_not_raised(tmp_path: Path) -> None:
    """A sample that cannot be written is counted and named; the monitor never stops a job."""
    mon = ResourceMonitor(tmp_path / "perf", gpu_count=0, gpus=FakeGpus(1), extra_paths=[])
    (tmp_path / "perf" / "node_resource_usage.csv").mkdir()
    mon.sample_safely([], datetime.now(UTC))
    assert mon.failures == 1 and mon.first_failure.startswith("IsADirectoryError")
    assert "1 samples failed, the first with IsADirectoryError" in mon.describe(1.0)


def test_the_ps_snapshot_names_each_process_and_its_user() -> None:
    """A real snapshot of this machine: this test's own process, under its login name."""
    import pwd

    from prsd.agent.pslist import PsLister

    rows = {r.pid: r for r in PsLister().sample()}
    me = rows[os.getpid()]
    assert me.user == pwd.getpwuid(os.getuid()).pw_name
    assert "pytest" in me.command or "python" in me.command
    assert me.rss > 0 and me.ppid == os.getppid()


def test_the_first_sample_waits_for_the_workers(tmp_path: Path) -> None:
    """No sample while the node's first workers start (it would compete with them for
    the cores): the first comes when the job says its workers are up, or after
    FIRST_SAMPLE_S at the latest; then every interval, and one at the end."""
    looks: dict[str, list[float]] = {"up": [], "late": []}
    t0 = [0.0]

    def sessions(key: str) -> Callable[[], list[WorkerLike]]:
        def look() -> list[WorkerLike]:  # each sample asks for the workers once
            looks[key].append(time.monotonic() - t0[0])
            return []

        return look

    async def main() -> None:
        up = anyio.Event()
        t0[0] = time.monotonic()
        async with open_resource_monitor(
            _ctx(tmp_path / "up", 600.0), sessions("up"), workers_up=up
        ):
            await anyio.sleep(0.4)
            up.set()
            await anyio.sleep(0.4)
        t0[0] = time.monotonic()
        async with open_resource_monitor(
            _ctx(tmp_path / "late", 600.0), sessions("late"), workers_up=anyio.Event()
        ):
            await anyio.sleep(FIRST_SAMPLE_S + 0.5)

    anyio.run(main)
    first, last = looks["up"]
    assert 0.4 <= first < 0.75, looks
    assert last >= 0.8
    first, last = looks["late"]
    assert FIRST_SAMPLE_S <= first < FIRST_SAMPLE_S + 0.4, looks
    assert last >= FIRST_SAMPLE_S + 0.5


INIT_SCRIPT = """
    import time

    def init():
        time.sleep(0.3)

    def run(mini_batch):
        time.sleep(0.4)
        return mini_batch
"""

INIT_YAML = """
    name: firstsample
    input_data: ./data
    mini_batch_size: "1"
    resources: {max_concurrency_per_instance: 2}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def test_a_jobs_first_sample_has_its_workers(tmp_path: Path) -> None:
    """A real job (the monitor's default interval, 600 s): two samples, the first taken
    once both workers answered ready, so it has a row for each; none at the start."""
    r = run_prsd(make_job(tmp_path, INIT_SCRIPT, INIT_YAML, files=6), tmp_path / "spool")
    assert r.returncode == 0, r.stderr + r.stdout
    (perf,) = (tmp_path / "spool").glob("jobs/*/logs/perf/*")
    (main_log,) = (tmp_path / "spool").glob("jobs/*/logs/sys/node/*/_main.txt")
    assert "resource monitor: 2 samples every 600 s" in main_log.read_text(), main_log.read_text()
    procs = _rows(perf / "processes_resource_usage.csv")
    first = min(p["Utc Time"] for p in procs)
    assert sorted(p["Process Name"] for p in procs if p["Utc Time"] == first) == [
        "process000",
        "process001",
    ]
