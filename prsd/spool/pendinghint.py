"""The leader's hint of the task names it has out, for agents whose listings are stale.

Promise: ``tasks/pending.names`` holds, one per line, names of task files the leader
wrote into ``pending/`` and has not yet seen committed (at most :data:`MAX_NAMES`,
the newest), replaced whole (write, rename) at most every :data:`INTERVAL_S` while
that set changes. It is a hint and never the truth:

- a name in it may be claimed, done or requeued already: its claim is a lost race;
- a pending task may be missing from it: the listing of ``pending/`` still finds it.

Why: on a network mount a listing is served from a cache (sshfs 20 s; NFS until the
folder's cached attributes expire, up to ``acdirmax``), so new task files stay
invisible to an agent's listing for that long, while opening a file by name reads
the server's current copy (close-to-open). A rename of a name read here goes to the
server too, so an agent claims a task within the hint's age instead of the cache's.

Errors: reading never raises. A missing, foreign, oversized or half-read hint (a
short read through a mount's attribute cache) gives the names of its whole lines
that parse as task names, or none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.spool.atomic import write_atomic
from prsd.spool.layout import TaskName
from prsd.spool.readsafe import UntrustedFile, read_small

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from prsd.spool.layout import JobLayout

FILE_NAME = "pending.names"
MAX_NAMES = 256
INTERVAL_S = 0.25
MAX_BYTES = MAX_NAMES * 64


def hint_path(layout: JobLayout) -> Path:
    return layout.tasks / FILE_NAME


def read_hint(layout: JobLayout, min_epoch: int = 0) -> list[TaskName]:
    """The task names of the hint (of epoch ``min_epoch`` or later), in its order."""
    try:
        data = read_small(hint_path(layout), MAX_BYTES, daemon_owned=True)
    except (UntrustedFile, OSError):  # no hint: the listing alone decides
        return []
    whole = data[: data.rfind(b"\n") + 1].decode("ascii", "replace")
    names = [TaskName.parse(line) for line in whole.splitlines()]
    return [n for n in names if n is not None and n.epoch >= min_epoch]


class HintWriter:
    """The leader's side: publishes the outstanding names when they changed, rate-limited."""

    def __init__(self, layout: JobLayout, interval_s: float = INTERVAL_S) -> None:
        self.layout = layout
        self.interval_s = interval_s
        self._last: tuple[str, ...] = ()
        self._at = -1e18

    def publish(self, names: Iterable[str], now: float) -> bool:
        """Replace the hint with the newest :data:`MAX_NAMES` of ``names`` (in writing
        order) if they changed and the last write is ``interval_s`` old; True if written.

        Raises:
            OSError: the hint could not be written (the spool is failing: the caller's
                storage-fault handling applies, as for any write of the leader).
        """
        if now - self._at < self.interval_s:
            return False
        newest = tuple(names)[-MAX_NAMES:]
        if newest == self._last:
            return False
        text = "".join(name + "\n" for name in newest)
        write_atomic(hint_path(self.layout), text.encode("ascii"), durable=False)
        self._last, self._at = newest, now
        return True
