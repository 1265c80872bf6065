"""``partition_keys`` on a table: one mini-batch per key combination, whatever the size.

A group is complete only when every input file has been read, and the input may be
larger than memory, so grouping is a spill to the job's folder in the spool
(``jobs/<id>/partitions/``), in two passes:

1. Stream every file in record batches (pyarrow; a CSV is read with every column as
   text, so a column's type can never change between batches). Each distinct key
   combination gets a number in order of first appearance; each row goes to bucket
   ``number % buckets``, an Arrow stream file. Memory: one record batch.
2. Read one bucket at a time, cut it into its groups (row order kept) and write each
   group to its own file: CSV input gives CSV groups (the worker parses them as it
   parses any CSV piece, with the same type inference), Parquet and JSON lines give
   Parquet groups. Memory: one bucket, about ``BUCKET_BYTES`` of input (more once the input
   exceeds ``MAX_BUCKETS * BUCKET_BYTES``, 8 GiB).

The cost, for an input of N bytes: the input is read once, about N bytes are written
and read back as buckets, and about N bytes are written as group files (kept until
the job folder is removed). The first mini-batch is runnable only after both passes.

Key values are text, as Azure gives them from a partitioned dataset's folder names:
``str`` of the value as Arrow casts it (``1000``, ``1.5``, ``true``), ``None`` for a
null (an empty CSV field).

Payload (JSON): ``{"path": GROUP_FILE, "format": "csv" | "parquet", "rows": N}``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from prsd.errors import InputError
from prsd.inputsplit.tabular.inputfile import input_size
from prsd.inputsplit.tabular.readers import TableSource, read_batches
from prsd.spool.groupsrecord import GROUPS_RECORD, Group, read_groups, write_groups
from prsd.spool.listing import scan
from prsd.wire.records import MiniBatch

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from pathlib import Path

    import numpy.typing as npt

BUCKET_BYTES = 32 * 1024 * 1024
MAX_BUCKETS = 256

Key = tuple[Any, ...]


@dataclass(frozen=True)
class Groups:
    """Per-row group numbers of one batch and the key of each group (first appearance)."""

    codes: npt.NDArray[np.intp]
    keys: list[Key]


@dataclass(frozen=True)
class KeyColumn:
    """One key column, dictionary-encoded: a code per row and the text of each code."""

    codes: npt.NDArray[np.int64]
    values: list[Any]


def key_column(column: Any, *, empty_is_null: bool) -> KeyColumn:
    """A key column (an Arrow array or chunked array) as text codes, None for nulls.

    Only the distinct values become Python objects.
    """
    text: Any = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_string(text.type):
        text = pc.cast(text, pa.string())
    if empty_is_null:
        text = pc.if_else(pc.equal(text, pa.scalar("")), pa.scalar(None, pa.string()), text)
    encoded: Any = pc.dictionary_encode(text, null_encoding="encode")
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return KeyColumn(codes, encoded.dictionary.to_pylist())


def key_columns(
    batch: pa.RecordBatch | pa.Table, keys: Sequence[str], *, empty_is_null: bool
) -> list[KeyColumn]:
    """The ``keys`` columns of a batch or table."""
    return [key_column(batch.column(k), empty_is_null=empty_is_null) for k in keys]


def group_rows(columns: Sequence[KeyColumn]) -> Groups:
    """Number the distinct combinations of ``columns`` by first appearance."""
    rows = len(columns[0].codes) if columns else 0
    combined = np.zeros(rows, dtype=np.int64)
    for column in columns:
        combined = combined * max(len(column.values), 1) + column.codes
    # numpy's unique numbers the combinations in sorted order: renumber them by first
    # appearance (pandas' factorize would do it, but importing pandas costs the input
    # planner, a fresh process per job, about a second)
    _, firsts, inverse = np.unique(combined, return_index=True, return_inverse=True)
    order = np.argsort(firsts, kind="stable")
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order), dtype=np.intp)
    codes = rank[inverse.reshape(-1)]
    keys = [tuple(c.values[c.codes[i]] for c in columns) for i in firsts[order].tolist()]
    return Groups(codes, keys)


def split_by(codes: npt.NDArray[np.intp], count: int) -> list[npt.NDArray[np.intp]]:
    """Row positions of each code 0..count-1, each in ascending (input) order."""
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=count))
    return np.split(order, bounds[:-1])


def bucket_count(total_bytes: int) -> int:
    """Buckets for an input of ``total_bytes``: about ``BUCKET_BYTES`` each."""
    return max(1, min(MAX_BUCKETS, total_bytes // BUCKET_BYTES + 1))


class Spill:
    """Pass 1: rows to bucket files by their group's number."""

    def __init__(self, folder: Path, buckets: int, *, empty_is_null: bool) -> None:
        self.folder = folder
        self.buckets = buckets
        self.empty_is_null = empty_is_null
        self.order: dict[Key, int] = {}
        self.rows: dict[int, int] = {}
        self.schema: pa.Schema | None = None
        self._writers: dict[int, pa.ipc.RecordBatchStreamWriter] = {}

    def add(self, batch: pa.RecordBatch, keys: Sequence[str], where: str) -> None:
        """Spill one batch."""
        if batch.num_rows == 0:
            return
        batch = self._conform(batch, where)
        groups = group_rows(key_columns(batch, keys, empty_is_null=self.empty_is_null))
        numbers = np.array(
            [self.order.setdefault(k, len(self.order)) for k in groups.keys], dtype=np.int64
        )
        per_row = numbers[groups.codes]
        for number, count in zip(*np.unique(per_row, return_counts=True), strict=True):
            self.rows[int(number)] = self.rows.get(int(number), 0) + int(count)
        for bucket, rows in enumerate(split_by(per_row % self.buckets, self.buckets)):
            if len(rows):
                self._writer(bucket).write_batch(batch.take(rows))

    def bucket_path(self, bucket: int) -> Path:
        return self.folder / f"bucket-{bucket:04d}.arrows"

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def _conform(self, batch: pa.RecordBatch, where: str) -> pa.RecordBatch:
        if self.schema is None:
            self.schema = batch.schema
            return batch
        if batch.schema.equals(self.schema):
            return batch
        try:
            return (
                pa.Table.from_batches([batch])
                .select(self.schema.names)
                .cast(self.schema)
                .combine_chunks()
                .to_batches()[0]
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError) as exc:
            raise InputError(
                f"{where}: its columns ({batch.schema}) differ from the first file's "
                f"({self.schema}); partition_keys need one table layout: {exc}"
            ) from exc

    def _writer(self, bucket: int) -> pa.ipc.RecordBatchStreamWriter:
        writer = self._writers.get(bucket)
        if writer is None:
            assert self.schema is not None
            writer = pa.ipc.new_stream(str(self.bucket_path(bucket)), self.schema)
            self._writers[bucket] = writer
        return writer


