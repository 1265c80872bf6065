"""What each step of a pipeline is doing, read from the spool (the desk's and prsctl's view).

Guarantees: a step's state is derived from where its job folder is, never from a
cache: ``steps/<step>/`` (Waiting), ``inbox/<id>`` (Queued), ``jobs/<id>/`` (Running,
or its ``final.json``'s state), a skip the leader recorded (Skipped), a reused step of
an earlier run (Completed). The places are looked at in the order a folder moves
through them, so a move between two looks is never taken for a loss. Given the
pipeline's owner, a job the leader recorded for someone else, or one with no owner
record once taken in, is never this pipeline's step (Lost): a record naming another
user's job reads nothing of it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.spool.finalrecord import FinalState
from prsd.spool.jobowner import OwnerRecordError, owner
from prsd.spool.pipelinefolder import MAX_STATE_BYTES
from prsd.spool.privaterecords import read_final
from prsd.spool.readsafe import UntrustedFile
from prsd.spool.states import JobState
from prsd.wire.fields import RecordError

if TYPE_CHECKING:
    from prsd.spool.layout import SpoolLayout
    from prsd.spool.pipelinefolder import PipelineFolder
    from prsd.spool.pipelinerecord import PipelineRecord

SUCCEEDED = frozenset({JobState.COMPLETED, JobState.COMPLETED_WITH_FAILURES})
FAILED = frozenset({JobState.FAILED, JobState.CANCELED, "Lost"})
ENDED = SUCCEEDED | FAILED | {"Skipped"}


@dataclass(frozen=True)
class StepView:
    """One step now: its state, its job, and the reason it ended or was skipped."""

    name: str
    kind: str
    job_id: str
    state: str
    reason: str = ""


def step_views(
    pipeline: PipelineFolder, record: PipelineRecord, owner_uid: int | None = None
) -> dict[str, StepView]:
    """Every step's view (see the module docstring); ``owner_uid``: the pipeline's owner
    (by default the owner of its folder, read without following a link: a record that
    names another user's job shows that step Lost to every reader, never that job)."""
    if owner_uid is None:
        owner_uid = pipeline.owner_uid()
    skipped = pipeline.state().skipped
    out = {}
    for name, step in record.steps.items():
        state, reason = _where(pipeline, name, step.job_id, owner_uid)
        if step.reused and state == "Lost":
            state, reason = JobState.COMPLETED, "reused from the earlier run"
        if name in skipped and state in ("Waiting", "Lost"):
            state, reason = "Skipped", skipped[name]
        out[name] = StepView(name, step.kind, step.job_id, state, reason)
    return out


def job_owner_uid(spool: SpoolLayout, job_id: str) -> int | None:
    """The owner the leader recorded for a job (:func:`prsd.spool.jobowner.owner`).

    None when it has none (not taken in yet, or a record that cannot be believed): such
    a job is never counted as anyone's step (fail-closed, see :func:`_where`).
    """
    try:
        return owner(spool.job(job_id)).uid
    except (OwnerRecordError, OSError):
        return None


def _where(
    pipeline: PipelineFolder, name: str, job_id: str, owner_uid: int | None
) -> tuple[str, str]:
    spool = pipeline.spool
    if pipeline.waiting(name):
        return "Waiting", ""
    if os.path.lexists(spool.queued(job_id)):
        return "Queued", ""
    job = spool.job(job_id)
    if not os.path.lexists(job.root):
        return "Lost", "its job folder is gone (taken in under another id, or removed)"
    if owner_uid is not None:
        theirs = job_owner_uid(spool, job_id)
        if theirs is None and not (os.path.lexists(job.spec) or os.path.lexists(job.final)):
            return "Queued", ""  # taken in a moment ago: its owner is being recorded
        if theirs != owner_uid:
            return "Lost", f"job {job_id} has no owner record or belongs to another user"
    try:  # the private copy, with the reason, where this user may read it
        final = FinalState.from_json(read_final(job, MAX_STATE_BYTES))
    except (OSError, UntrustedFile, RecordError):
        return JobState.RUNNING, ""
    return final.state, final.reason
