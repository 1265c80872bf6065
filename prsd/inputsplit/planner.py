"""Which splitter plans a job's input: a table from input format to planner.

Every planner yields :class:`~prsd.wire.records.MiniBatch` objects numbered from
0 in input order, lazily, so the first task is written while the input is still
being read (except with ``partition_keys``: a group is complete only once the whole
input has been read, see docs/tabular.md). pandas and pyarrow are imported only
by the planners that need them, so a files job starts without them.

Tabular inputs (csv, jsonl, parquet) read every regular file under their folders in
sorted order, except names starting with ``.`` or ``_`` (``_SUCCESS``, ``.crc``
files that Spark and Hadoop leave next to their tables).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from prsd.errors import InputError
from prsd.inputsplit.split import SkipReporter, iter_input_files, plan_file_batches
from prsd.jobspec import JobSpec
from prsd.wire.records import MiniBatch

Planner = Callable[[JobSpec, SkipReporter | None, Path | None], Iterator[MiniBatch]]

PARTITIONS_FOLDER = "partitions"


def _plan_files(
    spec: JobSpec, on_skip: SkipReporter | None, job_folder: Path | None
) -> Iterator[MiniBatch]:
    if spec.partition_keys and spec.input.partition_format:
        from prsd.inputsplit.tabular.folders import plan_partitioned_files  # partitioned only

        return plan_partitioned_files(
            spec.input.paths, spec.input.partition_format, spec.partition_keys, on_skip
        )
    return plan_file_batches(iter_input_files(spec.input.paths, on_skip), spec.mini_batch_size)


def table_files(spec: JobSpec, on_skip: SkipReporter | None) -> Iterator[str]:
    """The data files of a tabular input, in order (hidden, ``_`` and MLTable files left out)."""
    from prsd.jobspec.mltable import MLTABLE_FILE  # YAML: only for tables, not a files job

    for path in iter_input_files(spec.input.paths, on_skip):
        name = os.path.basename(path)
        if name == MLTABLE_FILE and path not in spec.input.paths:
            continue  # an MLTable folder's own description, not its data
        if not name.startswith((".", "_")) or path in spec.input.paths:
            yield path


def _plan_text(
    spec: JobSpec, on_skip: SkipReporter | None, job_folder: Path | None
) -> Iterator[MiniBatch]:
    if spec.partition_keys:
        yield from _plan_groups(spec, on_skip, job_folder)
        return
    from prsd.inputsplit.tabular.text import TextFormat, plan_text_files  # tables only

    _check_cuttable(spec)
    fmt = TextFormat(csv=spec.input.format == "csv", header=spec.input.header)
    payloads = plan_text_files(table_files(spec, on_skip), spec.mini_batch_size, fmt)
    for i, payload in enumerate(payloads):
        yield MiniBatch(i, payload)


def _check_cuttable(spec: JobSpec) -> None:
    """Cuts are found by the bytes of ``\\n`` and ``"``: ASCII-compatible encodings only."""
    if spec.input.encoding.lower().replace("-", "").startswith(("utf16", "utf32")):
        raise InputError(
            f"{spec.input.name}: {spec.input.encoding} files cannot be split on line "
            "boundaries by bytes; convert them to UTF-8"
        )


def _plan_parquet(
    spec: JobSpec, on_skip: SkipReporter | None, job_folder: Path | None
) -> Iterator[MiniBatch]:
    if spec.partition_keys:
        return _plan_groups(spec, on_skip, job_folder)
    from prsd.inputsplit.tabular.parquet import plan_parquet_files  # pyarrow: only when needed

    planned = plan_parquet_files(table_files(spec, on_skip), spec.mini_batch_size)
    return (MiniBatch(i, payload, rows) for i, (payload, rows) in enumerate(planned))


def _plan_groups(
    spec: JobSpec, on_skip: SkipReporter | None, job_folder: Path | None
) -> Iterator[MiniBatch]:
    from prsd.inputsplit.tabular.groups import plan_partitioned_table  # pandas, pyarrow
    from prsd.inputsplit.tabular.readers import TableSource

    source = TableSource(
        spec.input.format, spec.input.delimiter, spec.input.header, spec.input.encoding
    )
    files = list(table_files(spec, on_skip))
    if job_folder is not None:
        yield from plan_partitioned_table(
            source, files, spec.partition_keys, job_folder / PARTITIONS_FOLDER
        )
        return
    with tempfile.TemporaryDirectory(prefix="prsd-partitions-") as tmp:
        yield from plan_partitioned_table(source, files, spec.partition_keys, Path(tmp))


def _plan_mltable(
    spec: JobSpec, on_skip: SkipReporter | None, job_folder: Path | None
) -> Iterator[MiniBatch]:
    """An MLTable with steps: transformed in order, then cut or grouped (tabular/mlplan.py)."""
    from prsd.inputsplit.tabular.mlplan import FOLDER, plan_mltable

    with tempfile.TemporaryDirectory(prefix="prsd-mltable-") as tmp:
        root = job_folder if job_folder is not None else Path(tmp)
        files = list(table_files(spec, on_skip))
        if not spec.partition_keys:
            yield from plan_mltable(spec.input, files, spec.mini_batch_size, root / FOLDER)
            return
        from prsd.inputsplit.tabular.groups import plan_partitioned_table
        from prsd.inputsplit.tabular.readers import TableSource

        size = 1 << 62  # one file: grouping reads it whole anyway
        written = [
            mb.payload["path"] for mb in plan_mltable(spec.input, files, size, root / FOLDER)
        ]
        source = TableSource("parquet")
        yield from plan_partitioned_table(
            source, written, spec.partition_keys, root / PARTITIONS_FOLDER
        )


PLANNERS: dict[str, Planner] = {
    "files": _plan_files,
    "csv": _plan_text,
    "jsonl": _plan_text,
    "parquet": _plan_parquet,
}


def input_kind(spec: JobSpec) -> str:
    """The loader the workers use for this job's mini-batches."""
    return spec.input.format


def plan_mini_batches(
    spec: JobSpec, on_skip: SkipReporter | None = None, *, job_folder: Path | None = None
) -> Iterator[MiniBatch]:
    """The job's mini-batches, in input order.

    Args:
        spec: the job.
        on_skip: told about input paths that are left out, and why.
        job_folder: the job's folder in the spool (``jobs/<id>``): ``partition_keys``
            on a table spill their groups under ``partitions/`` there. When None, a
            temporary folder is used and removed when the iteration ends (enough
            to count the mini-batches, not to run them).

    Raises:
        InputError: no planner handles this input.
    """
    planner = _plan_mltable if spec.input.transformed else PLANNERS.get(spec.input.format)
    if planner is None:
        raise InputError(f"input_format {spec.input.format!r} has no splitter")
    return planner(spec, on_skip, job_folder)
