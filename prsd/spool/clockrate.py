"""Clock sanity: does this machine's clock run at the spool's pace?

Invariant: a process whose own clock runs visibly faster than the spool's decides
nothing by elapsed time (no take-over of the lease, no node presumed lost). Liveness
is timed on the observer's monotonic clock (prsd.leader.liveness); a clock that runs
ten times too fast would see every peer silent for ten times too long. The spool's
pace is read from a file this process touches (``utime`` with no time: the file
system stamps it with its own clock, the server's on NFS and SMB), compared with the
local monotonic clock over at least :data:`MIN_SPAN_S` of spool time.

Only the *rate* is compared, never the two clocks' readings (they may differ by
hours and that is fine). File systems with 1 s mtimes (sshfs) need the span to see
the rate; until then the verdict is "unknown", which callers treat as "do not
decide yet".

Errors: :meth:`ClockRate.sample` ignores an error of the spool (the verdict stays
what it was).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

MIN_SPAN_S = 2.0  # spool seconds before a rate is trusted
WINDOW_S = 60.0  # spool seconds after which the base sample moves on
FAST_RATIO = 1.5  # a local clock this much faster than the spool's is off


def rate(base: tuple[float, float], last: tuple[float, float]) -> float | None:
    """Local seconds per spool second between two (monotonic, mtime) samples; None
    while the spool's span is under MIN_SPAN_S."""
    spool_s = last[1] - base[1]
    if spool_s < MIN_SPAN_S:
        return None
    return (last[0] - base[0]) / spool_s


@dataclass
class ClockRate:
    """Samples of (local monotonic, spool mtime) from one stamp file."""

    stamp: Path
    base: tuple[float, float] | None = None
    last: tuple[float, float] | None = None
    known: float | None = None  # the last rate measured (kept while a new base grows)

    def sample(self, now: float) -> None:
        """Touch the stamp file and note its mtime against ``now`` (monotonic)."""
        try:
            try:
                os.utime(self.stamp)
            except FileNotFoundError:
                fd = os.open(self.stamp, os.O_WRONLY | os.O_CREAT, 0o644)
                os.close(fd)
            mtime = os.stat(self.stamp).st_mtime
        except OSError:
            return
        point = (now, mtime)
        if self.base is None or mtime - self.base[1] > WINDOW_S:
            self.base = self.last if self.last is not None else point
        self.last = point
        measured = rate(self.base, self.last)
        if measured is not None:
            self.known = measured

    def ratio(self) -> float | None:
        """Local seconds per spool second (None: not known yet)."""
        return self.known

    def fast(self) -> bool:
        """True when this clock is known to run FAST_RATIO times the spool's or more."""
        r = self.ratio()
        return r is not None and r >= FAST_RATIO

    def trusted(self) -> bool:
        """True when the rate is known and not fast: elapsed times may decide."""
        r = self.ratio()
        return r is not None and r < FAST_RATIO
