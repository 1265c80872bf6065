"""Where the full text of a job-wide cause is: the leader's traceback of a fault, or its log.

A job that a fault of the leader ended (:mod:`prsd.leader.end.guard`) keeps the
traceback in ``logs/sys/error/leader.txt``, so ``job_error.txt`` can point at the
full text as it does for a ``run()`` error. A job-wide cause with no traceback (a
timeout of the whole job, an input error, a cancellation) points at the leader's
log of the job, ``logs/sys/master_role.txt``.

Errors: :func:`write_fault_traceback` never raises; a job folder that cannot take
the file only loses the pointer.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING

from prsd.spool.atomic import write_atomic
from prsd.wire.logtree import LogTree

if TYPE_CHECKING:
    from pathlib import Path


def fault_file(logs: Path) -> Path:
    return LogTree(logs).leader_error


def job_log(logs: Path) -> Path:
    """The leader's log of the job, which holds every job-wide cause's line."""
    return LogTree(logs).master_role


def written_fault(logs: Path) -> str:
    """The leader's traceback file of the fault that ended the job, or ``""``."""
    fault = fault_file(logs)
    return str(fault) if fault.is_file() else ""


def write_fault_traceback(logs: Path, exc: BaseException) -> None:
    """Keep ``exc``'s traceback beside the job's other error files."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        fault_file(logs).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(fault_file(logs), text.encode("utf-8", "replace"))
    except OSError:
        pass  # the job ends Failed anyway; only the pointer to its traceback is lost
