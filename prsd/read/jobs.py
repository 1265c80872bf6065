"""What clients read about jobs: the status summaries, never the task folders.

A job's state comes from ``state/status.json`` (kept by the leader), so the cost of
a status query does not grow with the job's size; its error text is merged in from
``state/status.private.json`` when this user may read it (the owner, the job's group,
root), and is otherwise never shown. A job still in ``inbox/`` is
Queued; a job folder the leader has not written a summary for yet is Starting; a
summary this user may not read is Unknown, with that as the reason (the table still
lists every job).
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any

from prsd.errors import PrsdError
from prsd.spool.opening import submitted_jobs
from prsd.spool.states import ENDED as ENDED_STATES
from prsd.spool.statusfiles import (
    merged_with_private_file,
    read_final_document,
    read_status_document,
)
from prsd.spool.statusschema import SCHEMA_VERSION, reconcile

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import SpoolLayout

ENDED = tuple(str(s) for s in ENDED_STATES)  # the states a job ends in, as text


class UnknownJob(PrsdError):
    """No job (or more than one) matches what the user typed."""


def queued_doc(job_id: str, state: str) -> dict[str, Any]:
    return {"schema": SCHEMA_VERSION, "job_id": job_id, "state": state, "reason": ""}


def read_job_status(spool: SpoolLayout, job_id: str) -> dict[str, Any]:
    """The job's status document (schema 1); Queued or Starting before the leader wrote one."""
    layout = spool.job(job_id)
    try:
        found = read_status_document(layout)  # None: not written yet, or being replaced
        if found is not None:
            return reconcile(
                merged_with_private_file(found, layout.state), read_final_document(layout)
            )
    except PermissionError:
        doc = queued_doc(job_id, "Unknown")
        doc["reason"] = f"{layout.status} is not readable by this user"
        return doc
    final = read_final_document(layout)
    if final is not None and isinstance(final.get("state"), str):
        return reconcile(queued_doc(job_id, final["state"]), final)
    if _real_folder(spool.queued(job_id)):
        return queued_doc(job_id, "Queued")
    return queued_doc(job_id, "Starting")


def job_ids(spool: SpoolLayout) -> list[str]:
    """Every job in the spool (taken in, or waiting in the inbox), oldest first by id time."""
    ids = submitted_jobs(spool)
    return sorted(ids, key=_id_time)


def _real_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _id_time(job_id: str) -> tuple[str, str]:
    parts = job_id.rsplit("-", 3)
    return ("-".join(parts[1:3]) if len(parts) == 4 else "", job_id)


def read_job_statuses(spool: SpoolLayout) -> list[dict[str, Any]]:
    """The status document of every job (:func:`job_ids` order), for ``prsctl status``."""
    return [read_job_status(spool, j) for j in job_ids(spool)]


def resolve_job(spool: SpoolLayout, text: str) -> str:
    """A job id from what the user typed: the id, a unique prefix, or ``last``.

    Raises:
        UnknownJob: nothing or several jobs match.
    """
    ids = job_ids(spool)
    if text == "last" and ids:
        return ids[-1]
    if text in ids:
        return text
    matches = [j for j in ids if j.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UnknownJob(f"no job {text!r} in the spool {spool.root}")
    raise UnknownJob(f"{text!r} matches {len(matches)} jobs: {', '.join(matches[:5])}")


def is_ended(doc: dict[str, Any]) -> bool:
    return doc.get("state") in ENDED
