"""File events as wake-up hints on a local spool (real inotify through watchfiles)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from prsd.spool.watch import Doorbell, relevant_changes, ring_on_local_changes

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.anyio
async def test_a_new_file_rings_the_bell(tmp_path: Path) -> None:
    bell = Doorbell()
    (tmp_path / "pending").mkdir()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ring_on_local_changes, [tmp_path], bell)
        await anyio.sleep(0.3)  # the watcher is set up
        assert not await bell.wait(0.05)
        (tmp_path / "pending" / "000000001.a1.e1").write_bytes(b"x")
        assert await bell.wait(5.0), "no ring within 5 s of a new file"
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_missing_paths_end_quietly(tmp_path: Path) -> None:
    with anyio.fail_after(5):
        await ring_on_local_changes([tmp_path / "nope"], Doorbell())


@pytest.mark.anyio
async def test_only_the_named_folders_ring_below_the_second_root(tmp_path: Path) -> None:
    """A worker's log line does not wake the daemons; a new task and the first root do."""
    active, jobs = tmp_path / "active", tmp_path / "jobs"
    pending, logs = jobs / "j1" / "tasks" / "pending", jobs / "j1" / "logs" / "user"
    for folder in (active, pending, logs):
        folder.mkdir(parents=True)
    bell = Doorbell()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ring_on_local_changes, [active, jobs], bell, frozenset({"pending"}))
        await anyio.sleep(0.3)  # the watcher is set up
        for i in range(5):
            (logs / f"process00{i}.txt").write_text("a log line\n")
        assert not await bell.wait(0.5), "a log line rang the bell"
        (pending / "000000001.a1.e1").write_bytes(b"x")
        assert await bell.wait(5.0), "no ring within 5 s of a new task"
        (active / "j2").write_bytes(b"")
        assert await bell.wait(5.0), "no ring within 5 s of a change in the first root"
        tg.cancel_scope.cancel()


def test_relevant_changes_by_folder_name(tmp_path: Path) -> None:
    keep = relevant_changes([tmp_path / "inbox", tmp_path / "jobs"], frozenset({"done"}))
    assert keep(None, str(tmp_path / "inbox" / "job-1" / "job.yaml"))
    assert keep(None, str(tmp_path / "jobs" / "j" / "tasks" / "done" / "000000" / "t"))
    assert not keep(None, str(tmp_path / "jobs" / "j" / "logs" / "done.txt"))  # a file name
    assert not keep(None, str(tmp_path / "jobs" / "j" / "state" / "status.json"))
    assert not keep(None, str(tmp_path / "elsewhere" / "done" / "x"))
