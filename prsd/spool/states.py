"""A job's states, the exit code each end state gives, and which states are ended.

Promise: :class:`JobState` names every state a job's records carry (``status.json``'s
and ``final.json``'s ``state``). It is a ``str`` enum, so a member compares equal to,
hashes as, formats as and is written to JSON as its text ("Failed"): records written
before it existed read the same. :data:`ENDED` are the states a job ends in;
:data:`EXIT_CODES` gives the exit code of ``prsd run`` (and ``final.json``'s
``exit_code``) for each of them. The daemon side only: the worker and the records it
reads (prsd/wire) keep plain strings.

Errors: :func:`job_state` raises ``ValueError`` for a text that is no job state.
"""

from __future__ import annotations

from enum import StrEnum

from prsd.errors import ExitCode

__all__ = ["ENDED", "EXIT_CODES", "JobState", "job_state"]


class JobState(StrEnum):
    """The state of a job, as its records write it."""

    RUNNING = "Running"
    COMPLETED = "Completed"
    COMPLETED_WITH_FAILURES = "Completed with failures"  # within the error thresholds
    FAILED = "Failed"
    CANCELED = "Canceled"


ENDED: tuple[JobState, ...] = (
    JobState.COMPLETED,
    JobState.COMPLETED_WITH_FAILURES,
    JobState.FAILED,
    JobState.CANCELED,
)
"""The states a job ends in (``final.json`` holds one of them)."""

EXIT_CODES: dict[str, ExitCode] = {  # keyed by JobState: a state's text finds it too
    JobState.COMPLETED: ExitCode.OK,
    JobState.COMPLETED_WITH_FAILURES: ExitCode.OK,  # as Azure: within the thresholds is success
    JobState.FAILED: ExitCode.JOB_FAILED,
    JobState.CANCELED: ExitCode.JOB_CANCELED,
}


def job_state(text: str) -> JobState:
    """The state named ``text``.

    Raises:
        ValueError: ``text`` names no job state.
    """
    return JobState(text)
