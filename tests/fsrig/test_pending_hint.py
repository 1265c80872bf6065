"""The leader's hint of pending task names, on separate FUSE mounts (the sshfs rig).

An agent on its own mount lists ``pending/`` from the mount's directory cache (20 s on
the rig), so a task written since is invisible to it; the hint, opened by name, is
read from the server, and the agent claims the task at once.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio

from prsd.spool.claim import list_pending, prepare_node
from prsd.spool.layout import JobLayout, TaskName
from prsd.spool.pendinghint import HintWriter
from prsd.spool.taskrecords import TaskBody
from prsd.wire.records import MiniBatch
from tests.feedkit import files_feed
from tests.fsrig.rig import EXPORT, fresh_dir, mounts

if TYPE_CHECKING:
    from prsd.agent.feed import TaskFeed


def _feed(layout: JobLayout, node_id: str) -> TaskFeed:
    return files_feed(layout, node_id)


def test_an_agent_whose_listing_is_stale_claims_the_hinted_task_at_once() -> None:
    anyio.run(_stale_listing_then_hint)


async def _stale_listing_then_hint() -> None:
    mount = mounts(1)[0]
    name = fresh_dir()
    server = JobLayout(EXPORT / name / "spool" / "jobs" / "hint-1", "hint-1")
    seen = JobLayout(mount / name / "spool" / "jobs" / "hint-1", "hint-1")
    first, second = TaskName(0, 1, 1), TaskName(1, 1, 1)
    server.pending_task(first).parent.mkdir(parents=True)
    prepare_node(seen, "n1")
    feed = _feed(seen, "n1")
    assert list_pending(seen, 64) == []  # the mount caches pending/ (and its shard) empty

    # The leader, on the server's side: two task files, and the hint naming the second.
    for task in (first, second):
        body = TaskBody("hint-1", "files", (MiniBatch(task.first_mb, [f"f{task.first_mb}"], 1),))
        server.pending_task(task).write_bytes(body.encode())
    assert HintWriter(server).publish([second.name], time.monotonic())

    began = time.monotonic()
    assert list_pending(seen, 64) == [], (
        "the mount's listing already shows the new tasks: the rig's directory cache is "
        "off, and this test would prove nothing"
    )
    claimed = await anyio.to_thread.run_sync(feed._claim_next)
    assert claimed is not None, "the hinted task was not claimed"
    assert claimed.task == second
    assert [mb.index for mb in claimed.mini_batches] == [1]
    assert not server.pending_task(second).exists()  # the rename reached the server
    assert (server.claimed_dir("n1") / second.name).exists()
    assert time.monotonic() - began < 10  # long before the 20 s cache would have let go


def test_an_agent_on_a_network_mount_claims_nothing_ahead() -> None:
    """Claims ahead are for local disks: on a mount a listing is stale and every lost
    race a round trip, so the feed claims only when a worker asks."""
    mount = mounts(1)[0]
    name = fresh_dir()
    server = JobLayout(EXPORT / name / "spool" / "jobs" / "ahead-1", "ahead-1")
    seen = JobLayout(mount / name / "spool" / "jobs" / "ahead-1", "ahead-1")
    for first_mb in range(4):
        task = TaskName(first_mb, 1, 1)
        body = TaskBody("ahead-1", "files", (MiniBatch(first_mb, [f"f{first_mb}"], 1),))
        server.pending_task(task).parent.mkdir(parents=True, exist_ok=True)
        server.pending_task(task).write_bytes(body.encode())
    prepare_node(seen, "n1")
    prepare_node(server, "n2")
    feed = _feed(seen, "n1")
    local = files_feed(server, "n2")  # the same job on the server's own disk

    async def main() -> None:
        with anyio.fail_after(60):
            assert await feed.get() is not None  # lists four, claims one
            await feed.claim_ahead()
            assert await local.get() is not None
            await local.claim_ahead()

    anyio.run(main)
    assert not feed.claims_ahead and not feed.ahead
    assert local.claims_ahead and len(local.ahead) == 1
