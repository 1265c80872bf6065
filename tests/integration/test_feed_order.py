"""An agent's feed takes pending tasks about in the order the leader wrote them.

The leader shrinks a job's last tasks so that none keeps a worker busy while the rest
wait; that holds only if the big tasks written earlier are not left for the end. A
feed that started each listing at a place of its own and tried the older names last
(node ``a0``: the 54th of 64) ran a W9 job's first big tasks after its small tail
tasks. Real files and renames: one feed claims every task of a listing in turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from prsd.spool.claim import CLAIM_SPREAD, prepare_node
from prsd.spool.layout import JobLayout
from tests.feedkit import files_feed, write_pending

if TYPE_CHECKING:
    from pathlib import Path

TASKS = 40


def test_a_lone_feed_takes_its_tasks_oldest_first_after_its_own_first(tmp_path: Path) -> None:
    layout = JobLayout(tmp_path / "spool" / "jobs" / "order-1", "order-1")
    prepare_node(layout, "a0")
    feed = files_feed(layout, "a0", poll_s=60)
    write_pending(layout, TASKS)

    async def main() -> list[int]:
        got = []
        with anyio.fail_after(20):
            for _ in range(TASKS):
                task = await feed.get()
                assert task is not None
                got.append(task.task.first_mb)
        return got

    firsts = anyio.run(main)
    assert sorted(firsts) == list(range(TASKS))
    assert firsts[0] < CLAIM_SPREAD
    # After its own first name, every task in the order written: the oldest tasks are
    # not left for the end of the job.
    assert firsts[1:] == [i for i in range(TASKS) if i != firsts[0]]


def test_two_feeds_listing_together_begin_with_different_tasks(tmp_path: Path) -> None:
    layout = JobLayout(tmp_path / "spool" / "jobs" / "order-2", "order-2")
    feeds = []
    for node in ("a0", "a1"):
        prepare_node(layout, node)
        feeds.append(files_feed(layout, node, poll_s=60))
    write_pending(layout, TASKS)

    async def main() -> list[int]:
        with anyio.fail_after(20):
            tasks = [await feed.get() for feed in feeds]
        return [t.task.first_mb for t in tasks if t is not None]

    firsts = anyio.run(main)
    assert len(set(firsts)) == 2, firsts
