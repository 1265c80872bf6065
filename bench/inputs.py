"""The workloads' input data, made once and kept under the data folder (``BENCH_DATA``).

Each data set is a folder that holds a ``.complete`` marker once fully written, so an
interrupted generation is redone, and a finished one is reused by later runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

COMPLETE = ".complete"


def data_root() -> Path:
    """``$BENCH_DATA``, else ``prsd-bench-data`` in the temp folder (outside the repository)."""
    return Path(os.environ.get("BENCH_DATA") or Path(tempfile.gettempdir()) / "prsd-bench-data")


def _fresh(folder: Path) -> bool:
    """True if ``folder`` must be (re)made; clears a partial one."""
    if (folder / COMPLETE).exists():
        return False
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return True


def file_set(count: int, size: int) -> Path:
    """A flat folder ``files/`` of ``count`` files of ``size`` bytes each (``item0000042``)."""
    folder = data_root() / f"files-{count}-{size}"
    inner = folder / "files"
    if _fresh(folder):
        inner.mkdir()
        body = (b"x" * 63 + b"\n") * (size // 64) + b"y" * (size % 64)
        fd_flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        for i in range(count):
            fd = os.open(inner / f"item{i:07d}", fd_flags, 0o644)
            if body:
                os.write(fd, body)
            os.close(fd)
        (folder / COMPLETE).touch()
    return inner


def table_rows(target_bytes: int) -> int:
    """Rows of :func:`table_set` that make about ``target_bytes`` of CSV."""
    return max(1, target_bytes // 40)


def table_set(target_bytes: int, row_group_bytes: int) -> tuple[Path, Path]:
    """A CSV of about ``target_bytes`` and the same rows as Parquet (row groups of about
    ``row_group_bytes`` of CSV each); columns ``id, name, qty, price``."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = data_root() / f"table-{target_bytes}-{row_group_bytes}"
    csv_path, parquet_path = folder / "data.csv", folder / "data.parquet"
    if _fresh(folder):
        rows = table_rows(target_bytes)
        rng = np.random.default_rng(8)
        names = np.array(["alpha", "beta gamma", "delta", 'eps "q"', "zeta"])
        df = pd.DataFrame(
            {
                "id": np.arange(rows, dtype=np.int64),
                "name": names[rng.integers(0, len(names), rows)],
                "qty": rng.integers(0, 1000, rows, dtype=np.int64),
                "price": np.round(rng.random(rows) * 100, 2),
            }
        )
        df.to_csv(csv_path, index=False)
        per_row = max(1, csv_path.stat().st_size // rows)
        pq.write_table(
            pa.Table.from_pandas(df, preserve_index=False),
            parquet_path,
            row_group_size=max(1, row_group_bytes // per_row),
        )
        (folder / COMPLETE).touch()
    return csv_path, parquet_path
