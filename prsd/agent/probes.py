"""Reading the machine: psutil for CPU, memory, disks, network and processes; NVML for GPUs.

The probes return plain frozen records; turning them into CSV rows is pure
(:mod:`prsd.agent.perfrows`). NVML is optional: a machine without it (or with
``PRSD_GPU_COUNT`` set and no driver) gets empty GPU cells, never an error.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Protocol

import psutil

from prsd.agent.nvml import nvml_can_answer

MB = 1024 * 1024


@dataclass(frozen=True)
class NodeSample:
    """Node-wide counters at one moment (I/O counters are cumulative since boot)."""

    cpu_percent: float
    mem_total: int
    mem_available: int
    mem_used: int
    mem_percent: float
    disk_read_count: int
    disk_write_count: int
    disk_read_bytes: int
    disk_write_bytes: int
    net_sent_bytes: int
    net_recv_bytes: int


@dataclass(frozen=True)
class GpuSample:
    index: int
    utilization_percent: float | None
    memory_used: int | None
    memory_total: int | None
    process_memory: dict[int, int] = field(default_factory=dict)  # pid -> bytes


@dataclass(frozen=True)
class DiskSample:
    mount: str
    device: str
    fstype: str
    total: int
    used: int
    free: int
    percent: float


@dataclass(frozen=True)
class ProcessSample:
    """One worker and its descendants (DataLoader workers, shell-outs) summed."""

    name: str
    pid: int
    gpu: int | None
    cpu_percent: float
    rss: int
    threads: int
    children: int


class GpuProbe(Protocol):
    def count(self) -> int: ...

    def sample(self) -> list[GpuSample]: ...


class NvmlProbe:
    """GPUs through NVML; zero GPUs when NVML cannot be loaded (or, with no driver
    device, is not worth loading: ``prsd.agent.nvml.nvml_can_answer``)."""

    def __init__(self) -> None:
        self._nvml = None
        self._handles: list[object] = []
        if not nvml_can_answer():
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            n = int(pynvml.nvmlDeviceGetCount())
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
        except Exception:  # noqa: BLE001 - no driver, no library: no GPU columns
            self._nvml = None

    def count(self) -> int:
        return len(self._handles)

    def sample(self) -> list[GpuSample]:
        nv = self._nvml
        if nv is None:
            return []
        out = []
        for i, h in enumerate(self._handles):
            try:
                util = nv.nvmlDeviceGetUtilizationRates(h)
                mem = nv.nvmlDeviceGetMemoryInfo(h)
                procs = nv.nvmlDeviceGetComputeRunningProcesses(h)
                per_pid = {int(p.pid): int(p.usedGpuMemory or 0) for p in procs}
                out.append(GpuSample(i, float(util.gpu), int(mem.used), int(mem.total), per_pid))
            except Exception:  # noqa: BLE001 - a GPU that fell off the bus: empty cells
                out.append(GpuSample(i, None, None, None))
        return out

    def close(self) -> None:
        if self._nvml is not None:
            # shutting down a half-broken NVML is best effort
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
            self._nvml = None


def sample_node() -> NodeSample:
    """CPU percent since the previous call (the first call says 0.0), memory, I/O totals."""
    vm = psutil.virtual_memory()
    disk = psutil.disk_io_counters()
    net = psutil.net_io_counters()
    return NodeSample(
        cpu_percent=psutil.cpu_percent(interval=None),
        mem_total=vm.total,
        mem_available=vm.available,
        mem_used=vm.total - vm.available,
        mem_percent=vm.percent,
        disk_read_count=disk.read_count if disk else 0,
        disk_write_count=disk.write_count if disk else 0,
        disk_read_bytes=disk.read_bytes if disk else 0,
        disk_write_bytes=disk.write_bytes if disk else 0,
        net_sent_bytes=net.bytes_sent if net else 0,
        net_recv_bytes=net.bytes_recv if net else 0,
    )


def sample_disks(extra_paths: list[str]) -> list[DiskSample]:
    """Every mounted local file system, plus the ones holding ``extra_paths`` (the spool)."""
    seen: dict[str, DiskSample] = {}
    mounts = [(p.mountpoint, p.device, p.fstype) for p in psutil.disk_partitions(all=False)]
    mounts.extend((_mount_of(path), "", "") for path in extra_paths)
    for mount, device, fstype in mounts:
        if mount in seen:
            continue
        try:
            u = psutil.disk_usage(mount)
        except OSError:
            continue
        seen[mount] = DiskSample(mount, device, fstype, u.total, u.used, u.free, u.percent)
    return sorted(seen.values(), key=lambda d: d.mount)


def _mount_of(path: str) -> str:
    path = os.path.realpath(path)
    while not os.path.ismount(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


class ProcessProbe:
    """CPU percent needs two looks at a process: this keeps the psutil objects between samples."""

    def __init__(self) -> None:
        self._procs: dict[int, psutil.Process] = {}

    def sample(
        self, workers: list[tuple[str, int, int | None]], parents: dict[int, int]
    ) -> list[ProcessSample]:
        """Each worker's row, its descendants summed; ``parents`` (pid -> parent pid of
        every process of the node: the sample's ``ps`` snapshot) finds the descendants,
        so the node's processes are read once per sample, not once per worker."""
        out = []
        live: set[int] = set()
        children = _children_of(parents)
        for name, pid, gpu in workers:
            tree = self._tree(pid, children)
            live.update(p.pid for p in tree)
            cpu = rss = threads = 0.0
            for p in tree:
                try:
                    with p.oneshot():
                        cpu += p.cpu_percent(interval=None)
                        rss += p.memory_info().rss
                        threads += p.num_threads()
                except psutil.Error:
                    continue
            if rss == 0:  # the worker exited (or is a zombie) between the listing and the read
                continue
            out.append(ProcessSample(name, pid, gpu, cpu, int(rss), int(threads), len(tree) - 1))
        self._procs = {pid: p for pid, p in self._procs.items() if pid in live}
        return out

    def _tree(self, pid: int, children: dict[int, list[int]]) -> list[psutil.Process]:
        tree: list[psutil.Process] = []
        todo = [pid]
        while todo:
            at = todo.pop()
            try:
                tree.append(self._known(at))
            except psutil.Error:
                if at == pid:
                    return []
                continue  # a descendant gone since the listing
            todo.extend(children.get(at, ()))
        return tree

    def _known(self, pid: int) -> psutil.Process:
        known = self._procs.get(pid)
        if known is None:
            known = psutil.Process(pid)
            self._procs[pid] = known
        return known


def _children_of(parents: dict[int, int]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        if pid != ppid:
            children.setdefault(ppid, []).append(pid)
    return children
