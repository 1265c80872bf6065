"""How many mini-batches go into one task file: a pure policy.

A task file is the unit of claiming. Each costs a fixed amount of spool work (a
write, a claim rename, a result file, a commit rename, a read by the leader), so
tiny mini-batches are packed several to a task; large ones travel alone so the
tail of a job stays short and a dead node loses little. Until the first results
tell how long a mini-batch takes, tasks hold one mini-batch and the split runs
only a little ahead of the workers.
"""

from __future__ import annotations

from dataclasses import dataclass

TARGET_TASK_S = 0.05
"""Aim for tasks of about this much run time: per-task overhead is then ~1-2 %."""

MAX_PER_TASK = 128
UNMEASURED_LOOKAHEAD = 64
"""Tasks written ahead of the workers before any mini-batch has been measured."""


@dataclass(frozen=True)
class PackingAdvice:
    per_task: int  # mini-batches in the next task
    may_write: bool  # False: wait for measurements before splitting further


def advise(
    *, measured_mb_s: float | None, unclaimed_tasks: int, waited_s: float, max_wait_s: float = 2.0
) -> PackingAdvice:
    """Decide the size of the next task.

    Args:
        measured_mb_s: mean seconds per mini-batch seen so far (None: no result yet).
        unclaimed_tasks: tasks written and not yet picked up.
        waited_s: how long the split has been waiting for a first measurement.
        max_wait_s: after this long unmeasured, split on with one mini-batch per task.
    """
    if measured_mb_s is None:
        if unclaimed_tasks >= UNMEASURED_LOOKAHEAD and waited_s < max_wait_s:
            return PackingAdvice(1, False)
        return PackingAdvice(1, True)
    per_task = int(TARGET_TASK_S / max(measured_mb_s, 1e-6))
    return PackingAdvice(max(1, min(MAX_PER_TASK, per_task)), True)


def ewma(previous: float | None, sample: float, weight: float = 0.2) -> float:
    """Exponentially weighted mean of per-mini-batch durations."""
    if previous is None:
        return sample
    return previous + weight * (sample - previous)
