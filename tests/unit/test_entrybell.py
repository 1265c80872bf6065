"""The inotify doorbell of one folder (prsd.spool.entrybell): real folders, real events."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

import anyio

from prsd.spool.entrybell import open_entry_watch, watch_entries
from prsd.spool.watch import Doorbell

if TYPE_CHECKING:
    from pathlib import Path


def test_an_entry_made_moved_in_or_removed_rings_and_nothing_else_does(tmp_path: Path) -> None:
    folder, elsewhere = tmp_path / "inbox", tmp_path / "staging"
    folder.mkdir()
    elsewhere.mkdir()
    rings: list[str] = []

    async def main() -> None:
        bell = Doorbell()
        async with anyio.create_task_group() as tg:
            assert watch_entries(tg, folder, bell)
            await anyio.sleep(0.1)  # the watch is in place
            (elsewhere / "job-1").mkdir()  # another folder: no ring
            (folder / "old").mkdir()
            rings.append(f"made {await bell.wait(10)}")  # the mkdir above: one ring
            rings.append(f"quiet {await bell.wait(0.3)}")  # and no more
            (elsewhere / "job-1").rename(folder / "job-1")  # a submit's publish
            rings.append(f"moved in {await bell.wait(10)}")
            (folder / "job-1" / "inner").mkdir()  # below an entry: not an entry's change
            rings.append(f"inner {await bell.wait(0.3)}")
            (folder / "old").rmdir()
            rings.append(f"removed {await bell.wait(10)}")
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert rings == ["made True", "quiet False", "moved in True", "inner False", "removed True"]


def test_a_folder_that_cannot_be_watched_ends_the_watch_at_once(tmp_path: Path) -> None:
    assert open_entry_watch(tmp_path / "missing") is None
    (tmp_path / "file").write_text("x")
    assert open_entry_watch(tmp_path / "file") is None  # not a folder
    fd = open_entry_watch(tmp_path)
    assert fd is not None
    os.close(fd)

    async def main() -> None:
        with anyio.fail_after(5):  # nothing started: the group ends at once
            async with anyio.create_task_group() as tg:
                assert not watch_entries(tg, tmp_path / "missing", Doorbell())

    anyio.run(main)


def _inotify_fds() -> int:
    """This process's open inotify descriptors (``/proc/self/fd``)."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            count += os.readlink(f"/proc/self/fd/{name}") == "anon_inode:inotify"
    return count


def test_a_watch_rings_and_its_descriptor_is_closed_when_its_task_ends(tmp_path: Path) -> None:
    before = _inotify_fds()
    rang: list[bool] = []
    during: list[int] = []

    async def main() -> None:
        bell = Doorbell()
        async with anyio.create_task_group() as tg:
            assert watch_entries(tg, tmp_path, bell)
            during.append(_inotify_fds())
            (tmp_path / "job-1").mkdir()
            rang.append(await bell.wait(10))
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert rang == [True]
    assert during == [before + 1]
    assert _inotify_fds() == before  # closed by its task
