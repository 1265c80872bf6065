"""``jobs/<id>/state/started.json``: when the first leader took the job in.

Promise: :class:`Started` is the job's own start, written once at intake and read
back by every leader that takes the job over, so the job's elapsed time survives
failovers (prsd/leader/run/jobclock.py). It carries the Unix time (``unix_s``, what is
read back) and the same instant as ISO 8601 UTC (``started_at``, for people), and
round-trips through :meth:`Started.to_json` / :meth:`Started.from_json`.

Errors: :meth:`Started.from_json` raises :class:`prsd.spool.badrecord.BadRecord` for
anything but such a record (a version newer than ``SCHEMA`` included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

from prsd.spool.badrecord import Doc, encode

__all__ = ["SCHEMA", "Started"]

SCHEMA = 1


@dataclass(frozen=True)
class Started:
    """The job's start (Unix seconds, wall clock of the leader that took it in)."""

    unix_s: float

    @property
    def started_at(self) -> str:
        return datetime.fromtimestamp(self.unix_s, UTC).isoformat()

    def to_json(self) -> bytes:
        return encode({"unix_s": self.unix_s, "started_at": self.started_at}, SCHEMA)

    @classmethod
    def from_json(cls, data: bytes) -> Started:
        """Read ``started.json``.

        Raises:
            BadRecord: not such a record.
        """
        doc = Doc(data, "state/started.json", SCHEMA)
        unix_s = doc.number("unix_s")
        if not math.isfinite(unix_s) or unix_s < 0:
            raise doc.bad(f"unix_s {unix_s!r} is not a time")
        return cls(unix_s)
