"""What a new leader finds in a job's task folders when it takes the job over.

Invariant: task files only ever move forward, pending -> claimed -> done or returned,
except that the leader (now: us) moves returned and lost claims back to pending. So
listing the folders in that same order sees every task at least once: a task that
moves while we list can only move into a folder we list later. A task seen twice is
counted where it was seen last.

Before the listing, pending tasks named with an older epoch are renamed to ours
(agents ignore older epochs, which is what keeps a deposed leader's late writes from
running); a pending task an agent claims during that rename simply stays the agent's.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.spool.atomic import move_verified, write_atomic
from prsd.spool.layout import JobLayout, TaskName, parse_done_name
from prsd.spool.listing import listing

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

PENDING = "pending"
CLAIMED = "claimed"
RETURNED = "returned"
DONE = "done"
VOID = "void"


@dataclass(frozen=True)
class Found:
    """A task file found at take-over, and where."""

    task: TaskName
    place: str
    path: Path
    node: str = ""  # the claimant (claimed) or committer (done)


def _names(folder: Path) -> list[str]:
    try:
        return listing(folder)
    except NotADirectoryError:
        return []


def _pending(layout: JobLayout) -> Iterator[Found]:
    for shard in _names(layout.pending):
        for name in _names(layout.pending / shard):
            task = TaskName.parse(name)
            if task is not None:
                yield Found(task, PENDING, layout.pending / shard / name)


def reepoch_pending(layout: JobLayout, epoch: int, on_issue: Callable[[list[str]], None]) -> int:
    """Rename pending tasks of older epochs to ``epoch``; how many were renamed."""
    moved = 0
    for found in list(_pending(layout)):
        if found.task.epoch < epoch and reepoch(layout, found, epoch, on_issue) is not None:
            moved += 1
    return moved


def reepoch(
    layout: JobLayout, found: Found, epoch: int, on_issue: Callable[[list[str]], None]
) -> Found | None:
    """One pending task of an older epoch renamed to ``epoch`` (None: it was gone).

    Agents claim no task of an older epoch, so a pending task the new leader adopts
    must carry its epoch: also one that a paused, deposed leader renamed into
    ``pending/`` after :func:`reepoch_pending` had looked.
    """
    new = TaskName(found.task.first_mb, found.task.attempt, epoch)
    if not move_verified(found.path, layout.pending_task(new)):
        return None
    on_issue([new.name])
    return Found(new, found.place, layout.pending_task(new), found.node)


def scan_tasks(layout: JobLayout) -> list[Found]:
    """Every task file of the job, each once, at the place it was seen last."""
    seen: dict[str, Found] = {}
    for found in _pending(layout):
        seen[found.task.name] = found
    for node in _names(layout.claimed):
        for name in _names(layout.claimed / node):
            task = TaskName.parse(name)
            if task is not None:
                seen[name] = Found(task, CLAIMED, layout.claimed / node / name, node)
    for name in _names(layout.returned):
        task = TaskName.parse(name)
        if task is not None:
            seen[name] = Found(task, RETURNED, layout.returned / name)
    for name in _names(layout.void):
        task = TaskName.parse(".".join(name.split(".")[:3]))
        if task is not None:
            seen[task.name] = Found(task, VOID, layout.void / name)
    done: list[Found] = []
    for shard in _names(layout.done):
        for name in _names(layout.done / shard):
            parsed = parse_done_name(name)
            if parsed is not None:
                seen.pop(parsed[0].name, None)
                done.append(Found(parsed[0], DONE, layout.done / shard / name, parsed[1]))
    return [*seen.values(), *done]


def read_task_bytes(layout: JobLayout, found: Found) -> bytes | None:
    """The bytes of a task file, following it if it moved on since the listing."""
    try:
        return found.path.read_bytes()
    except FileNotFoundError:
        pass
    name = found.task.name
    candidates = [layout.returned / name]
    candidates += [layout.claimed / node / name for node in _names(layout.claimed)]
    done_dir = layout.done / found.task.shard
    candidates += [done_dir / n for n in _names(done_dir) if n.startswith(name + ".")]
    for path in candidates:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            continue
    return None


def done_order(found: Found) -> tuple[int, int, int, str]:
    """Ingest committed attempts oldest first, so each mini-batch's attempts come in order."""
    return (found.task.attempt, found.task.first_mb, -found.task.epoch, found.node)


@dataclass(frozen=True)
class ReportPart:
    """One leader's report file read back: only rows that were written whole."""

    header: list[str] | None
    rows: list[list[str]]
    torn: int


def read_report_part(path: Path, width: int | None = None) -> ReportPart:
    """The whole rows of a report part (a kill in mid-write leaves a torn last line).

    A row counts only when its line ends with a newline and has the header's width:
    a row cut short could still start with a valid (mini-batch, attempt) key, and a
    leader that counted that key as written would never write the row again.
    """
    try:
        with open(path, newline="", encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return ReportPart(None, [], 0)
    whole, _, tail = text.rpartition("\n")
    torn = 1 if tail else 0
    header: list[str] | None = None
    rows: list[list[str]] = []
    for row in csv.reader(io.StringIO(whole + "\n" if whole else "")):
        if row and row[0] == "mini_batch_id":
            header = header or row
            continue
        expected = width or (len(header) if header else len(row))
        if len(row) != expected or len(row) < 2 or not (row[0].isdigit() and row[1].isdigit()):
            torn += 1
            continue
        rows.append(row)
    return ReportPart(header, rows, torn)


def _ends_whole(path: Path) -> bool:
    """Is ``path`` missing, empty, or ending with a whole line? A report one leader
    wrote can be torn only at its end: every row is one line, appended whole, so a kill
    in mid-write leaves a last line with no newline."""
    try:
        with open(path, "rb") as f:
            if f.seek(0, os.SEEK_END) == 0:
                return True
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"
    except FileNotFoundError:
        return True


def merge_reports(parts: list[Path]) -> int:
    """Merge the leaders' report files into the first; rows dropped (repeats, torn).

    Every leader epoch appends to its own file, so no two writers share one; the
    leader that ends the job keeps the first row of each (mini-batch, attempt) across
    them, drops rows torn by a kill in mid-write, writes the report aside and renames
    it, and removes the parts.
    """
    if len(parts) == 1 and _ends_whole(parts[0]):
        return 0  # one leader wrote it, each row once, and no kill cut its last row
    header: list[str] | None = None
    kept: list[list[str]] = []
    seen: set[tuple[str, str]] = set()
    dropped = 0
    for path in parts:
        part = read_report_part(path, len(header) if header else None)
        header = header or part.header
        dropped += part.torn
        for row in part.rows:
            key = (row[0], row[1])
            if key in seen:
                dropped += 1
                continue
            seen.add(key)
            kept.append(row)
    if len(parts) == 1 and dropped == 0:
        return 0
    out = io.StringIO()
    writer = csv.writer(out)
    if header:
        writer.writerow(header)
    writer.writerows(kept)
    write_atomic(parts[0], out.getvalue().encode("utf-8"))
    for path in parts[1:]:
        path.unlink(missing_ok=True)
    return dropped
