"""The inotify doorbell of a job's pending/ tree (prsd.spool.arrivalbell): real folders,
real renames, real events."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from prsd.spool.arrivalbell import ring_on_arrivals
from prsd.spool.watch import Doorbell

if TYPE_CHECKING:
    from pathlib import Path


def test_arrivals_in_pending_and_new_shards_ring_and_departures_do_not(tmp_path: Path) -> None:
    pending, claimed, outside = tmp_path / "pending", tmp_path / "claimed", tmp_path / "staging"
    for folder in (pending, claimed, outside):
        folder.mkdir()
    (pending / "000000").mkdir()  # a shard made before the watch
    rings: list[str] = []

    async def main() -> None:
        bell = Doorbell()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ring_on_arrivals, pending, bell)
            await anyio.sleep(0.1)  # the watch is in place
            (outside / "t1").write_text("x")
            rings.append(f"elsewhere {await bell.wait(0.3)}")
            (pending / "000000" / ".t1.tmp").write_text("x")  # written aside: no one wakes
            rings.append(f"written aside {await bell.wait(0.3)}")
            (pending / "000000" / ".t1.tmp").unlink()
            (outside / "t1").rename(pending / "000000" / "t1")  # a task published
            rings.append(f"published {await bell.wait(10)}")
            (pending / "000000" / "t1").rename(claimed / "t1")  # a claim: no one is woken
            rings.append(f"claimed {await bell.wait(0.3)}")
            (pending / "000001").mkdir()  # a new shard rings, and is watched from now on
            rings.append(f"new shard {await bell.wait(10)}")
            (outside / "t2").write_text("x")
            (outside / "t2").rename(pending / "000001" / "t2")
            rings.append(f"in the new shard {await bell.wait(10)}")
            (claimed / "t1").rename(pending / "000000" / "t1")  # a task handed back
            rings.append(f"handed back {await bell.wait(10)}")
            (pending / "000001" / "t2").unlink()
            rings.append(f"removed {await bell.wait(0.3)}")
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert rings == [
        "elsewhere False",
        "written aside False",
        "published True",
        "claimed False",
        "new shard True",
        "in the new shard True",
        "handed back True",
        "removed False",
    ]


def test_a_pending_folder_that_cannot_be_watched_ends_the_watch_at_once(tmp_path: Path) -> None:
    async def main() -> None:
        with anyio.fail_after(5):
            await ring_on_arrivals(tmp_path / "missing", Doorbell())

    anyio.run(main)
