"""Streaming a table file as Arrow record batches (for grouping by ``partition_keys``).

CSV is read with every column as text: its type is then the same in every batch and
every file, and the text reaches the group files unchanged. Quoted line breaks are
allowed. JSON lines take the types pyarrow infers from the first block.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from prsd.errors import InputError
from prsd.leader.tabular.cutter import RecordCutter

if TYPE_CHECKING:
    from collections.abc import Iterator

BLOCK_BYTES = 4 * 1024 * 1024
PARQUET_BATCH_ROWS = 65536


@dataclass(frozen=True)
class TableSource:
    """How the input's files are read."""

    fmt: str  # csv | jsonl | parquet
    delimiter: str = ","
    header: str = "all_files_same_headers"
    encoding: str = "utf-8"


def read_batches(
    source: TableSource, path: str, *, column_names: list[str] | None = None
) -> Iterator[pa.RecordBatch]:
    """The file's rows, batch by batch.

    Args:
        source: the input's format and CSV options.
        path: the file.
        column_names: CSV only: the file has no header line; these are its columns
            (``header: from_first_file`` after the first file).

    Raises:
        InputError: the file cannot be parsed (pyarrow's message names the row).
    """
    try:
        if source.fmt == "parquet":
            yield from pq.ParquetFile(path).iter_batches(batch_size=PARQUET_BATCH_ROWS)
        elif source.fmt == "jsonl":
            options = pa_json.ReadOptions(block_size=BLOCK_BYTES)
            yield from pa_json.open_json(path, read_options=options)
        elif os.path.getsize(path) > 0:
            yield from _csv_batches(source, path, column_names)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InputError(f"cannot read {path} for partition_keys: {exc}") from exc


def _csv_batches(
    source: TableSource, path: str, column_names: list[str] | None
) -> Iterator[pa.RecordBatch]:
    if source.header == "no_header":
        raise InputError(f"{path}: partition_keys need column names, but header is no_header")
    names = column_names or header_names(source, path)
    read = pa_csv.ReadOptions(
        block_size=BLOCK_BYTES,
        encoding=source.encoding,
        column_names=column_names,
    )
    parse = pa_csv.ParseOptions(delimiter=source.delimiter, newlines_in_values=True)
    convert = pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()))
    yield from pa_csv.open_csv(
        path, read_options=read, parse_options=parse, convert_options=convert
    )


def header_names(source: TableSource, path: str) -> list[str]:
    """The column names in the file's header line (its first record)."""
    with open(path, "rb") as f:
        fd = f.fileno()
        end = RecordCutter(lambda offset, size: os.pread(fd, size, offset)).cut(1)
        head = os.pread(fd, end, 0).decode(source.encoding)
    rows = list(csv.reader(io.StringIO(head), delimiter=source.delimiter))
    return rows[0] if rows else []
