"""Every task name a leader created, so that its successor knows what to look for.

Invariant: before (or as) a leader creates a task name in ``pending/`` (a new task, a
retry, a requeue, an older epoch's task renamed to its own), the name is appended to
``state/issued.e<epoch>.log``, a file only that leader writes. A successor reads all
of them and does not trust its listing of the task folders until every issued name
is seen somewhere, or was superseded by a later name of the same task (a requeue or
rename, which makes the old name vanish). On a shared mount a new leader's listing
can lag by the mount's cache time (sshfs 20 s); planning or retrying from such a
listing would issue work twice under one attempt number. The log's file (written by
``IssueLog``, read back by ``read_issued``) is prsd/spool/issuelog.py; this module
decides which issued names are still unsettled (pure).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prsd.spool.layout import TaskName


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