def plan_partitioned_table(
    source: TableSource, files: Sequence[str], keys: Sequence[str], folder: Path
) -> Iterator[MiniBatch]:
    """The mini-batches of a table grouped by ``keys`` (group files under ``folder``).

    The finished grouping is recorded in ``folder/groups.json`` (written atomically,
    last), so a restarted leader reuses it instead of grouping again while agents may
    still be reading the group files; an unfinished one is removed and redone.

    Raises:
        InputError: a key is not a column, a file cannot be read, or files differ in layout.
    """
    manifest = folder / GROUPS_RECORD
    if not manifest.exists():
        _group(source, files, keys, folder)
    for number, (payload, key) in enumerate(read_groups(manifest)):
        yield MiniBatch(number, payload, int(payload["rows"]), dict(zip(keys, key, strict=True)))


def _group(source: TableSource, files: Sequence[str], keys: Sequence[str], folder: Path) -> None:
    _clear(folder)  # an unfinished grouping: start again from the input
    (folder / "groups").mkdir(parents=True, exist_ok=True)
    total = sum(input_size(p) for p in files)
    spill = Spill(folder, bucket_count(total), empty_is_null=source.fmt == "csv")
    try:
        _spill_files(spill, source, files, keys)
    finally:
        spill.close()
    written = _write_groups(spill, keys, source, folder / "groups")
    entries: list[Group] = []
    for number in range(len(spill.order)):
        path, key = written[number]
        payload = {"path": path, "format": _group_format(source), "rows": spill.rows[number]}
        entries.append((payload, list(key)))
    write_groups(folder / GROUPS_RECORD, entries)


def _clear(folder: Path) -> None:
    """Empty ``folder`` (made by the leader for the owner's planner; kept itself)."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in scan(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def _spill_files(
    spill: Spill, source: TableSource, files: Sequence[str], keys: Sequence[str]
) -> None:
    shared = source.fmt == "csv" and source.header == "from_first_file"
    first_names: list[str] | None = None
    for path in files:
        names = first_names if shared else None
        for batch in read_batches(source, path, column_names=names):
            _check_keys(batch.schema, keys, path)
            spill.add(batch, keys, path)
            first_names = first_names or list(batch.schema.names)


def _check_keys(schema: pa.Schema, keys: Sequence[str], path: str) -> None:
    missing = [k for k in keys if k not in schema.names]
    if missing:
        raise InputError(
            f"partition key {missing[0]!r} is not a column of {path} "
            f"(columns: {', '.join(schema.names)})"
        )


def _group_format(source: TableSource) -> str:
    return "csv" if source.fmt == "csv" else "parquet"


def _write_groups(
    spill: Spill, keys: Sequence[str], source: TableSource, out: Path
) -> dict[int, tuple[str, Key]]:
    written: dict[int, tuple[str, Key]] = {}
    for bucket in range(spill.buckets):
        path = spill.bucket_path(bucket)
        if not path.exists():
            continue
        with pa.OSFile(str(path), "rb") as file, pa.ipc.open_stream(file) as reader:
            table = reader.read_all().combine_chunks()
        groups = group_rows(key_columns(table, keys, empty_is_null=spill.empty_is_null))
        parts = split_by(groups.codes, len(groups.keys))
        for key, rows in zip(groups.keys, parts, strict=True):
            number = spill.order[key]
            target = out / f"{number:09d}.{_group_format(source)}"
            _write_group(table.take(rows), target, source)
            written[number] = (str(target), key)
        path.unlink()
    return written


def _write_group(table: pa.Table, target: Path, source: TableSource) -> None:
    if source.fmt == "csv":
        import pyarrow.csv as pa_csv

        pa_csv.write_csv(table, str(target))
    else:
        import pyarrow.parquet as pq

        pq.write_table(table, str(target))
