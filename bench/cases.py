"""The workloads of BENCH.md as runnable cases, per suite (sizes differ, definitions don't)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from bench.inputs import file_set, table_set
from bench.prsd_job import ENTRY_DIR
from bench.script import load

RUNNERS = (
    "prsd-run",
    "prsd-run-spawn",
    "prsd-run-warm",
    "prsd-daemons",
    "sequential",
    "pool",
    "dask",
    "ray",
)
"""prsd-run-spawn: ``prsd run --no-fork-server``, every worker a new interpreter;
prsd-run-warm: ``prsd run`` where a leader and an agent already serve the spool."""
PRSD_RUNNERS = ("prsd-run", "prsd-daemons")
WORKERS = 2
TABLE_MB_BYTES = 1 << 20  # prsd's "1MB" (sizes are 1024-based)


@dataclass(frozen=True)
class Sizes:
    w1_items: int
    w2_items: int
    w3_files: int
    w4_bytes: int
    w6_files: int
    w7_items: tuple[int, int]
    w8_items: int
    w8_agents: tuple[int, ...]
    w9_agents: tuple[int, ...] = (1, 2)
    w9_seconds: float = 1.0
    w9_rig_agents: int | None = None


SUITES: dict[str, tuple[tuple[str, ...], Sizes]] = {
    "tiny": (("W1", "W2", "W5"), Sizes(400, 40, 100, 400_000, 1000, (200, 400), 400, (1, 2))),
    "quick": (
        ("W1", "W2", "W5"),
        Sizes(20_000, 2_000, 2_000, 20_000_000, 10_000, (2_000, 6_000), 20_000, (1, 2, 4)),
    ),
    "full": (
        ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9"),
        Sizes(
            100_000,
            20_000,
            20_000,
            200_000_000,
            1_000_000,
            (10_000, 30_000),
            100_000,
            (1, 2, 4, 8),
            (1, 2, 4, 8, 16, 32),
            20.0,
            8,
        ),
    ),
}
SPECIAL = ("W6", "W7", "W8", "W9")


@dataclass(frozen=True)
class Case:
    """One workload variant, run by each of ``runners``."""

    workload: str
    variant: str
    script: str  # file name in bench/entry
    input_kind: str  # files | csv | parquet
    input_path: str
    mini_batch_size: int  # files per mini-batch, or bytes (tables)
    items: int
    mini_batches: int
    runners: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    workers: int = WORKERS  # worker processes of every runner (prsd: max_concurrency_per_instance)

    @property
    def key(self) -> str:
        return f"{self.workload} {self.variant}"

    @property
    def prsd_mini_batch_size(self) -> str:
        if self.input_kind == "files":
            return str(self.mini_batch_size)
        return f"{max(1, self.mini_batch_size // 1024)}kb"


def calibrate_spin(target_s: float = 0.001) -> int:
    """Loop iterations of ``entry/spin.py`` that take about ``target_s`` on this machine."""
    module = load(str(ENTRY_DIR / "spin.py"))
    setattr(module, "SPIN", 20_000)  # noqa: B010 (the script reads it per call)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(20):
            module._work(7)
        best = min(best, (time.perf_counter() - start) / 20)
    return max(1000, int(20_000 * target_s / best))


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def build_cases(
    suite: str, workloads: tuple[str, ...], runners: tuple[str, ...]
) -> tuple[list[Case], Sizes]:
    """The cases of the regular workloads (W1-W5) in ``workloads``; inputs are made here."""
    sizes = SUITES[suite][1]
    cases: list[Case] = []
    if "W1" in workloads:
        root = str(file_set(sizes.w1_items, 0))
        for mbs in (10, 100):
            n = sizes.w1_items
            cases.append(
                Case("W1", f"mb{mbs}", "echo.py", "files", root, mbs, n, _ceil_div(n, mbs), runners)
            )
    if "W2" in workloads:
        root = str(file_set(sizes.w2_items, 0))
        spin = str(calibrate_spin())
        n = sizes.w2_items
        mbs = 100 if n >= 1000 else 10
        cases.append(
            Case(
                "W2",
                f"mb{mbs}",
                "spin.py",
                "files",
                root,
                mbs,
                n,
                _ceil_div(n, mbs),
                runners,
                {"BENCH_SPIN": spin},
            )
        )
    if "W3" in workloads:
        root = str(file_set(sizes.w3_files, 1024))
        n = sizes.w3_files
        cases.append(
            Case("W3", "mb50", "readlen.py", "files", root, 50, n, _ceil_div(n, 50), runners)
        )
    if "W4" in workloads:
        csv_path, parquet_path = table_set(sizes.w4_bytes, TABLE_MB_BYTES)
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(parquet_path).metadata
        rows, groups = meta.num_rows, meta.num_row_groups
        csv_mbs = _ceil_div(csv_path.stat().st_size, TABLE_MB_BYTES)
        for kind, path, mbs in (("csv", csv_path, csv_mbs), ("parquet", parquet_path, groups)):
            cases.append(
                Case("W4", kind, "table.py", kind, str(path), TABLE_MB_BYTES, rows, mbs, runners)
            )
    if "W5" in workloads:
        root = str(file_set(10, 0))
        cases.append(Case("W5", "10items", "echo.py", "files", root, 1, 10, 10, runners))
    return cases, sizes
