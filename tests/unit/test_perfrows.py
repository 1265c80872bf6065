"""The resource monitor's rows and snapshot names."""

from __future__ import annotations

from datetime import UTC, datetime

from prsd.agent import perfrows
from prsd.agent.probes import GpuSample, NodeSample, ProcessSample
from prsd.agent.pslist import PsRow

WHEN = datetime(2026, 11, 23, 9, 5, 7, tzinfo=UTC)
MB = 1024 * 1024
NODE = NodeSample(12.5, 8000 * MB, 6000 * MB, 2000 * MB, 25.0, 10, 20, 3 * MB, 4 * MB, MB, 2 * MB)


def test_node_row_has_azure_columns_then_three_per_gpu() -> None:
    """Azure's twelve columns, then utilisation and memory per GPU; unknown GPUs stay empty."""
    cols = perfrows.node_columns(2)
    assert cols[:12] == list(perfrows.NODE_COLUMNS)
    assert cols[12:] == [
        "Gpu 0 Utilization Percent",
        "Gpu 0 Memory Used (MB)",
        "Gpu 0 Memory Total (MB)",
        "Gpu 1 Utilization Percent",
        "Gpu 1 Memory Used (MB)",
        "Gpu 1 Memory Total (MB)",
    ]
    row = perfrows.node_row(WHEN, NODE, [GpuSample(0, 87.0, 512 * MB, 16384 * MB)], 2)
    assert len(row) == len(cols)
    assert row[:6] == ["2026-11-23T09:05:07Z", "12.5", "8000.0", "6000.0", "2000.0", "25.0"]
    assert row[12:] == ["87.0", "512.0", "16384.0", "", "", ""]


def test_process_rows_take_gpu_memory_by_pid() -> None:
    """A worker's GPU memory comes from NVML's per-process list."""
    procs = [ProcessSample("process000", 41, 0, 99.5, 300 * MB, 4, 1)]
    gpus = [GpuSample(0, 50.0, MB, MB, {41: 256 * MB})]
    rows = perfrows.process_rows(WHEN, procs, gpus)
    assert rows == [
        ["2026-11-23T09:05:07Z", "process000", "41", "99.5", "300.0", "4", "1", "0", "256.0"]
    ]
    assert len(rows[0]) == len(perfrows.PROCESS_COLUMNS)


def test_snapshot_path_and_text() -> None:
    """os/<%Y%m%d%H>/processes_<%M>, a header, heaviest process first."""
    assert perfrows.snapshot_relpath(WHEN) == "os/2026112309/processes_05"
    text = perfrows.ps_text(
        WHEN,
        [
            PsRow(1, 0, "root", 0.0, MB, "sleeping", "init"),
            PsRow(7, 1, "u", 80.0, MB, "running", "py"),
        ],
    )
    lines = text.splitlines()
    assert lines[0] == "# 2026-11-23T09:05:07Z"
    assert lines[1].split() == ["PID", "PPID", "USER", "%CPU", "RSS(MB)", "STAT", "COMMAND"]
    assert lines[2].split()[0] == "7"
