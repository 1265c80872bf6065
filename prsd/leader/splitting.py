"""The job's plan of mini-batches, read a bounded number at a time.

The plan is the deterministic split of the job's input (:mod:`prsd.leader.planner`,
a retry's selection applied by :mod:`prsd.leader.rerun`); the driver takes the next
few mini-batches per step, and a leader taking a job over fast-forwards through
those the earlier leader already wrote.

Errors: :class:`~prsd.errors.InputError` when the input cannot be read, or yields
fewer mini-batches than the job's task files hold (it changed while the job ran).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from prsd.errors import InputError
from prsd.leader.packing import advise
from prsd.leader.planner import plan_mini_batches
from prsd.leader.rerun import plan_retry

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from prsd.jobspec import JobSpec
    from prsd.leader.book import JobBook
    from prsd.leader.joblogs import JobLogs
    from prsd.leader.tasks import TaskTable
    from prsd.storage.layout import JobLayout
    from prsd.storage.records import MiniBatch

MAX_TASKS_PER_STEP = 256
SPLIT_BUDGET_S = 0.05


class Plan:
    """The job's mini-batches in index order, consumed as the split goes on."""

    def __init__(
        self, spec: JobSpec, layout: JobLayout, on_skip: Callable[[str, str], None]
    ) -> None:
        self.spec = spec
        self._mbs: Iterator[MiniBatch] = plan_retry(
            layout, plan_mini_batches(spec, on_skip, job_folder=layout.root)
        )

    def take(self, n: int) -> list[MiniBatch]:
        """Up to ``n`` next mini-batches (fewer: the plan is at its end)."""
        out: list[MiniBatch] = []
        try:
            for mb in self._mbs:
                out.append(mb)
                if len(out) == n:
                    break
        except OSError as exc:
            raise InputError(f"cannot read input {self.spec.input.name}: {exc}") from exc
        return out

    def fast_forward(
        self, top: int, in_files: set[int], plan: Callable[[MiniBatch], None]
    ) -> dict[int, MiniBatch]:
        """Plan mini-batches 0..top again without writing them; those in no task file."""
        missing: dict[int, MiniBatch] = {}
        if top < 0:
            return missing
        for mb in self._mbs:
            plan(mb)
            if mb.index not in in_files:
                missing[mb.index] = mb
            if mb.index >= top:
                return missing
        raise InputError(
            f"{self.spec.input.name} now yields fewer mini-batches than the job's task files "
            f"hold ({top + 1}): the input changed while the job ran"
        )


def split_step(plan: Plan, table: TaskTable, book: JobBook, logs: JobLogs, now: float) -> bool:
    """Write the next tasks, within a time budget; True: stopped at the budget, behind."""
    deadline = time.perf_counter() + SPLIT_BUDGET_S
    for _ in range(MAX_TASKS_PER_STEP):
        advice = advise(
            measured_mb_s=book.measured_mb_s,
            unclaimed_tasks=len(table),
            waited_s=now - book.started,
        )
        if not advice.may_write:
            return False  # far enough ahead of the workers
        mbs = plan.take(advice.per_task)
        if not mbs:
            _split_finished(plan, table, book, logs, now)
            return False
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
