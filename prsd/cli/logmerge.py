"""Merging log files by time into one view (``prsctl logs``): pure functions.

Each line is placed by the timestamp it starts with (ISO 8601, UTC with ``Z`` or an
offset, or local time without one, as in the progress overview). A line without
one (a traceback, a ``print()``) stays with the line above it in its own file; lines
before a file's first timestamp come first. Within one file the order never
changes, so a traceback is never torn apart.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

_STAMP = re.compile(
    r"^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)(?=[ |]|$)"
)
_BEFORE_ALL = float("-inf")


@dataclass(frozen=True)
class Source:
    """One log file's lines and the label its lines carry in the merged view."""

    label: str
    lines: list[str]


def line_time(line: str) -> float | None:
    """Epoch seconds of a line's leading timestamp; None when it has none."""
    m = _STAMP.match(line)
    if m is None:
        return None
    text = m.group(1).replace(",", ".").replace("Z", "+00:00")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.astimezone()  # local time, as the progress overview writes it
    return when.astimezone(UTC).timestamp()


def _keyed(order: int, source: Source) -> Iterator[tuple[float, int, int, str]]:
    current = _BEFORE_ALL
    for n, line in enumerate(source.lines):
        t = line_time(line)
        if t is not None and t >= current:
            current = t
        yield current, order, n, f"{source.label} {line}"


def merge_by_time(sources: list[Source]) -> list[str]:
    """Every line of every source, ordered by time, each file's own order kept."""
    streams = [_keyed(i, s) for i, s in enumerate(sources)]
    return [entry[3] for entry in heapq.merge(*streams)]
