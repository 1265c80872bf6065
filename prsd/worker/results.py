"""What ``run()`` returned: its type check, the item counts and the append_row bytes.

Counting (docs/entry-script.md): a list, tuple or pandas DataFrame is accepted; ``len()`` of
it is the number of succeeded items, capped at the input count. Fewer is not an error
here (the leader applies ``item_error_threshold``); more is a warning. Anything else
fails the attempt.

Bytes (docs/entry-script.md, Azure's old driver): a list element is ``str(x) + "\\n"`` in
UTF-8; a DataFrame is exactly ``df.to_csv(sep=" ", header=False, index=False)``, with
the ``parallel_run_step.settings.json`` keyword arguments on top.

``append_row_format: parquet`` (an extension beyond Azure): each mini-batch's result
is an Arrow IPC stream instead (a DataFrame's columns and types as they are; a list
becomes one column ``value``); the leader writes them into one Parquet file.

Caps (docs/supervision.md, "Bounds"): a result of more elements than
``max_result_rows`` or more append_row bytes than ``max_result_bytes`` fails the
attempt with an error naming the cap, before anything is written.

Pure functions, standard library only at import time: pandas is never imported here
(a DataFrame result means the user's script already imported it), and pyarrow only
when a job asks for Parquet output.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

# to_csv arguments that make no sense when prsd owns the file and its position.
_IGNORED_TO_CSV_KEYS = ("path_or_buf", "mode", "compression", "encoding", "storage_options")


# A path from os.listdir with bytes that are not UTF-8 holds surrogate escapes;
# writing them back gives the original bytes instead of failing the mini-batch.
_UNDECODED = "surrogateescape"


class WrongResultType(Exception):
    """``run()`` returned something other than a list, tuple or DataFrame."""


class ResultTooLarge(WrongResultType):
    """``run()`` returned more rows or bytes than one mini-batch may hand back."""


def check_rows(returned: int, cap: int, mb_id: str) -> None:
    """Refuse a result of more than ``cap`` elements (``PRSD_MAX_RESULT_ROWS``).

    Raises:
        ResultTooLarge: ``returned`` is over the cap.
    """
    if returned > cap:
        raise ResultTooLarge(
            f"run() returned {returned} rows for mini-batch {mb_id}, more than the cap of "
            f"{cap} rows per mini-batch (PRSD_MAX_RESULT_ROWS)"
        )


def check_bytes(size: int, cap: int, mb_id: str) -> None:
    """Refuse append_row bytes over ``cap`` (``PRSD_MAX_RESULT_BYTES``).

    Raises:
        ResultTooLarge: ``size`` is over the cap.
    """
    if size > cap:
        raise ResultTooLarge(
            f"run() returned {size} bytes of output for mini-batch {mb_id}, more than the "
            f"cap of {cap} bytes per mini-batch (PRSD_MAX_RESULT_BYTES)"
        )


@dataclass(frozen=True)
class ItemCounts:
    """Items of one mini-batch: given to ``run()``, returned by it, and the verdict."""

    items: int
    returned: int

    @property
    def succeeded(self) -> int:
        return min(self.returned, self.items)

    @property
    def failed(self) -> int:
        return self.items - self.succeeded

    @property
    def too_many(self) -> bool:
        return self.returned > self.items


def is_dataframe(obj: object) -> bool:
    """True for a pandas DataFrame (without importing pandas)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(obj, pandas.DataFrame)


def accepted_result(result: object, mb_id: str) -> Any:
    """The result as a list or DataFrame.

    Raises:
        WrongResultType: not a list, tuple or DataFrame (``None`` is the usual mistake).
    """
    if isinstance(result, list) or is_dataframe(result):
        return result
    if isinstance(result, tuple):
        return list(result)
    raise WrongResultType(
        f"run() returned {type(result).__name__} for mini-batch {mb_id}; "
        "it must return a list, tuple or pandas.DataFrame"
    )


def too_many_warning(counts: ItemCounts, mb_id: str) -> str:
    """The warning for a result longer than its input."""
    return (
        f"run() returned {counts.returned} items for mini-batch {mb_id}, which is more "
        f"than its input count {counts.items}; succeeded items are capped at {counts.items}"
    )


def list_rows(result: list[Any]) -> bytes:
    """Azure's list format: ``str(element)`` and a newline per element, UTF-8."""
    return "".join([f"{element}\n" for element in result]).encode("utf-8", _UNDECODED)


def to_csv_arguments(overrides: dict[str, Any]) -> dict[str, Any]:
    """Azure's defaults with the settings-file overrides on top (body: never a header)."""
    kwargs: dict[str, Any] = {"sep": " ", "header": False, "index": False}
    kwargs.update({k: v for k, v in overrides.items() if k not in _IGNORED_TO_CSV_KEYS})
    kwargs["header"] = False
    return kwargs


def dataframe_rows(frame: Any, overrides: dict[str, Any]) -> bytes:
    """The bytes ``frame.to_csv(sep=" ", header=False, index=False, **overrides)`` writes."""
    text = frame.to_csv(**to_csv_arguments(overrides))
    return str(text).encode(_encoding(overrides), _UNDECODED)


def dataframe_header(frame: Any, overrides: dict[str, Any]) -> str:
    """The header line(s) pandas writes for ``frame`` with the same arguments."""
    kwargs = to_csv_arguments(overrides)
    names = overrides.get("header")
    kwargs["header"] = names if isinstance(names, (list, tuple)) else True
    return str(frame.head(0).to_csv(**kwargs))


def encode_result(result: Any, overrides: dict[str, Any], want_header: bool) -> tuple[bytes, str]:
    """The append_row bytes of an accepted result, and its header ("" when none)."""
    if is_dataframe(result):
        header = dataframe_header(result, overrides) if want_header else ""
        return dataframe_rows(result, overrides), header
    return list_rows(result), ""


def encode_output(
    fmt: str, result: Any, overrides: dict[str, Any], want_header: bool
) -> tuple[bytes, str]:
    """The append_row bytes in the job's ``append_row_format`` (``text`` or ``parquet``)."""
    if fmt == "parquet":
        return arrow_rows(result), ""
    return encode_result(result, overrides, want_header)


def arrow_rows(result: Any) -> bytes:
    """An accepted result as one Arrow IPC stream (for ``append_row_format: parquet``)."""
    import pyarrow as pa

    if is_dataframe(result):
        table = pa.Table.from_pandas(result, preserve_index=False)
    else:
        try:
            column = pa.array(result)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            column = pa.array([str(element) for element in result])
        table = pa.table({"value": column})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _encoding(overrides: dict[str, Any]) -> str:
    encoding = overrides.get("encoding")
    return encoding if isinstance(encoding, str) and encoding else "utf-8"
