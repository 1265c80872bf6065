"""A task feed of a files job on a real spool folder, as an agent's job run makes one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.agent.context import JobContext
from prsd.agent.feed import POLL_S, TaskFeed
from prsd.jobspec import InputSpec, JobSpec
from prsd.spool.layout import TaskName
from prsd.spool.taskrecords import TaskBody
from prsd.spool.watch import Doorbell
from prsd.wire.records import MiniBatch

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout


def files_feed(layout: JobLayout, node_id: str, *, poll_s: float = POLL_S) -> TaskFeed:
    """The feed of node ``node_id`` for a files job in ``layout`` (mini-batches of 1)."""
    spec = JobSpec(
        name=layout.job_id.split("-")[0],
        job_dir=str(layout.root),
        input=InputSpec(paths=(str(layout.root),), format="files"),
        mini_batch_size=1,
        code_dir=str(layout.root),
        entry_script="score.py",
    )
    return TaskFeed(JobContext(layout, spec, node_id, 0, "files"), Doorbell(), poll_s=poll_s)


def write_pending(layout: JobLayout, tasks: int) -> None:
    """``tasks`` task files in ``pending/``, one mini-batch of one file each (as a split writes)."""
    for first_mb in range(tasks):
        body = TaskBody(layout.job_id, "files", (MiniBatch(first_mb, [f"f{first_mb}"], 1),))
        path = layout.pending_task(TaskName(first_mb, 1, 1))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body.encode())
