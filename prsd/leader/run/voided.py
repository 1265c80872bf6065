"""Tasks an agent found unreadable: their mini-batches are planned again, not lost.

Invariant: a task file an agent cannot parse (a torn write after a crash, a disk
error, a hand edit) is moved by that agent to ``tasks/void/<task>.<node>`` and kept
as evidence. While that task is outstanding in the leader's book, the leader settles
it as "requeued" (the mini-batches' fault it was not: no retry is used up) and writes
its mini-batches again under the next attempt, rebuilt from the input by the same
deterministic split that planned them first. Exactly-once holds as for any requeue:
the voided name can never commit (its claim file is gone), and the new attempt is a
name no earlier task used.

Errors: :meth:`VoidReplans.replan_voided` raises InputError when the input no longer yields
those mini-batches (it changed while the job ran).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol

from prsd.errors import InputError
from prsd.leader.plan.planstream import open_plan
from prsd.leader.run.joblogs import AttemptRow
from prsd.leader.run.tasks import contiguous_runs
from prsd.spool.layout import mb_id
from prsd.wire.records import REQUEUED, Outcome

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.jobspec import JobSpec
    from prsd.leader.run.joblogs import JobLogs
    from prsd.leader.run.ledger import Ledger
    from prsd.leader.run.tasks import OutTask, TaskTable
    from prsd.spool.jobfolder import JobFiles
    from prsd.spool.layout import JobLayout
    from prsd.wire.records import MiniBatch


class ReplanHost(Protocol):
    """What of the job's driver replanning reads and writes (prsd.leader.run.job)."""

    layout: JobLayout
    folder: JobFiles
    spec: JobSpec
    table: TaskTable
    ledger: Ledger
    logs: JobLogs
    fence: Callable[[], None]

    def queue_again(self, mbs: list[MiniBatch]) -> None: ...

    def replan_voided(self, out: OutTask, node: str) -> None: ...


REPLAN_CHUNK = 256
REPLAN_WAIT_S = 0.5
_VOID_NAME = re.compile(r"^(\d+\.a\d+\.e\d+)\.(.+)$")


def voided_tasks(names: list[str], outstanding: set[str]) -> list[tuple[str, str]]:
    """(task name, node) of void entries whose task is still outstanding, in order."""
    found = []
    for name in sorted(names):
        m = _VOID_NAME.match(name)
        if m is not None and m.group(1) in outstanding:
            found.append((m.group(1), m.group(2)))
    return found


class VoidReplans:
    """The driver's replanning of unreadable tasks, mixed into
    :class:`prsd.leader.run.job.JobDriver`."""

    def scan_void(self: ReplanHost) -> int:
        """Plan again the mini-batches of every outstanding task found in ``void/``."""
        found = voided_tasks(self.folder.void_names(), set(self.table.outstanding))
        for task, node in found:
            self.replan_voided(self.table.outstanding[task], node)
        return len(found)

    def replan_voided(self: ReplanHost, out: OutTask, node: str) -> None:
        """Settle ``out`` as requeued and queue its mini-batches as their next attempt."""
        self.fence()
        mbs = plan_again(self.spec, self.layout, set(out.indices))
        self.table.drop(out.task.name)
        rows = []
        for i in out.indices:
            lost = Outcome(index=i, status=REQUEUED, error="task file unreadable; planned again")
            rows.append(AttemptRow(lost, out.task.attempt, node))
            self.ledger.requeue(i)
        self.logs.attempts(rows)
        for run in contiguous_runs(sorted(mbs)):
            self.queue_again([mbs[i] for i in run])
        first, last = min(out.indices), max(out.indices)
        self.logs.master(
            f"task {out.task.name} was unreadable on node {node} (kept in tasks/void/); "
            f"mini-batches {mb_id(first)}..{mb_id(last)} are planned again"
        )


def plan_again(spec: JobSpec, layout: JobLayout, wanted: set[int]) -> dict[int, MiniBatch]:
    """The wanted mini-batches, planned again by the job's planner (its owner's ids).

    Waits for them: the planner ends, fails, or goes silent within its bound.
    """
    found: dict[int, MiniBatch] = {}
    top = max(wanted)
    source = open_plan(spec, layout, lambda path, why: None)
    try:
        reached = False
        while not reached and not source.ended:
            for mb in source.pull(REPLAN_CHUNK, REPLAN_WAIT_S):
                if mb.index in wanted:
                    found[mb.index] = mb
                reached = reached or mb.index >= top
    finally:
        source.close()
    if len(found) != len(wanted):
        raise InputError(
            f"{spec.input.name} no longer yields mini-batches "
            f"{mb_id(min(wanted))}..{mb_id(top)} of an unreadable task: the input changed "
            "while the job ran"
        )
    return found
