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
from collections import deque
from typing import TYPE_CHECKING

from prsd.errors import InputError
from prsd.leader.packing import advise, peek_for
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
        self._ahead: deque[MiniBatch] = deque()  # read by :meth:`remaining_within`
        self._ended = False

    def take(self, n: int) -> list[MiniBatch]:
        """Up to ``n`` next mini-batches (fewer: the plan is at its end)."""
        out: list[MiniBatch] = []
        while self._ahead and len(out) < n:
            out.append(self._ahead.popleft())
        if len(out) == n or self._ended:
            return out
        try:
            for mb in self._mbs:
                out.append(mb)
                if len(out) == n:
                    break
        except OSError as exc:
            raise InputError(f"cannot read input {self.spec.input.name}: {exc}") from exc
        return out

    def remaining_within(self, limit: int) -> int | None:
        """How many mini-batches are left, if at most ``limit``; None: more than that."""
        if limit <= 0:
            return None
        try:
            while not self._ended and len(self._ahead) < limit + 1:
                mb = next(self._mbs, None)
                if mb is None:
                    self._ended = True
                else:
                    self._ahead.append(mb)
        except OSError as exc:
            raise InputError(f"cannot read input {self.spec.input.name}: {exc}") from exc
        return len(self._ahead) if self._ended else None

    def fast_forward(
        self, top: int, in_files: set[int], plan: Callable[[MiniBatch], None]
    ) -> dict[int, MiniBatch]:
        """Plan mini-batches 0..top again without writing them; those in no task file."""
        missing: dict[int, MiniBatch] = {}
        if top < 0:
            return missing
        assert not self._ahead, "fast_forward comes before any look-ahead"
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


def split_step(
    plan: Plan, table: TaskTable, book: JobBook, logs: JobLogs, now: float, slots: int = 1
) -> bool:
    """Write the next tasks, within a time budget; True: stopped at the budget, behind.

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
