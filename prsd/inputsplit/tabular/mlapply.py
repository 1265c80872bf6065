"""Applying an MLTable's steps to a table read in order, chunk by chunk, as Azure does.

The steps (:mod:`prsd.jobspec.mlsteps`) run in the MLTable file's order on each chunk
of rows as the files are read in order. ``take`` and ``skip`` count rows of the whole
table (the counters live in :class:`Steps`), so ``skip: 1`` then ``filter`` then
``take: 3`` gives the rows ``mltable.load(...).to_pandas_dataframe()`` gives. Once a
``take`` has all its rows, :attr:`Steps.done` says no later row can pass, and the
reader stops.

Types follow the ``mltable`` package: ``extract_columns_from_partition_format`` adds
text columns at the end; ``convert_column_types`` makes ``int`` an ``int64`` column
(``float64`` when it holds nulls), ``float`` a ``float64``, ``string`` text,
``boolean`` a ``bool`` (``boolean`` with nulls) and ``datetime`` a ``datetime64``.

Errors: a column a step names that the table lacks, a value a conversion cannot
read, a path the partition format does not fit: :class:`~prsd.errors.InputError`
naming the step and the file.
"""

from __future__ import annotations

import operator
import re
from typing import TYPE_CHECKING, Any

import pandas as pd

from prsd.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_FIELD = re.compile(r"\{([^{}]+)\}")
_TRUE = {"true", "1", "yes", "t", "y"}
_FALSE = {"false", "0", "no", "f", "n"}


class Steps:
    """The steps of one table, with the row counters of its ``take`` and ``skip``."""

    def __init__(self, steps: Sequence[dict[str, Any]]) -> None:
        self.steps = list(steps)
        self.counted = [0] * len(self.steps)  # rows taken or skipped so far, per step
        self.done = False

    def apply(self, frame: pd.DataFrame, path: str) -> pd.DataFrame:
        """``frame`` (the next rows of ``path``) after every step."""
        if self.done:
            return frame.iloc[0:0]
        for i, step in enumerate(self.steps):
            frame = self._one(i, step, frame, path)
        return frame

    def _one(self, i: int, step: dict[str, Any], frame: pd.DataFrame, path: str) -> pd.DataFrame:
        op = step["op"]
        if op == "take":
            frame = frame.iloc[: step["count"] - self.counted[i]]
            self.counted[i] += len(frame)
            self.done = self.counted[i] >= step["count"]
            return frame
        if op == "skip":
            dropped = min(step["count"] - self.counted[i], len(frame))
            self.counted[i] += dropped
            return frame.iloc[dropped:]
        return _STATELESS[op](frame, step, path)


def _columns_of(frame: pd.DataFrame, step: dict[str, Any], path: str) -> list[str]:
    missing = [c for c in step["columns"] if c not in frame.columns]
    if missing:
        raise InputError(
            f"{step['op']}: {path} has no column {missing[0]!r} "
            f"(columns: {', '.join(map(str, frame.columns))})"
        )
    return list(step["columns"])


def _drop(frame: pd.DataFrame, step: dict[str, Any], path: str) -> pd.DataFrame:
    return frame.drop(columns=_columns_of(frame, step, path))


def _keep(frame: pd.DataFrame, step: dict[str, Any], path: str) -> pd.DataFrame:
    return frame[_columns_of(frame, step, path)]


def _filter(frame: pd.DataFrame, step: dict[str, Any], path: str) -> pd.DataFrame:
    (column,) = _columns_of(frame, {"op": "filter", "columns": [step["column"]]}, path)
    values, value = frame[column], step["value"]
    if value is None:
        keep = values.isna() if step["cmp"] == "==" else values.notna()
    else:
        try:
            keep = _COMPARE[step["cmp"]](values, value).fillna(False).astype(bool)
        except TypeError as exc:
            raise InputError(
                f"filter: column {column!r} of {path} cannot be compared with {value!r}: {exc}"
            ) from exc
    return frame[keep.to_numpy()]


def _convert(frame: pd.DataFrame, step: dict[str, Any], path: str) -> pd.DataFrame:
    frame = frame.copy()
    for conversion in step["conversions"]:
        spec = {"op": "convert_column_types", "columns": conversion["columns"]}
        for column in _columns_of(frame, spec, path):
            try:
                frame[column] = _as_type(frame[column], conversion["type"])
            except (ValueError, TypeError) as exc:
                raise InputError(
                    f"convert_column_types: column {column!r} of {path} is not "
                    f"{conversion['type']}: {exc}"
                ) from exc
    return frame


def _as_type(values: pd.Series, kind: str) -> pd.Series:
    if kind == "float":
        return pd.to_numeric(values).astype("float64")
    if kind == "int":
        numbers = pd.to_numeric(values)
        return numbers.astype("float64" if numbers.isna().any() else "int64")
    if kind == "string":
        return values.map(_text, na_action="ignore").astype("str")
    if kind == "boolean":
        out = values.map(_boolean, na_action="ignore")
        return out.astype("boolean" if out.isna().any() else "bool")
    return pd.to_datetime(values)


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 2**53 else str(value)
    return str(value)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{value!r} is neither true nor false")


def partition_pattern(partition_format: str) -> tuple[re.Pattern[str], list[str]]:
    """The regular expression a path is searched with, and the columns it yields."""
    names: list[str] = []
    parts: list[str] = []
    pos = 0
    for match in _FIELD.finditer(partition_format):
        parts.append(re.escape(partition_format[pos : match.start()]))
        parts.append("([^/]+)")
        names.append(match.group(1).strip())
        pos = match.end()
    parts.append(re.escape(partition_format[pos:]))
    return re.compile("".join(parts)), names


def _partition(frame: pd.DataFrame, step: dict[str, Any], path: str) -> pd.DataFrame:
    pattern, names = partition_pattern(step["format"])
    found = pattern.search(path)
    if found is None and not step.get("ignore_errors"):
        raise InputError(
            f"extract_columns_from_partition_format: {path} does not fit {step['format']!r}"
        )
    frame = frame.copy()
    for n, name in enumerate(names):
        value = found.group(n + 1) if found is not None else None
        frame[name] = pd.Series([value] * len(frame), index=frame.index, dtype="str")
    return frame


_STATELESS: dict[str, Callable[[pd.DataFrame, dict[str, Any], str], pd.DataFrame]] = {
    "drop_columns": _drop,
    "keep_columns": _keep,
    "filter": _filter,
    "convert_column_types": _convert,
    "extract_columns_from_partition_format": _partition,
}
