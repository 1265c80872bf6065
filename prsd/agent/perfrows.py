"""The resource monitor's files as pure functions: column names, rows, snapshot paths.

``node_resource_usage.csv`` starts with Azure's columns and adds three per GPU; the
other files' columns are prsd's own (Azure documents them only as screenshots), and
``logs/readme.txt`` explains every one. Sizes are MB (2**20 bytes), times UTC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime

    from prsd.agent.probes import DiskSample, GpuSample, NodeSample, ProcessSample
    from prsd.agent.pslist import PsRow

MB = 1024 * 1024

NODE_COLUMNS = (
    "Utc Time",
    "Cpu Percent",
    "Memory Total (MB)",
    "Memory Available (MB)",
    "Memory Used (MB)",
    "Memory Used Percent",
    "Disk Io Read Count",
    "Disk Io Write Count",
    "Disk Io Read (MB)",
    "Disk Io Write (MB)",
    "Network Sent (MB)",
    "Network Recv (MB)",
)

PROCESS_COLUMNS = (
    "Utc Time",
    "Process Name",
    "Pid",
    "Cpu Percent",
    "Memory Rss (MB)",
    "Threads",
    "Child Processes",
    "Gpu Index",
    "Gpu Memory Used (MB)",
)

DISK_COLUMNS = (
    "Utc Time",
    "Mount Point",
    "Device",
    "File System",
    "Total (MB)",
    "Used (MB)",
    "Free (MB)",
    "Used Percent",
)


def gpu_columns(index: int) -> tuple[str, str, str]:
    return (
        f"Gpu {index} Utilization Percent",
        f"Gpu {index} Memory Used (MB)",
        f"Gpu {index} Memory Total (MB)",
    )


def node_columns(gpu_count: int) -> list[str]:
    cols = list(NODE_COLUMNS)
    for i in range(gpu_count):
        cols.extend(gpu_columns(i))
    return cols


def utc_cell(when: datetime) -> str:
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")


def _mb(n: int | None) -> str:
    return "" if n is None else f"{n / MB:.1f}"


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}"


def node_row(when: datetime, node: NodeSample, gpus: list[GpuSample], gpu_count: int) -> list[str]:
    """One row of node_resource_usage.csv; GPU cells stay empty where NVML said nothing."""
    row = [
        utc_cell(when),
        _pct(node.cpu_percent),
        _mb(node.mem_total),
        _mb(node.mem_available),
        _mb(node.mem_used),
        _pct(node.mem_percent),
        str(node.disk_read_count),
        str(node.disk_write_count),
        _mb(node.disk_read_bytes),
        _mb(node.disk_write_bytes),
        _mb(node.net_sent_bytes),
        _mb(node.net_recv_bytes),
    ]
    by_index = {g.index: g for g in gpus}
    for i in range(gpu_count):
        g = by_index.get(i)
        if g is None:
            row.extend(["", "", ""])
        else:
            row.extend([_pct(g.utilization_percent), _mb(g.memory_used), _mb(g.memory_total)])
    return row


def process_rows(
    when: datetime, procs: list[ProcessSample], gpus: list[GpuSample]
) -> list[list[str]]:
    """Rows of processes_resource_usage.csv: one per worker."""
    gpu_mem: dict[int, int] = {}
    for g in gpus:
        gpu_mem.update(g.process_memory)
    rows = []
    for p in procs:
        mem = gpu_mem.get(p.pid)
        rows.append(
            [
                utc_cell(when),
                p.name,
                str(p.pid),
                _pct(p.cpu_percent),
                _mb(p.rss),
                str(p.threads),
                str(p.children),
                "" if p.gpu is None else str(p.gpu),
                _mb(mem),
            ]
        )
    return rows


def disk_rows(when: datetime, disks: list[DiskSample]) -> list[list[str]]:
    return [
        [
            utc_cell(when),
            d.mount,
            d.device,
            d.fstype,
            _mb(d.total),
            _mb(d.used),
            _mb(d.free),
            _pct(d.percent),
        ]
        for d in disks
    ]


def snapshot_relpath(when: datetime) -> str:
    """``os/<%Y%m%d%H>/processes_<%M>`` (Azure's layout; UTC)."""
    return f"os/{when:%Y%m%d%H}/processes_{when:%M}"


def ps_text(when: datetime, rows: list[PsRow]) -> str:
    """A ``ps``-style table of every process, heaviest CPU first."""
    head = f"{'PID':>8} {'PPID':>8} {'USER':<12} {'%CPU':>6} {'RSS(MB)':>9} {'STAT':<9} COMMAND"
    lines = [f"# {utc_cell(when)}", head]
    lines.extend(
        f"{r.pid:>8} {r.ppid:>8} {r.user[:12]:<12} {r.cpu_percent:>6.1f} "
        f"{r.rss / MB:>9.1f} {r.status[:9]:<9} {r.command[:400]}"
        for r in sorted(rows, key=lambda r: (-r.cpu_percent, r.pid))
    )
    return "\n".join(lines) + "\n"
