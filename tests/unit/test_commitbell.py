"""The leader's inotify doorbell of the jobs it drives (prsd.spool.commitbell): real
folders, real renames, real events."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from prsd.spool.commitbell import CommitWatch
from prsd.spool.layout import SpoolLayout
from prsd.spool.watch import Doorbell

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import JobLayout


def _land(claimed: Path, name: str, dest: Path) -> None:
    """A task claimed as ``name`` and renamed to ``dest`` (as an agent commits or hands back)."""
    (claimed / name).write_text("x")
    (claimed / name).rename(dest)


@dataclass(frozen=True)
class Driver:
    """What the watch reads of a leader's job driver."""

    layout: JobLayout


def _job(spool: SpoolLayout, job_id: str) -> JobLayout:
    job = spool.job(job_id)
    for folder in (job.done / "000000", job.returned, job.void, job.claimed / "a0", job.results):
        folder.mkdir(parents=True)
    return job


def test_commits_and_hand_backs_of_a_followed_job_ring_and_nothing_else_does(
    tmp_path: Path,
) -> None:
    spool = SpoolLayout(tmp_path / "spool")
    job, other = _job(spool, "j1"), _job(spool, "j2")
    claimed = job.claimed / "a0"
    rings: list[str] = []

    async def main() -> None:
        watch = CommitWatch.open()
        assert watch is not None, "inotify is missing on this Linux machine"
        bell = Doorbell()
        try:
            watch.follow({"j1": Driver(job)})
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch.ring, bell)
                await anyio.sleep(0.1)  # the reader waits on the descriptor

                async def ring_after(what: str, timeout_s: float) -> None:
                    rings.append(f"{what} {await bell.wait(timeout_s)}")

                for i in range(3):  # a worker's result, appended to and renamed: no ring
                    with (job.results / ".tmp-1.res").open("a") as f:
                        f.write(f"line {i}\n")
                (job.results / ".tmp-1.res").rename(job.results / "1.res")
                (job.root / "status.json").write_text("{}")
                await ring_after("results and status", 0.3)
                (claimed / "t1").write_text("x")  # a claim lands in claimed/: no ring
                await ring_after("claimed", 0.3)
                (claimed / "t1").rename(job.done / "000000" / "t1.a0")
                await ring_after("committed", 10)
                (job.done / "000001").mkdir()  # a new shard rings, and is watched from now on
                await ring_after("new shard", 10)
                _land(claimed, "t2", job.done / "000001" / "t2.a0")
                await ring_after("committed in the new shard", 10)
                _land(claimed, "t3", job.returned / "t3")
                await ring_after("handed back", 10)
                _land(claimed, "t4", job.void / "t4.a0")
                await ring_after("void", 10)
                _land(other.claimed / "a0", "t1", other.done / "000000" / "t1.a0")  # not followed
                await ring_after("another job", 0.3)
                watch.follow({"j2": Driver(other)})  # the leader drives j2 now, no longer j1
                await bell.wait(0.3)  # the kernel's word that j1's watches are gone may ring
                _land(claimed, "t5", job.done / "000000" / "t5.a0")
                await ring_after("the job no longer followed", 0.3)
                _land(other.claimed / "a0", "t2", other.done / "000000" / "t2.a0")
                await ring_after("the job followed now", 10)
                tg.cancel_scope.cancel()
        finally:
            watch.close()

    anyio.run(main)
    assert rings == [
        "results and status False",
        "claimed False",
        "committed True",
        "new shard True",
        "committed in the new shard True",
        "handed back True",
        "void True",
        "another job False",
        "the job no longer followed False",
        "the job followed now True",
    ]


def test_a_job_whose_folders_are_missing_or_removed_costs_no_watch(tmp_path: Path) -> None:
    spool = SpoolLayout(tmp_path / "spool")
    gone = spool.job("gone")  # never made: its folders cannot be watched
    job = _job(spool, "j1")
    watch = CommitWatch.open()
    assert watch is not None, "inotify is missing on this Linux machine"
    try:
        watch.follow({"gone": Driver(gone), "j1": Driver(job)})
        assert watch.jobs == {"gone", "j1"}
        for folder in (job.done / "000000", job.done, job.returned, job.void):
            os.rmdir(folder)  # the kernel drops the watches with their folders
        watch.follow({})  # removing watches the kernel already dropped is no error
        assert watch.jobs == frozenset()
    finally:
        watch.close()


def test_commits_before_the_next_listing_ring_once_at_its_time(tmp_path: Path) -> None:
    """A leader's step before its next listing of done/ would only defer it: the commits
    of that wait ring once, when the listing is allowed; after it, a commit rings at once."""
    spool = SpoolLayout(tmp_path / "spool")
    job = _job(spool, "j1")
    claimed = job.claimed / "a0"
    seen: list[tuple[str, float]] = []

    async def main() -> None:
        watch = CommitWatch.open()
        assert watch is not None, "inotify is missing on this Linux machine"
        bell = Doorbell()
        listed_at = anyio.current_time() + 0.6  # the leader's next listing
        try:
            watch.follow({"j1": Driver(job)})
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch.ring, bell, lambda: listed_at)
                await anyio.sleep(0.1)  # the reader waits on the descriptor
                start = anyio.current_time()
                for i in range(3):
                    _land(claimed, f"t{i}", job.done / "000000" / f"t{i}.a0")
                    await anyio.sleep(0.05)
                while await bell.wait(1.5):
                    seen.append(("held", anyio.current_time() - start))
                _land(claimed, "t9", job.done / "000000" / "t9.a0")  # the listing is due
                start = anyio.current_time()
                assert await bell.wait(10)
                seen.append(("due", anyio.current_time() - start))
                tg.cancel_scope.cancel()
        finally:
            watch.close()

    anyio.run(main)
    assert [what for what, _ in seen] == ["held", "due"], seen
    assert seen[0][1] >= 0.45, f"rang {seen[0][1]:.3f} s after the first commit, before its listing"
    assert seen[1][1] < 5, "a commit after the listing time was held"
