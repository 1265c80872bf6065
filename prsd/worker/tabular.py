"""Loading a tabular mini-batch into the pandas DataFrame ``run()`` receives.

A payload names bytes, not rows (see ``prsd.inputsplit.tabular``): a byte range of a CSV
or JSON-lines file (plus where its header is), row groups of a Parquet file, or a
group file of a ``partition_keys`` job. Only those bytes are read. A ``partition_keys``
mini-batch gets ``attrs["partition_key_value"]``, as in Azure.

A CSV line pandas cannot parse fails the mini-batch with an error naming the file
and the line in it.

Standard library only at import time (pandas and pyarrow are imported when a
mini-batch is loaded, from the job's environment), Python 3.7 syntax.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prsd.worker.loaders import MiniBatchRef

PATH_COLUMN = "Path"  # MLTable include_path_column
_PANDAS_LINE = re.compile(r"\bline (\d+)\b")


class TabularReadError(Exception):
    """The mini-batch's bytes are not a table of the input's format."""


def read_range(path: str, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of ``path``."""
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(end - start)


def load_csv(ref: MiniBatchRef, config: dict[str, Any]) -> Any:
    """A CSV mini-batch (a byte range with its header, or a group file).

    Raises:
        TabularReadError: a line cannot be parsed (the message names file and line).
    """
    payload = _payload(ref)
    if "format" in payload:
        return _finish(_load_group(payload), ref, config, payload["path"])
    import pandas as pd

    options = config.get("input") or {}
    path = payload["path"]
    head = payload.get("head")
    header = read_range(head[0], 0, int(head[1])) if head else b""
    data = read_range(path, int(payload["start"]), int(payload["end"]))
    try:
        frame = pd.read_csv(
            io.BytesIO(header + data),
            sep=options.get("delimiter", ","),
            encoding=options.get("encoding", "utf-8"),
            header=0 if head else None,
        )
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise TabularReadError(_csv_error(exc, path, payload, header)) from exc
    if options.get("header") == "no_header":  # the mltable package's names
        frame.columns = ["Column" + str(i + 1) for i in range(len(frame.columns))]
    return _finish(frame, ref, config, path)


def load_jsonl(ref: MiniBatchRef, config: dict[str, Any]) -> Any:
    """A JSON-lines mini-batch (a byte range, or a group file).

    Raises:
        TabularReadError: the range holds a line that is not a JSON object.
    """
    payload = _payload(ref)
    if "format" in payload:
        return _finish(_load_group(payload), ref, config, payload["path"])
    import pandas as pd

    path, start, end = payload["path"], int(payload["start"]), int(payload["end"])
    data = read_range(path, start, end)
    lines = [line for line in data.splitlines() if line.strip()]
    if not lines:
        return _finish(pd.DataFrame(), ref, config, path)
    encoding = (config.get("input") or {}).get("encoding", "utf-8")
    try:
        text = b"\n".join(lines).decode(encoding)
        frame = pd.read_json(io.StringIO(text), lines=True, precise_float=True)
    except ValueError as exc:
        raise TabularReadError(
            f"{path} (bytes {start}-{end}): not JSON lines: {str(exc).strip()}"
        ) from exc
    return _finish(frame, ref, config, path)


def load_parquet(ref: MiniBatchRef, config: dict[str, Any]) -> Any:
    """A Parquet mini-batch: only its row groups are read."""
    payload = _payload(ref)
    if "format" in payload:
        return _finish(_load_group(payload), ref, config, payload["path"])
    import pyarrow.parquet as pq

    path = payload["path"]
    table = pq.ParquetFile(path).read_row_groups([int(i) for i in payload["row_groups"]])
    return _finish(table.to_pandas(), ref, config, path)


def _payload(ref: MiniBatchRef) -> dict[str, Any]:
    payload = ref.payload
    if not isinstance(payload, dict) or not isinstance(payload.get("path"), str):
        raise TypeError(f"tabular mini-batch {ref.mb_id} has no file in its payload")
    return payload


def _load_group(payload: dict[str, Any]) -> Any:
    """A ``partition_keys`` group file, written by the leader (UTF-8 CSV or Parquet)."""
    if payload["format"] == "csv":
        import pandas as pd

        return pd.read_csv(payload["path"])
    import pyarrow.parquet as pq

    return pq.read_table(payload["path"]).to_pandas()


def _finish(frame: Any, ref: MiniBatchRef, config: dict[str, Any], path: str) -> Any:
    options = config.get("input") or {}
    # An MLTable with steps arrives transformed, its path column in place (mlplan.py).
    transformed = bool(options.get("steps")) or bool(options.get("empty_as_string"))
    column = options.get("path_column") or PATH_COLUMN
    if options.get("include_path_column") and not transformed and column not in frame:
        frame.insert(0, column, path)  # first, as the mltable package puts it
    if ref.key is not None:
        frame.attrs["partition_key_value"] = dict(ref.key)
    return frame


def _csv_error(exc: BaseException, path: str, payload: dict[str, Any], header: bytes) -> str:
    """pandas' message with the line number made a line of the file."""
    message = " ".join(str(exc).split())
    match = _PANDAS_LINE.search(message)
    where = f"{path}"
    if match is not None and isinstance(payload.get("line"), int):
        in_piece = int(match.group(1)) - header.count(b"\n")
        where = f"{path}, line {payload['line'] + in_piece - 1}"
    return f"{where}: {message}"
