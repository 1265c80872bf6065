"""The inotify doorbell of one folder (prsd.spool.entrybell): real folders, real events."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio

from prsd.spool.entrybell import open_entry_watch, ring_and_close, ring_on_entries
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
            tg.start_soon(ring_on_entries, folder, bell)
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
        with anyio.fail_after(5):
            await ring_on_entries(tmp_path / "missing", Doorbell())

    anyio.run(main)


def test_a_watch_handed_to_its_ringer_rings_and_is_closed_when_the_ringer_ends(
    tmp_path: Path,
) -> None:
    fd = open_entry_watch(tmp_path)
    assert fd is not None
    rang: list[bool] = []

    async def main() -> None:
        bell = Doorbell()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ring_and_close, fd, bell)
            (tmp_path / "job-1").mkdir()
            rang.append(await bell.wait(10))
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert rang == [True]
    try:
        os.fstat(fd)
    except OSError as exc:
        assert exc.errno == 9  # EBADF: closed by the ringer
    else:
        raise AssertionError("the watch's descriptor is still open")
