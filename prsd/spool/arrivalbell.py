"""A doorbell rung when a task file arrives in a job's ``pending/`` tree: inotify.

An agent waits for tasks the leader writes into ``tasks/pending/<shard>/``. On a
local-disk spool it used a recursive ``watchfiles`` watch of all of ``jobs/``: a
thread that took the interpreter lock every 50 ms, and an event-loop round trip (a
thread hop, a task group, a cancelled scope) for every batch of changes anywhere in
``jobs/`` (each worker's log lines, results, status), only to drop all but the
``pending/`` ones. Here the kernel reports only arrivals: a task renamed into one of
the watched job's shard folders ``pending/<shard>/`` (published or handed back), and
a new shard folder (watched from then on). A claim (a rename *out* of ``pending/``)
rings nobody, so agents are not woken by each other's claims.

Promise: hints only, as every bell: the listing is the truth, and the task feed lists
on its timer regardless. Local disks only (on a network file system inotify sees only
this machine's changes).

Errors: none raised. Where inotify cannot be had, or ``pending/`` cannot be watched,
:func:`ring_on_arrivals` returns at once; a read error ends it quietly; a shard folder
that cannot be watched is skipped (its tasks are found by the feed's listings).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prsd.spool.entrybell import (
    IN_CREATE,
    IN_ISDIR,
    IN_MOVED_TO,
    add_watch,
    events,
    open_watch,
    ring_per_wake,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

    from prsd.spool.watch import Doorbell

ARRIVALS = IN_MOVED_TO
"""In a shard folder: a task published or handed back (both renames in). A task file is
written aside under a hidden name first (its create would wake agents that then find
nothing to claim)."""
SHARDS = IN_CREATE | IN_MOVED_TO
"""In ``pending/`` itself: a new shard folder."""


def new_folders(buffer: bytes) -> Iterator[bytes]:
    """The names of the folders made or moved in, in a buffer of inotify events."""
    return (name for _wd, mask, name in events(buffer) if mask & IN_ISDIR and name)


def watch_shards(fd: int, pending: Path, names: Iterable[bytes | str]) -> None:
    """Add a watch of each shard folder ``pending/<name>`` (a folder, not a file)."""
    for name in names:
        add_watch(fd, pending / os.fsdecode(name), ARRIVALS)


async def ring_on_arrivals(pending: Path, bell: Doorbell) -> None:
    """Ring ``bell`` when a shard folder is made in ``pending`` or a file is renamed into
    one, until cancelled (returns at once where inotify cannot watch ``pending``)."""
    fd = open_watch(pending, SHARDS)
    if fd is None:
        return
    try:
        try:
            # Shards made before the watch: the first ring comes from the feed's own listing.
            watch_shards(fd, pending, [e.name for e in os.scandir(pending) if e.is_dir()])
        except OSError:
            return
        await ring_per_wake(fd, bell, lambda buffer: watch_shards(fd, pending, new_folders(buffer)))
    finally:
        os.close(fd)
