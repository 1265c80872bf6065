"""A task feed whose leftover names were all taken lists ``pending/`` again at once.

An agent keeps the names of its last listing and tries them in turn. When other
agents claimed every one of them meanwhile, the ring that woke it was for tasks
written since, which only a new listing shows: it must list again then, not wait out
its poll interval with a task pending (a worker slot idle for half a second).
Real files and renames; two feeds on one spool, as two agents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from prsd.spool.claim import prepare_node
from prsd.spool.layout import JobLayout, TaskName
from prsd.spool.taskrecords import TaskBody
from prsd.wire.records import MiniBatch
from tests.feedkit import files_feed

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.agent.feed import TaskFeed


def _feed(layout: JobLayout, node_id: str) -> TaskFeed:
    prepare_node(layout, node_id)
    # A poll interval far longer than the test: only a listing can find the new task.
    return files_feed(layout, node_id, poll_s=60)


def _write(layout: JobLayout, task: TaskName) -> None:
    body = TaskBody("relist-1", "files", (MiniBatch(task.first_mb, [f"f{task.first_mb}"], 1),))
    path = layout.pending_task(task)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body.encode())


def test_a_feed_whose_listed_names_were_taken_lists_again(tmp_path: Path) -> None:
    layout = JobLayout(tmp_path / "spool" / "jobs" / "relist-1", "relist-1")
    this, other = _feed(layout, "n1"), _feed(layout, "n2")
    for first_mb in range(4):
        _write(layout, TaskName(first_mb, 1, 1))

    async def main() -> list[int]:
        got = []
        with anyio.fail_after(5):
            got.append(await this.get())  # lists four, claims one, keeps three names
            got.extend([await other.get() for _ in range(3)])  # another agent takes those
            _write(layout, TaskName(4, 1, 1))  # the leader writes one more
            got.append(await this.get())  # found by a new listing, no poll waited out
        return [task.task.first_mb for task in got if task is not None]

    firsts = anyio.run(main)
    assert sorted(firsts) == [0, 1, 2, 3, 4]
    assert firsts[-1] == 4
