"""A job run as its owner: the feed makes a claimed task's result file for the owner in
the claim's own thread (no second hop before the worker may append to it), and a file
it could not make is left for the session, which refuses it as before.

A real unprivileged user (CI runs as root), real files and renames in a spool folder,
and the worker session's own ``prepare`` as the agent's job run hands it to the feed.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio
import pytest

from prsd.agent.session import WorkerSession
from prsd.agent.writer import FileWriter
from prsd.owner import JobOwnerRefused, identity
from prsd.spool.atomic import TMP_PREFIX
from prsd.spool.claim import prepare_node
from prsd.spool.layout import JobLayout, TaskName
from tests.feedkit import files_feed, write_pending
from tests.realusers import User, real_users

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from prsd.agent.feed import TaskFeed
    from prsd.agent.task import RunningTask


@pytest.fixture
def user() -> Iterator[User]:
    with real_users(1) as (made,):
        yield made


def _job(tmp_path: Path, tasks: int) -> JobLayout:
    layout = JobLayout(tmp_path / "spool" / "jobs" / "owned-1", "owned-1")
    prepare_node(layout, "n1")
    write_pending(layout, tasks)
    return layout


def _feed(layout: JobLayout, user: User) -> tuple[WorkerSession, TaskFeed]:
    """A feed whose claims are prepared by a session of a job run as ``user``."""
    feed = files_feed(layout, "n1", poll_s=60)
    session = WorkerSession(
        feed.ctx,
        0,
        None,
        ip="127.0.0.1",
        stop_grace_s=1.0,
        writer=FileWriter(),
        on_init_failure=lambda _s, _r: None,
    )
    session.run_as = identity(user.uid, user.gid)
    feed.prepare = session.prepare
    return session, feed


def test_a_claimed_tasks_result_file_is_the_owners_when_the_claim_returns(
    tmp_path: Path, user: User
) -> None:
    layout = _job(tmp_path, 5)
    _, feed = _feed(layout, user)

    async def main() -> tuple[RunningTask | None, RunningTask | None]:
        with anyio.fail_after(5):
            first = await feed.get()
            await feed.claim_ahead()
            return first, (feed.ahead[0] if feed.ahead else None)

    first, ahead = anyio.run(main)
    assert first is not None and ahead is not None
    for task in (first, ahead):
        assert task.prepared
        info = os.lstat(task.out_tmp)
        assert (info.st_uid, info.st_size) == (user.uid, 0)


def test_a_file_the_claim_could_not_make_is_refused_by_the_session(
    tmp_path: Path, user: User
) -> None:
    layout = _job(tmp_path, 1)
    session, feed = _feed(layout, user)
    name = TaskName(0, 1, 1)
    trap = layout.result(name, "n1")
    planted = trap.with_name(f"{TMP_PREFIX}{trap.name}")
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.symlink_to(tmp_path / "elsewhere")

    async def main() -> RunningTask | None:
        with anyio.fail_after(5):
            task = await feed.get()
            assert task is not None
            assert task.out_tmp == planted
            assert not task.prepared  # the claim went on; the session decides
            with pytest.raises(JobOwnerRefused):
                await session.make_result_file(task)
            return task

    assert anyio.run(main) is not None
    assert not (tmp_path / "elsewhere").exists()
