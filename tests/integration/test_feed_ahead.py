"""A feed claims one task ahead of its workers while plenty are pending, and none near
the end; a closed feed hands out nothing, not even the task it holds ahead.

Real files and renames in a spool folder; the feed as an agent's job run makes one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from prsd.agent.feed import AHEAD_WHEN_LISTED
from prsd.agent.task import hand_back
from prsd.spool.claim import own_claims, prepare_node
from prsd.spool.layout import JobLayout, TaskName
from tests.feedkit import files_feed, write_pending

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.agent.feed import TaskFeed


def _job(tmp_path: Path, tasks: int) -> JobLayout:
    layout = JobLayout(tmp_path / "spool" / "jobs" / "ahead-1", "ahead-1")
    prepare_node(layout, "n1")
    layout.returned.mkdir(parents=True)  # made by the leader at intake
    write_pending(layout, tasks)
    return layout


def _claimed(layout: JobLayout) -> list[int]:
    return sorted(t.first_mb for t in own_claims(layout, "n1"))


def test_one_task_is_claimed_ahead_while_the_listing_names_enough(tmp_path: Path) -> None:
    layout = _job(tmp_path, 5)
    feed = files_feed(layout, "n1", poll_s=60)

    async def main() -> tuple[list[int], list[int]]:
        with anyio.fail_after(5):
            first = await feed.get()  # lists five, claims one: four names left
            await feed.claim_ahead()
            await feed.claim_ahead()  # one is held already: no second
            held = _claimed(layout)
            second = await feed.get()  # the task held ahead, no claim in the gap
            assert second is not None and first is not None
            assert not feed.ahead
            return held, sorted(t.task.first_mb for t in (first, second))

    held, given = anyio.run(main)
    assert len(held) == 2
    assert given == held == _claimed(layout)


def test_no_task_is_claimed_ahead_near_the_end(tmp_path: Path) -> None:
    layout = _job(tmp_path, AHEAD_WHEN_LISTED)  # one claimed, fewer names left than needed
    feed = files_feed(layout, "n1", poll_s=60)

    async def main() -> None:
        with anyio.fail_after(5):
            assert await feed.get() is not None
            await feed.claim_ahead()

    anyio.run(main)
    assert len(_claimed(layout)) == 1
    assert not feed.ahead


def test_a_closed_feed_gives_out_nothing_and_its_task_ahead_goes_back(tmp_path: Path) -> None:
    layout = _job(tmp_path, 5)
    feed: TaskFeed = files_feed(layout, "n1", poll_s=60)

    async def main() -> None:
        with anyio.fail_after(5):
            assert await feed.get() is not None
            await feed.claim_ahead()
            assert len(feed.ahead) == 1
            feed.close()  # a drain or the job's end
            assert await feed.get() is None
            while feed.ahead:  # as the job run does at its end
                assert hand_back(layout, "n1", feed.ahead.popleft())

    anyio.run(main)
    claimed, returned = _claimed(layout), [p.name for p in layout.returned.iterdir()]
    assert len(claimed) == 1
    assert len(returned) == 1
    assert TaskName.parse(returned[0]) is not None
    assert TaskName.parse(returned[0]).first_mb not in claimed  # type: ignore[union-attr]


def test_a_task_held_ahead_goes_to_a_busy_worker_only_while_many_are_listed(
    tmp_path: Path,
) -> None:
    many, few = _job(tmp_path / "many", 20), _job(tmp_path / "few", 10)

    async def held_and_handed(layout: JobLayout) -> tuple[int, bool]:
        feed = files_feed(layout, "n1", poll_s=60)
        assert feed.hand_ahead_when == 16  # the default (PRSD_HAND_AHEAD_WHEN_LISTED)
        with anyio.fail_after(5):
            assert await feed.get() is not None  # lists every pending task
            await feed.claim_ahead()
        handed = feed.hands_ahead()
        feed.close()
        assert not feed.hands_ahead()  # a closed feed hands nothing over
        return len(feed.ahead), handed

    assert anyio.run(held_and_handed, many) == (1, True)
    assert anyio.run(held_and_handed, few) == (1, False)  # held for the first to ask
