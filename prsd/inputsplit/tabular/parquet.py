"""Planning Parquet inputs: consecutive row groups of one file, up to ``mini_batch_size``.

Only each file's footer is read (``pyarrow.parquet.ParquetFile.metadata``), never a
data page. A row group's size is its compressed size on disk (the sum of its column
chunks), the figure a user sees in ``ls``. A row group larger than the size travels
alone; a file with one row group is one mini-batch. Row counts come from the footer,
so every mini-batch's item count is exact before it runs.

Payload (JSON): ``{"path": FILE, "row_groups": [i, j, ...]}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from prsd.errors import InputError
from prsd.inputsplit.tabular.inputfile import input_file

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence


@dataclass(frozen=True)
class RowGroup:
    """One row group as the footer describes it."""

    index: int
    rows: int
    size_bytes: int


def pack_row_groups(groups: Sequence[RowGroup], size_bytes: int) -> Iterator[list[RowGroup]]:
    """Consecutive row groups, each run as large as fits in ``size_bytes`` (at least one)."""
    run: list[RowGroup] = []
    total = 0
    for group in groups:
        if run and total + group.size_bytes > size_bytes:
            yield run
            run, total = [], 0
        run.append(group)
        total += group.size_bytes
    if run:
        yield run


def row_groups(path: str) -> list[RowGroup]:
    """The row groups of a Parquet file, from its footer.

    Raises:
        InputError: the file is not Parquet (no footer, a damaged one).
    """
    try:
        with input_file(path) as f:
            meta = pq.ParquetFile(f).metadata
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InputError(f"cannot read the Parquet file {path}: {exc}") from exc
    out = []
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        size = sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))
        out.append(RowGroup(i, rg.num_rows, size))
    return out


def plan_parquet_files(paths: Iterable[str], size_bytes: int) -> Iterator[tuple[Any, int]]:
    """``(payload, rows)`` of every mini-batch, file by file in input order."""
    for path in paths:
        for run in pack_row_groups(row_groups(path), size_bytes):
            rows = sum(g.rows for g in run)
            if rows:
                yield {"path": path, "row_groups": [g.index for g in run]}, rows
