"""The job's own start, recorded once in ``state/started.json`` and kept across failovers.

Invariant: the elapsed time a job reports (``job_result.txt``, ``prsctl status``,
progress lines) counts from when the first leader took the job in, not from when the
current leader took it over. The start is written once, durably, at intake; a leader
that resumes the job reads it back and sets its driver's monotonic ``started`` so
that ``now - started`` is the job's age. The wall clock is compared only with the
wall time written by a leader (perhaps on another machine): a skew between the two
shifts the reported elapsed time by that skew, never below zero, and decides nothing.

Errors: :func:`record_start` raises OSError (the caller's job boundary handles it);
:func:`restored_start` (used by a resumed driver) treats a missing or damaged record as "started now".
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.spool.atomic import write_atomic
from prsd.spool.badrecord import BadRecord
from prsd.spool.startedrecord import Started

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import JobLayout

STARTED_FILE = "started.json"


def started_path(layout: JobLayout) -> Path:
    return layout.state / STARTED_FILE


def record_start(layout: JobLayout) -> None:
    """Write the job's start (wall clock) unless an earlier leader already did."""
    path = started_path(layout)
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, Started(time.time()).to_json())


def age_s(recorded_unix_s: float, wall_now_s: float) -> float:
    """Seconds the job has run, from its recorded start (never negative)."""
    return max(0.0, wall_now_s - recorded_unix_s)


def read_start(layout: JobLayout) -> float | None:
    """The recorded start (Unix seconds), or None."""
    try:
        return Started.from_json(started_path(layout).read_bytes()).unix_s
    except (OSError, BadRecord):
        return None


def restored_start(layout: JobLayout, now: float) -> tuple[float, datetime] | None:
    """For a resumed driver: its ``started`` (monotonic, ``now`` being this moment) and
    wall-clock start from the job's recorded start; None when there is no record."""
    start = read_start(layout)
    if start is None:
        return None
    return now - age_s(start, time.time()), datetime.fromtimestamp(start, UTC)
