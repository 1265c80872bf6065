"""``logs/sys/failed_items.txt``: every input of a job that has no row in its output.

Invariant: each mini-batch that failed for good (its retries used up) contributes
every one of its inputs, with the error kind of its last attempt; a mini-batch that
succeeded with fewer elements than inputs contributes its inputs marked ``partial``
(which of them run() skipped is the script's secret). So a job that ends
``Completed with failures`` names, file by file or row range by row range, what its
output lacks, with bisection on or off. An input is described the way the split
planned it: a file path; ``path from line 120 bytes 5120-10240`` for a CSV or JSON Lines range;
``path row groups 3,4`` for Parquet; the key values of a partition group.

Pure bookkeeping (no I/O but :func:`write_failed_items`). The book holds the failed
mini-batches' payloads, which their task files already hold: memory grows with the
failures, not with the job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.logline import one_line
from prsd.spool.atomic import write_atomic
from prsd.spool.layout import mb_id
from prsd.wire.logtree import LogTree

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

PARTIAL = "partial"
HEADER = (
    "# Inputs with no row in the output: <input>\\t<mini-batch>\\t<kind>\\t<error>\n"
    "# kind: failed | timeout | crashed | oom (the last attempt's status), or partial\n"
    "# (run() returned fewer elements than the mini-batch had inputs).\n"
)


def describe_items(payload: Any, key: dict[str, Any] | None = None) -> list[str]:
    """The inputs of one mini-batch, one string each, as a user would name them (pure)."""
    if isinstance(payload, list):
        return [str(p) for p in payload]
    if key is not None:
        values = ", ".join(f"{k}={v!r}" for k, v in key.items())
        return [f"partition {values}"]
    if isinstance(payload, dict) and "path" in payload:
        path = str(payload["path"])
        if "row_groups" in payload:
            groups = ",".join(str(g) for g in payload["row_groups"])
            return [f"{path} row groups {groups}"]
        if "start" in payload and "end" in payload:
            return [f"{path} {_line_range(payload)}bytes {payload['start']}-{payload['end']}"]
        return [path]
    return [repr(payload)]


def _line_range(payload: dict[str, Any]) -> str:
    line = payload.get("line")
    lines = payload.get("lines")
    if isinstance(line, int) and isinstance(lines, int) and lines > 0:
        return f"lines {line}-{line + lines - 1} "
    if isinstance(line, int):
        return f"from line {line} "
    return ""


@dataclass(frozen=True)
class FailedBatch:
    index: int
    items: tuple[str, ...]
    kind: str
    error: str

    def lines(self) -> Iterator[str]:
        error = one_line(" ".join(self.error.split())) or "-"
        for item in self.items:
            yield f"{_clean(item)}\t{mb_id(self.index)}\t{self.kind}\t{error}\n"


def _clean(text: str) -> str:
    """One field: tabs, line breaks or escapes in a file name would break the columns."""
    return one_line(text)


@dataclass
class FailedItemsBook:
    """The failed and partial mini-batches of a job, by index (later records replace)."""

    batches: dict[int, FailedBatch] = field(default_factory=dict)

    def add(
        self, index: int, payload: Any, key: dict[str, Any] | None, kind: str, error: str
    ) -> None:
        self.batches[index] = FailedBatch(index, tuple(describe_items(payload, key)), kind, error)

    @property
    def failed_count(self) -> int:
        return sum(len(b.items) for b in self.batches.values())

    def render(self, isolated: Iterable[object] = ()) -> str:
        """The file's text: a header, one line per input, then bisection's findings."""
        out = [HEADER]
        for index in sorted(self.batches):
            out.extend(self.batches[index].lines())
        found = [str(p) for p in isolated]
        if found:
            out.append("# isolated by bisect_failed_mini_batches (these fail; the rest of\n")
            out.append("# their mini-batches succeeded when run without them):\n")
            out.extend(f"# {_clean(line)}\n" for line in found)
        return "".join(out)


def write_failed_items(logs: Path, book: FailedItemsBook, isolated: Iterable[object]) -> Path:
    """Write ``logs/sys/failed_items.txt`` (also when empty: its header says what it is)."""
    path = LogTree(logs).failed_items
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, book.render(isolated).encode())
    return path
