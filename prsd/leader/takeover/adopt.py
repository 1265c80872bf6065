"""Adopting a job's task files after a take-over: nothing redone, nothing lost.

Given the settled :class:`~prsd.leader.takeover.takeover.Look`, live tasks (pending, claimed,
returned) become outstanding again; committed tasks are ingested oldest attempt
first; mini-batches that no task file holds (an orphan of a leader that died between
planning and writing) are planned again, as are the retries still queued.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.leader.run.tasks import OutTask
from prsd.leader.takeover.resume import done_order

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.leader.run.results import Results
    from prsd.leader.run.tasks import TaskTable
    from prsd.leader.takeover.takeover import Look
    from prsd.wire.records import MiniBatch


def in_task_files(look: Look) -> set[int]:
    """The mini-batches some live or committed task file of the look holds."""
    return {mb.index for _, b in look.live + look.done for mb in b.mini_batches}


def adopt(
    look: Look,
    table: TaskTable,
    results: Results,
    orphans: dict[int, MiniBatch],
    retries: list[list[MiniBatch]],
    ingest: Callable[[str, str], None],
) -> list[list[MiniBatch]]:
    """Take the look's tasks into ``table`` and the book; the mini-batches to write again.

    ``orphans``: the mini-batches up to the look's highest that no task file holds
    (found by fast-forwarding the plan, which also planned them in the ledger).
    """
    ledger = results.book.ledger
    live, done = look.live, look.done
    covered: set[int] = set()
    for found, body in live:
        indices = tuple(mb.index for mb in body.mini_batches)
        table.ensure_shard(found.task.shard)
        table.adopt(OutTask(found.task, indices))
        covered.update(indices)
    results.resuming = True
    for found, body in sorted(done, key=lambda fb: done_order(fb[0])):
        name = found.task.name
        if name in table.ingested:
            results.check_duplicate(name, found.node)
            continue
        table.adopt(OutTask(found.task, tuple(mb.index for mb in body.mini_batches)))
        ingest(name, found.node)
    results.resuming = False
    for found, body in live:
        for mb in body.mini_batches:
            results.current(mb.index, found.task.attempt)
    again = {mb.index: mb for group in retries for mb in group}
    again.update(orphans)
    return [[mb] for i, mb in sorted(again.items()) if i not in covered and not ledger.is_final(i)]
