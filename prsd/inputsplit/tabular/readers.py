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
from prsd.inputsplit.tabular.cutter import RecordCutter
from prsd.inputsplit.tabular.inputfile import input_file, open_input

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO

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
        with input_file(path) as f:
            if source.fmt == "parquet":
                yield from pq.ParquetFile(f).iter_batches(batch_size=PARQUET_BATCH_ROWS)
            elif source.fmt == "jsonl":
                options = pa_json.ReadOptions(block_size=BLOCK_BYTES)
                yield from pa_json.open_json(f, read_options=options)
            elif os.fstat(f.fileno()).st_size > 0:
                yield from _csv_batches(source, path, f, column_names)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InputError(f"cannot read {path} for partition_keys: {exc}") from exc


def _csv_batches(
    source: TableSource, path: str, f: BinaryIO, column_names: list[str] | None
) -> Iterator[pa.RecordBatch]:
    if source.header == "no_header":
        raise InputError(f"{path}: partition_keys need column names, but header is no_header")
    names = column_names or _header_names(source, f.fileno())
    read = pa_csv.ReadOptions(
        block_size=BLOCK_BYTES,
        encoding=source.encoding,
        column_names=column_names,
    )
    parse = pa_csv.ParseOptions(delimiter=source.delimiter, newlines_in_values=True)
    convert = pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()))
    yield from pa_csv.open_csv(f, read_options=read, parse_options=parse, convert_options=convert)


def header_names(source: TableSource, path: str) -> list[str]:
    """The column names in the file's header line (its first record)."""
    fd = open_input(path)
    try:
        return _header_names(source, fd)
    finally:
        os.close(fd)


def _header_names(source: TableSource, fd: int) -> list[str]:
    end = RecordCutter(lambda offset, size: os.pread(fd, size, offset)).cut(1)
    head = os.pread(fd, end, 0).decode(source.encoding)
    rows = list(csv.reader(io.StringIO(head), delimiter=source.delimiter))
    return rows[0] if rows else []
