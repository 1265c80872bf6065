"""Every task name a leader created, so that its successor knows what to look for.

Invariant: before (or as) a leader creates a task name in ``pending/`` (a new task, a
retry, a requeue, an older epoch's task renamed to its own), the name is appended to
``state/issued.e<epoch>.log``, a file only that leader writes. A successor reads all
of them and does not trust its listing of the task folders until every issued name
is seen somewhere, or was superseded by a later name of the same task (a requeue or
rename, which makes the old name vanish). On a shared mount a new leader's listing
can lag by the mount's cache time (sshfs 20 s); planning or retrying from such a
listing would issue work twice under one attempt number.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prsd.fdio import write_all
from prsd.spool.layout import ISSUE_LOG_PREFIX, TaskName
from prsd.spool.listing import listing

if TYPE_CHECKING:
    from collections.abc import Iterable

    from prsd.spool.layout import JobLayout


class IssueLog:
    """The append-only list of task names this leader created (one write per batch)."""

    def __init__(self, layout: JobLayout, epoch: int) -> None:
        layout.state.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(layout.issue_log(epoch), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def add(self, names: Iterable[str]) -> None:
        write_all(self._fd, "".join(f"{n}\n" for n in names).encode())

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_issued(layout: JobLayout) -> set[TaskName]:
    """Every task name any leader of the job logged (a torn last line is skipped)."""
    names: set[TaskName] = set()
    logs = [n for n in listing(layout.state) if n.startswith(ISSUE_LOG_PREFIX)]
    for log in logs:
        try:
            with open(layout.state / log, "rb") as f:
                text = f.read().decode("ascii", "replace")
        except OSError:
            continue
        for line in text.split("\n"):
            task = TaskName.parse(line)
            if task is not None:
                names.add(task)
    return names


def unsettled(issued: set[TaskName], seen: set[str]) -> list[TaskName]:
    """Issued names neither seen in a listing nor superseded by a later name of the task."""
    latest: dict[int, tuple[int, int]] = {}
    for t in issued:
        key = (t.attempt, t.epoch)
        if key > latest.get(t.first_mb, (-1, -1)):
            latest[t.first_mb] = key
    return sorted(
        t for t in issued if t.name not in seen and (t.attempt, t.epoch) == latest[t.first_mb]
    )
