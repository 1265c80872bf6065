"""How many mini-batches go into one task file: a pure policy.

A task file is the unit of claiming. Each costs a fixed amount of spool work (a
write, a claim rename, a result file, a commit rename, a read by the leader) and
CPU in the leader and the agent, so mini-batches are packed several to a task,
aiming at about ``TARGET_TASK_S`` of run time per task. Until the first results
tell how long a mini-batch takes, tasks hold one mini-batch and the split runs
only a little ahead of the workers: ``UNMEASURED_PER_SLOT`` tasks per worker slot
(at least ``UNMEASURED_MIN``, at most ``UNMEASURED_LOOKAHEAD``), each one a task
whose fixed cost is paid for a single mini-batch.

Large tasks would make a long tail (the last tasks keep a few slots busy while the
rest wait), so near the end of the plan tasks shrink: once the mini-batches still to
be written are known to be few, a task holds at most ``remaining / (GUIDED_SHARE *
slots)`` of them (guided self-scheduling), down to about ``TAIL_MIN_TASK_S`` of
work (one mini-batch when a mini-batch takes that long): a tail task shorter than
that would cost more to coordinate than the balance it buys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TARGET_TASK_S = 0.5
"""Aim for tasks of about this much run time: the per-task cost (a few ms of CPU and
file-system work in leader and agent together) is then about 1 % of the work."""

MAX_PER_TASK = 128
UNMEASURED_LOOKAHEAD = 64
"""The most tasks written ahead of the workers before any mini-batch has been measured."""

UNMEASURED_PER_SLOT = 2
"""Unmeasured, the split stays this many tasks per worker slot ahead (one running, one
waiting), never fewer than ``UNMEASURED_MIN``."""

UNMEASURED_MIN = 8

TAIL_MIN_TASK_S = 0.1
"""Tail tasks shrink no further than this much work: a task costs a few ms of CPU in
the leader and the agent together, a few per cent of it."""

GUIDED_SHARE = 2
"""At the tail, a task holds at most 1 / (GUIDED_SHARE * slots) of what remains."""

MAX_PEEK = 50_000
"""The most mini-batches the split reads ahead to learn whether the tail is near."""


@dataclass(frozen=True)
class PackingAdvice:
    per_task: int  # mini-batches in the next task
    may_write: bool  # False: wait for measurements before splitting further


def advise(
    *,
    measured_mb_s: float | None,
    unclaimed_tasks: int,
    waited_s: float,
    max_wait_s: float = 2.0,
    remaining: int | None = None,
    slots: int = 1,
) -> PackingAdvice:
    """Decide the size of the next task.

    Args:
        measured_mb_s: mean seconds per mini-batch seen so far (None: no result yet).
        unclaimed_tasks: tasks written and not yet picked up.
        waited_s: how long the split has been waiting for a first measurement.
        max_wait_s: after this long unmeasured, split on with one mini-batch per task.
        remaining: mini-batches of the plan not yet written, when known (None: more
            than the split looked ahead, see :func:`peek_for`).
        slots: worker slots serving the job across the fleet (at least 1).
    """
    if measured_mb_s is None:
        if unclaimed_tasks >= unmeasured_lookahead(slots) and waited_s < max_wait_s:
            return PackingAdvice(1, False)
        return PackingAdvice(1, True)
    per_task = _by_time(measured_mb_s)
    if remaining is not None:
        guided = math.ceil(remaining / (GUIDED_SHARE * max(1, slots)))
        floor = min(per_task, _by_time(measured_mb_s, TAIL_MIN_TASK_S))
        per_task = max(1, min(per_task, max(guided, floor), remaining))
    return PackingAdvice(per_task, True)


def unmeasured_lookahead(slots: int) -> int:
    """How many tasks (outstanding: waiting or running) the split keeps ahead of
    ``slots`` worker slots before any mini-batch has been measured."""
    return min(UNMEASURED_LOOKAHEAD, max(UNMEASURED_MIN, UNMEASURED_PER_SLOT * max(1, slots)))


def peek_for(measured_mb_s: float | None, slots: int) -> int:
    """How far the split must look ahead to know whether the tail rule applies.

    The tail rule caps a task below its time target only when fewer than
    ``per_task * GUIDED_SHARE * slots`` mini-batches remain; 0 before any measurement.
    """
    if measured_mb_s is None:
        return 0
    return min(MAX_PEEK, _by_time(measured_mb_s) * GUIDED_SHARE * max(1, slots))


def _by_time(measured_mb_s: float, task_s: float = TARGET_TASK_S) -> int:
    """Mini-batches in a task of about ``task_s`` (1 to ``MAX_PER_TASK``)."""
    return max(1, min(MAX_PER_TASK, int(task_s / max(measured_mb_s, 1e-6))))


def fleet_slots(node_slots: list[int], concurrency: int | None, instance_count: int | None) -> int:
    """Worker slots a job can use: per live node its slots (capped by the job's
    ``max_concurrency_per_instance``), on at most ``instance_count`` nodes; at least 1."""
    per_node = sorted((min(s, concurrency) if concurrency else s for s in node_slots), reverse=True)
    if instance_count:
        per_node = per_node[:instance_count]
    return max(1, sum(per_node))


def ewma(previous: float | None, sample: float, weight: float = 0.2) -> float:
    """Exponentially weighted mean of per-mini-batch durations."""
    if previous is None:
        return sample
    return previous + weight * (sample - previous)
