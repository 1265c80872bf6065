"""What clients read about a pipeline: its state and its steps', as one document.

The document (``prsctl status PIPELINE --json``, docs/pipelines.md) is built from the
submitter's ``pipeline.json``, the leader's ``final.json`` when the pipeline has ended,
each step's place (prsd.pipeline.view) and each started step's status summary
(:func:`prsd.read.jobs.read_job_status`), all read through the pipeline's folder
(:class:`prsd.spool.pipelinefolder.PipelineFolder`). A pipeline without a readable
``final.json`` is Running. Errors: :class:`prsd.spool.badrecord.BadRecord` when the pipeline's record
cannot be read (missing, another user's private folder, malformed).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prsd.pipeline.view import step_views
from prsd.read.jobs import read_job_status
from prsd.spool.badrecord import BadRecord
from prsd.spool.pipelinefolder import PipelineFolder
from prsd.spool.pipelinerecord import pipeline_ids

if TYPE_CHECKING:
    from prsd.spool.finalrecord import FinalState
    from prsd.spool.layout import SpoolLayout

NOT_STARTED = ("Waiting", "Skipped", "Lost", "Queued")
"""Step states with no job status to read (the step's job has not started)."""

_STEP_FIELDS = (
    "succeeded_mbs",
    "failed_mbs",
    "total_mbs",
    "planned_mbs",
    "started_at",
    "elapsed_s",
)


def read_pipeline_status(spool: SpoolLayout, pipeline_id: str) -> dict[str, Any]:
    """The pipeline's state and its steps' (docs/pipelines.md).

    Raises:
        BadRecord: the pipeline's record cannot be read.
    """
    pipeline = PipelineFolder(spool, pipeline_id)
    record = pipeline.record()
    final = pipeline.final()
    steps = []
    for view in step_views(pipeline, record).values():
        step: dict[str, Any] = {
            "step": view.name,
            "kind": view.kind,
            "job_id": view.job_id,
            "state": view.state,
            "reason": view.reason,
            "depends_on": list(record.steps[view.name].deps),
        }
        if view.state not in NOT_STARTED:
            doc = read_job_status(spool, view.job_id)
            step.update({k: doc.get(k) for k in _STEP_FIELDS if k in doc})
        steps.append(step)
    return {
        "pipeline_id": pipeline_id,
        "name": record.name,
        "kind": "pipeline",
        "state": final.state if final else "Running",
        "reason": final.reason if final else "",
        "exit_code": final.exit_code if final else None,
        "retry_of": record.retry_of,
        "elapsed_s": _elapsed(steps, final),
        "steps": steps,
        "ignored": list(record.ignored),
    }


def _elapsed(steps: list[dict[str, Any]], final: FinalState | None) -> float | None:
    """Seconds from the first step's start to the pipeline's end (or now)."""
    starts = [s["started_at"] for s in steps if isinstance(s.get("started_at"), str)]
    if not starts:
        return None
    try:
        first = min(datetime.fromisoformat(t) for t in starts)
        end = datetime.fromisoformat(final.finished_at) if final else datetime.now(UTC)
    except (ValueError, TypeError):
        return None
    return max(0.0, round((end - first).total_seconds(), 1))


def readable_pipelines(spool: SpoolLayout) -> list[str]:
    """The pipelines whose record this user may read."""
    out = []
    for pid in pipeline_ids(spool):
        try:
            PipelineFolder(spool, pid).record()
        except BadRecord:
            continue
        out.append(pid)
    return out


def has_ended(spool: SpoolLayout, pipeline_id: str) -> bool:
    """True once the leader wrote the pipeline's ``final.json``."""
    return PipelineFolder(spool, pipeline_id).ended()
