"""Planning an MLTable with steps: its rows read in order, transformed, cut into files.

An MLTable whose transformations go beyond its reader (``take``, ``filter``,
``drop_columns`` ... see :mod:`prsd.jobspec.mlsteps`), or that reads empty CSV fields
as ``""``, is read here once, in order, in chunks of :data:`CHUNK_ROWS` rows (pandas
infers types per chunk, as the workers do for plain tables). Each chunk goes through
:class:`~prsd.inputsplit.tabular.mlapply.Steps`; the rows that come out are gathered until
they hold about ``mini_batch_size`` bytes in memory and written as one Parquet file
per mini-batch under ``jobs/<id>/mltable/`` (atomically, so a worker never reads a
torn file), keeping the types the steps gave. With ``partition_keys``, those files
are then grouped by key as any Parquet table is (:mod:`prsd.inputsplit.tabular.groups`).

Columns are those of ``mltable.load(folder).to_pandas_dataframe()``: the path column
(``include_path_column``) first, the file's columns, then any columns the steps add.
``no_header`` names columns ``Column1``, ``Column2`` ... as the ``mltable`` package does.

Payload (JSON): ``{"path": FILE, "format": "parquet", "rows": N}``.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from prsd.errors import InputError
from prsd.inputsplit.tabular.inputfile import input_file
from prsd.inputsplit.tabular.mlapply import Steps
from prsd.spool.atomic import write_atomic
from prsd.wire.records import MiniBatch

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from pathlib import Path
    from typing import BinaryIO

    from prsd.jobspec.model import InputSpec

CHUNK_ROWS = 50_000
_FIRST_NAMES = ("from_first_file", "all_files_same_headers")
FOLDER = "mltable"


def plan_mltable(
    spec: InputSpec, files: Sequence[str], size_bytes: int, folder: Path
) -> Iterator[MiniBatch]:
    """The table's mini-batches, each a Parquet file written under ``folder``.

    Raises:
        InputError: a file cannot be read, or a step cannot be applied to it.
    """
    # A restarted leader plans again and writes the same files, each replaced whole
    # (write_atomic), so a worker reading one of a task still running never sees it torn.
    folder.mkdir(parents=True, exist_ok=True)
    steps = Steps(spec.steps)
    cut = _Cutter(size_bytes, folder)
    names: list[str] | None = None  # the first file's columns (see _csv_chunks)
    for path in files:
        for chunk in read_chunks(spec, path, names):
            if spec.header in _FIRST_NAMES and names is None:
                names = [str(c) for c in chunk.columns if c != spec.path_column]
            yield from cut.add(steps.apply(chunk, path))
            if steps.done:
                break
        if steps.done:
            break
    yield from cut.rest()


class _Cutter:
    """Rows gathered and written as mini-batches of about ``size_bytes`` in memory."""

    def __init__(self, size_bytes: int, folder: Path) -> None:
        self.size_bytes = size_bytes
        self.folder = folder
        self.pending: list[pd.DataFrame] = []
        self.held = 0
        self.index = 0

    def add(self, frame: pd.DataFrame) -> Iterator[MiniBatch]:
        if not len(frame):
            return
        self.pending.append(frame)
        self.held += int(frame.memory_usage(deep=True, index=False).sum())
        while self.held >= self.size_bytes:
            whole = pd.concat(self.pending, ignore_index=True)
            rows = max(1, int(len(whole) * self.size_bytes / self.held))
            yield self._write(whole.iloc[:rows])
            rest = whole.iloc[rows:]
            self.pending = [rest] if len(rest) else []
            self.held = int(rest.memory_usage(deep=True, index=False).sum()) if len(rest) else 0

    def rest(self) -> Iterator[MiniBatch]:
        if self.pending:
            yield self._write(pd.concat(self.pending, ignore_index=True))

    def _write(self, frame: pd.DataFrame) -> MiniBatch:
        batch = _write(frame, self.folder, self.index)
        self.index += 1
        return batch


def _write(frame: pd.DataFrame, folder: Path, index: int) -> MiniBatch:
    target = folder / f"{index:09d}.parquet"
    frame = frame.reset_index(drop=True)
    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # Chunks of one column read as numbers in one file and text in another: text,
        # as the mltable package makes a column it cannot read as one type.
        try:
            table = pa.Table.from_pandas(_mixed_as_text(frame), preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InputError(f"the transformed table cannot be stored: {exc}") from exc
    sink = io.BytesIO()
    pq.write_table(table, sink)
    write_atomic(target, sink.getvalue())
    payload = {"path": str(target), "format": "parquet", "rows": len(frame)}
    return MiniBatch(index, payload, len(frame))


def _mixed_as_text(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            out[column] = out[column].map(str, na_action="ignore").astype("str")
    return out


def read_chunks(
    spec: InputSpec, path: str, names: list[str] | None = None
) -> Iterator[pd.DataFrame]:
    """The rows of one file in chunks, with the path column first when asked for.

    Args:
        spec: the input.
        path: the file.
        names: CSV only: the first file's columns, which later files take
            (``from_first_file``: they have no header line; ``all_files_same_headers``:
            theirs is skipped, as the ``mltable`` package does).

    Raises:
        InputError: the file is not of the table's format.
    """
    try:
        for chunk in _chunks(spec, path, names):
            if spec.include_path_column:
                chunk.insert(0, spec.path_column, pd.Series([path] * len(chunk), dtype="str"))
            yield chunk
    except (ValueError, pa.ArrowException, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path} as {spec.format}: {exc}") from exc


def _chunks(spec: InputSpec, path: str, names: list[str] | None) -> Iterator[pd.DataFrame]:
    with input_file(path) as f:
        if spec.format == "parquet":
            for batch in pq.ParquetFile(f).iter_batches(batch_size=CHUNK_ROWS):
                yield batch.to_pandas()
        elif spec.format == "jsonl":
            with pd.read_json(f, lines=True, chunksize=CHUNK_ROWS, encoding=spec.encoding) as it:
                yield from it
        else:
            yield from _csv_chunks(spec, f, names)


def _csv_chunks(spec: InputSpec, f: BinaryIO, names: list[str] | None) -> Iterator[pd.DataFrame]:
    options: dict[str, Any] = {
        "sep": spec.delimiter,
        "encoding": spec.encoding,
        "chunksize": CHUNK_ROWS,
        "keep_default_na": False,
    }
    if spec.empty_as_string:
        options["na_filter"] = False
    else:
        options["na_values"] = [""]
    no_header = spec.header == "no_header"
    later = spec.header == "from_first_file" and names is not None
    options["header"] = None if no_header or later else 0
    if names is not None:
        options["names"] = names
    try:
        with pd.read_csv(f, **options) as reader:
            for chunk in reader:
                if no_header:
                    chunk.columns = [f"Column{i + 1}" for i in range(len(chunk.columns))]
                yield chunk
    except pd.errors.EmptyDataError:
        return
