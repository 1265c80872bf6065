"""``jobs/<id>/state/issued.e<epoch>.log``: the task names each leader of a job created.

Promise: :class:`IssueLog` is the one writer of a leader's own log: opened once per
job and epoch (``O_APPEND``, created 0644 where missing, its ``state/`` folder made),
each :meth:`IssueLog.add` one ``write`` of whole lines, so a log holds only names a
leader issued, the last line at worst torn by a crash. :func:`read_issued` reads
every epoch's log of the job back as task names, skipping a torn or foreign line
and a log that cannot be read. Why a leader keeps the log and how a successor uses
it is prsd/leader/takeover/issued.py.

Errors: :class:`IssueLog` raises ``OSError`` when the log cannot be opened or
written; :func:`read_issued` raises ``OSError`` only when ``state/`` cannot be listed
(``FileNotFoundError``: the job has none).
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

__all__ = ["IssueLog", "read_issued"]


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
