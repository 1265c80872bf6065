"""Splitting an input into mini-batches the way every alternative runner does: pure functions.

The units are plain JSON values so they travel to any worker: a list of paths, a byte
range of a CSV file (the header is carried to every piece), or one Parquet row group.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

Unit = Any
"""One mini-batch: a list of paths, ``["csv", path, start, end]`` or ``["parquet", path, group]``."""


def list_files(root: str) -> list[str]:
    """Every regular file under ``root``, in sorted full-path order (prsd's order)."""
    out: list[str] = []
    with os.scandir(root) as it:
        entries = sorted(it, key=lambda e: e.name + "/" if e.is_dir() else e.name)
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            out.extend(list_files(entry.path))
        elif entry.is_file(follow_symlinks=False):
            out.append(entry.path)
    return out


def chunks(items: Sequence[str], size: int) -> Iterator[list[str]]:
    """Consecutive pieces of ``size`` items (the last may be shorter)."""
    if size < 1:
        raise ValueError(f"mini-batch size must be at least 1, not {size}")
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def csv_units(path: str, target_bytes: int) -> list[Unit]:
    """``["csv", path, start, end]`` pieces of about ``target_bytes``, ending after a newline."""
    units: list[Unit] = []
    with open(path, "rb") as f:
        f.readline()
        start = f.tell()
        size = os.fstat(f.fileno()).st_size
        while start < size:
            f.seek(min(start + target_bytes, size) - 1)
            f.readline()
            end = min(f.tell(), size)
            units.append(["csv", path, start, end])
            start = end
    return units


def parquet_units(path: str) -> list[Unit]:
    """``["parquet", path, group]`` for each row group (reads the footer only)."""
    import pyarrow.parquet as pq

    return [["parquet", path, g] for g in range(pq.ParquetFile(path).num_row_groups)]
