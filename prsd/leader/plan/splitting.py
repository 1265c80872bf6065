"""The job's plan of mini-batches, read a bounded number at a time.

The plan is the deterministic split of the job's input (:mod:`prsd.inputsplit.planner`,
a retry's selection applied by :mod:`prsd.leader.rerun.retryjob`), made by the job's input
planner (:mod:`prsd.leader.plan.planstream`: the owner's process, or this one); the driver
takes the next few mini-batches per step, those that have arrived within the step's
budget, and a leader taking a job over fast-forwards through those the earlier leader
already wrote, a step at a time.

Errors: :class:`~prsd.errors.InputError` when the input cannot be read, or yields
fewer mini-batches than the job's task files hold (it changed while the job ran).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from prsd.errors import InputError
from prsd.leader.plan.packing import advise, peek_for
from prsd.leader.plan.planstream import open_plan

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.jobspec import JobSpec
    from prsd.leader.plan.planstream import PlanSource
    from prsd.leader.run.book import JobBook
    from prsd.leader.run.joblogs import JobLogs
    from prsd.leader.run.tasks import TaskTable
    from prsd.spool.layout import JobLayout
    from prsd.wire.records import MiniBatch

MAX_TASKS_PER_STEP = 256
SPLIT_BUDGET_S = 0.05
# Until the job's first mini-batch is planned, and for at most this long after the job
# began, a step that found nothing yet says "behind": the leader steps again at once
# (each step waits up to SPLIT_BUDGET_S on the planner) instead of at its next tick,
# so the first task is written as soon as the planner sends it.
FIRST_TASK_EAGER_S = 5.0


class Plan:
    """The job's mini-batches in index order, consumed as the split goes on."""

    def __init__(
        self,
        spec: JobSpec,
        layout: JobLayout,
        on_skip: Callable[[str, str], None],
        source: PlanSource | None = None,
    ) -> None:
        self.spec = spec
        self._source = source if source is not None else open_plan(spec, layout, on_skip)
        self._ahead: list[MiniBatch] = []  # read by :meth:`remaining_within`
        self._forward: _FastForward | None = None

    @property
    def ended(self) -> bool:
        """Every mini-batch of the plan has been taken."""
        return self._source.ended and not self._ahead

    def take(self, n: int, wait_s: float = 0.0) -> list[MiniBatch]:
        """Up to ``n`` next mini-batches: fewer when the rest has not arrived within
        ``wait_s`` (see :attr:`ended`)."""
        out = self._ahead[:n]
        del self._ahead[:n]
        if len(out) < n:
            out += self._source.pull(n - len(out), wait_s)
        return out

    def remaining_within(self, limit: int) -> int | None:
        """How many mini-batches are left, if at most ``limit``; None: more than that
        (or not known yet: the planner has not sent them)."""
        if limit <= 0:
            return None
        if len(self._ahead) < limit + 1 and not self._source.ended:
            self._ahead += self._source.pull(limit + 1 - len(self._ahead), 0.0)
        return len(self._ahead) if self._source.ended else None

    def fast_forward(
        self, top: int, in_files: set[int], plan: Callable[[MiniBatch], None], wait_s: float = 0.0
    ) -> dict[int, MiniBatch] | None:
        """Plan mini-batches 0..top again without writing them; those in no task file.

        None: the planner has not got that far yet (call again with the same arguments).

        Raises:
            InputError: the plan ends before ``top``: the input changed while the job ran.
        """
        if top < 0:
            return {}
        assert not self._ahead, "fast_forward comes before any look-ahead"
        forward = self._forward = self._forward or _FastForward(top)
        deadline = time.perf_counter() + wait_s
        while True:
            mbs = self._source.pull(MAX_TASKS_PER_STEP, max(deadline - time.perf_counter(), 0))
            for i, mb in enumerate(mbs):
                plan(mb)
                if mb.index not in in_files:
                    forward.missing[mb.index] = mb
                if mb.index >= top:
                    self._ahead = mbs[i + 1 :]  # beyond the task files: the split goes on there
                    self._forward = None
                    return forward.missing
            if self._source.ended:
                raise InputError(
                    f"{self.spec.input.name} now yields fewer mini-batches than the job's task "
                    f"files hold ({top + 1}): the input changed while the job ran"
                )
            if time.perf_counter() >= deadline:
                return None

    def close(self) -> None:
        """Stop planning (the job ended): no planner process is left."""
        self._source.close()


class _FastForward:
    """A fast-forward under way: its target and the orphans found so far."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.missing: dict[int, MiniBatch] = {}


def split_step(
    plan: Plan, table: TaskTable, book: JobBook, logs: JobLogs, now: float, slots: int = 1
) -> bool:
    """Write the next tasks, within a time budget; True: stopped at the budget, behind
    (or still awaiting the job's first mini-batch, see :data:`FIRST_TASK_EAGER_S`).

    ``slots``: the worker slots serving the job, for the size of the tail's tasks.
    """
    deadline = time.perf_counter() + SPLIT_BUDGET_S
    for _ in range(MAX_TASKS_PER_STEP):
        advice = advise(
            measured_mb_s=book.measured_mb_s,
            unclaimed_tasks=len(table),
            waited_s=now - book.started,
            remaining=plan.remaining_within(peek_for(book.measured_mb_s, slots)),
            slots=slots,
        )
        if not advice.may_write:
            return False  # far enough ahead of the workers
        mbs = plan.take(advice.per_task, max(deadline - time.perf_counter(), 0.0))
        if not mbs:
            if plan.ended:
                _split_finished(plan, table, book, logs, now)
                return False
            # nothing more has arrived yet: the next round looks again (at once while
            # the first mini-batch is awaited)
            return book.first_task_at is None and now - book.started < FIRST_TASK_EAGER_S
        for mb in mbs:
            book.plan(mb, now)
        table.write(mbs, 1)
        if time.perf_counter() > deadline:
            return True
    return True


def _split_finished(plan: Plan, table: TaskTable, book: JobBook, logs: JobLogs, now: float) -> None:
    book.split_finished()
    total = len(book.ledger)
    logs.progress(
        f"Scheduling finished. Scheduled {total} mini batches in "
        f"{now - book.started:.0f} seconds. There are {table.written} tasks with "
        f"{book.ledger.planned_items()} items."
    )
    if total == 0:
        spec = plan.spec
        raise InputError(
            f"{spec.input.name} ({', '.join(spec.input.paths)}) holds nothing to process"
        )
