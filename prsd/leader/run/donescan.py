"""A job's commits, seen from the leader: which names in ``tasks/done/`` are new, and when
to list them again.

Promise: every commit in the listed shards is handed to the caller until the caller has
handled it once (a name is marked handled only when the caller asks for the next one, so
an error while handling leaves it for the next listing); a commit stays in ``done/`` for
the job's life, and a second commit of a task by another node has a name of its own.
The folders are listed at most once per :data:`LIST_INTERVAL_S`. A step that comes
sooner defers the listing, and :attr:`DoneScan.due_at` says when the leader must step
again for it: the ring that woke that step (a commit's inotify event, an agent's hint)
is spent, and without this the commit would wait for the leader's next tick (0.5 s at
the end of every job, measured in W9). In a job's last wave (its caller says
``eager``: no more tasks outstanding than worker slots serve the job) every step lists:
at most one listing per remaining task, and the job's end waits for no interval.

Errors: none of its own; a listing's OSError reaches the caller (the job's step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.spool.layout import parse_done_name

if TYPE_CHECKING:
    from collections.abc import Generator, Iterable, Sequence

    from prsd.spool.jobfolder import JobFiles

LIST_INTERVAL_S = 0.1
"""How often ``done/`` (and the driver's ``returned/`` and ``void/``) are listed at most:
file events and hints wake the step, and a burst of commits is one listing."""


class DoneScan:
    """The commits of one job's ``done/`` shards, each handed over once."""

    def __init__(self, folder: JobFiles, interval_s: float = LIST_INTERVAL_S) -> None:
        self.folder = folder
        self.interval_s = interval_s
        self._last = -1e9  # when the folders were last listed
        self._deferred = False  # a step came before the listing was due
        self._seen: dict[str, set[str]] = {}  # shard -> done/ names handled

    def due(self, now: float, *, eager: bool = False) -> bool:
        """True (and the listing counted as made now) when the folders are to be listed;
        False defers it to :attr:`due_at`. ``eager``: list now in any case."""
        # As due_at says, to the bit.
        self._deferred = not eager and now < self._last + self.interval_s
        if self._deferred:
            return False
        self._last = now
        return True

    @property
    def next_at(self) -> float:
        """When the next listing may come (a step before it defers the listing)."""
        return self._last + self.interval_s

    @property
    def due_at(self) -> float | None:
        """When a deferred listing is due (None: none deferred)."""
        return self._last + self.interval_s if self._deferred else None

    def new_commits(self, shards: Iterable[str]) -> Generator[tuple[str, str], None, None]:
        """(task name, node) of each commit in ``shards`` not handled yet. Shards not
        named are forgotten (their tasks are all settled)."""
        shards = list(shards)
        self._seen = {shard: self._seen.get(shard, set()) for shard in shards}
        for shard in shards:
            seen = self._seen[shard]
            for name in self.folder.done_names(shard):
                if name in seen:
                    continue
                parsed = parse_done_name(name)
                if parsed is not None:
                    yield parsed[0].name, parsed[1]
                seen.add(name)  # only once handled: an error leaves it for the next listing


def wait_s(tick_s: float, now: float, dues: Sequence[float | None]) -> float:
    """How long the leader waits for a ring before it steps again: its tick, or less
    where a job deferred a listing (``dues``: each job's :attr:`DoneScan.due_at`)."""
    return min([tick_s, *(max(0.0, due - now) for due in dues if due is not None)])
