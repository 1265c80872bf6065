"""A claimed task on this node: its mini-batches, their outcomes, and its commit.

A task may outlive the worker that started it: when a worker dies, the mini-batch it
was running gets its outcome (crashed, oom, timeout) and the remaining ones go on in
another worker, appending to the same result file. The commit publishes the result
file (payloads, then metadata and footer) and then renames the claim into ``done/``:
the leader reads nothing of a task until that rename.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prsd.fdio import write_all
from prsd.spool.atomic import TMP_PREFIX, publish
from prsd.spool.claim import Claim, commit, give_back
from prsd.spool.taskrecords import ResultMeta, TaskBody
from prsd.wire.fields import RecordError

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import JobLayout, TaskName
    from prsd.wire.records import MiniBatch, Outcome


@dataclass
class RunningTask:
    """A task this node owns."""

    task: TaskName
    mini_batches: list[MiniBatch]  # in order
    out_tmp: Path
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    withdrawn: bool = False  # handed ahead, not begun: it goes back whole (prsd.agent.ahead)
    prepared: bool = False  # its result file is made for the job's owner (the claim's thread)

    @classmethod
    def from_claim(cls, layout: JobLayout, node_id: str, claim: Claim) -> RunningTask:
        body = TaskBody.decode(claim.body)
        first = body.mini_batches[0].index
        if first != claim.task.first_mb or body.job_id != layout.job_id:
            raise RecordError(
                f"task file {claim.task.name}: it holds mini-batch {first:09d} of job "
                f"{body.job_id!r}, not {claim.task.first_mb:09d} of {layout.job_id!r}"
            )
        final = layout.result(claim.task, node_id)
        tmp = final.with_name(f"{TMP_PREFIX}{final.name}")
        return cls(claim.task, list(body.mini_batches), tmp)

    def remaining(self) -> list[MiniBatch]:
        return [mb for mb in self.mini_batches if mb.index not in self.outcomes]

    @property
    def complete(self) -> bool:
        return len(self.outcomes) == len(self.mini_batches)

    @property
    def started(self) -> bool:
        return bool(self.outcomes)


def finish_task(layout: JobLayout, node_id: str, task: RunningTask, *, durable: bool) -> bool:
    """Publish the task's result file and commit the claim; False if the claim was lost.

    Mini-batches without an outcome (a drain) are simply absent from the metadata;
    the leader runs them again.

    Raises:
        OSError: the result file could not be written (the claim stays: the task is
            retried by this node's reconciliation or requeued if the node dies).
    """
    outcomes = tuple(
        task.outcomes[mb.index] for mb in task.mini_batches if mb.index in task.outcomes
    )
    meta = ResultMeta(task.task.name, node_id, outcomes).encode()
    fd = os.open(task.out_tmp, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
    try:
        write_all(fd, meta)
    finally:
        os.close(fd)
    publish(task.out_tmp, layout.result(task.task, node_id), durable=durable)
    return commit(layout, node_id, task.task)


def hand_back(layout: JobLayout, node_id: str, task: RunningTask) -> bool:
    """Give an unstarted task back to the leader (drain, or this node gave up on the job)."""
    task.out_tmp.unlink(missing_ok=True)
    return give_back(layout, node_id, task.task)
