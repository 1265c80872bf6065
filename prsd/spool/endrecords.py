"""The records of a job's end: its final record, and the status of a job with no driver.

Promise: :func:`final_record` is the one place a :class:`prsd.spool.finalrecord.FinalState`
is made: the exit code follows from the state (:data:`prsd.spool.states.EXIT_CODES`)
and the time is now, in UTC. :func:`ended_status` is the status document of a job
that ends without a driver to count it (refused at intake, failed by a fault): the
fields every status carries (``schema``, ``job_id``, ``state``, ``reason``) and
``updated_at``, as docs/prsctl.md documents for a job refused at intake. Pure but for
the clock.

Errors: :func:`final_record` raises ``ValueError`` for a state a job does not end in.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from prsd.spool.finalrecord import FinalState
from prsd.spool.states import ENDED, EXIT_CODES, JobState
from prsd.spool.statusrecord import JobStatus

__all__ = ["ended_status", "final_record"]


def final_record(
    state: JobState,
    reason: str,
    *,
    output: str = "",
    root_cause: str = "",
    counts: dict[str, Any] | None = None,
) -> FinalState:
    """How the job ended, stamped now.

    Raises:
        ValueError: ``state`` is not one of :data:`prsd.spool.states.ENDED`.
    """
    state = JobState(state)
    if state not in ENDED:
        raise ValueError(f"a job does not end {state.value!r}")
    return FinalState(
        state.value,
        reason,
        int(EXIT_CODES[state]),
        output,
        root_cause,
        datetime.now(UTC).isoformat(timespec="seconds"),
        dict(counts or {}),
    )


def ended_status(job_id: str, final: FinalState) -> JobStatus:
    """The status of a job ended with no driver (see the module docstring)."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    return JobStatus(job_id, final.state, final.reason, {"updated_at": now})
