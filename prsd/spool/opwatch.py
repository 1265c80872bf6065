"""Liveness is progress: which spool operations are in flight, and for how long.

Invariant: a daemon proves it is alive (its lease, its heartbeat, the systemd
watchdog) only while its work makes progress. A file operation on a network file
system can block without an error (a partial NFS or Lustre outage, a hung FUSE
server): the event loop goes on and a heartbeat written by it would say "healthy"
while every job waits. Each unit of work that touches the spool (a leader's job step,
an agent's commit) runs inside :meth:`OpWatch.op`; :meth:`OpWatch.stuck` names the
oldest one that has not returned within a bound, and the daemon then stops renewing
its lease or heartbeat (so its peers take its work over) and stops feeding the
watchdog (so systemd restarts it).

Times are ``time.monotonic()`` seconds of this process; nothing here touches a file.
Errors: none.
"""

from __future__ import annotations

import itertools
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator


class OpWatch:
    """Operations in flight, each with what it is and when it began."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._running: dict[int, tuple[str, float]] = {}

    @contextmanager
    def op(self, what: str) -> Iterator[None]:
        """Note ``what`` as in flight for the ``with`` block (from any thread)."""
        key = next(self._ids)
        with self._lock:
            self._running[key] = (what, time.monotonic())
        try:
            yield
        finally:
            with self._lock:
                del self._running[key]

    def stuck(self, bound_s: float, now: float | None = None) -> str:
        """``"<what> has not returned for N s"`` for the oldest operation in flight
        longer than ``bound_s``; "" when none is."""
        now = time.monotonic() if now is None else now
        with self._lock:
            oldest = min(self._running.values(), key=lambda r: r[1], default=None)
        if oldest is None or now - oldest[1] < bound_s:
            return ""
        return f"{oldest[0]} has not returned for {now - oldest[1]:.0f} s"
