"""File events as wake-up hints on a local spool (real inotify through watchfiles)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from prsd.storage.watch import Doorbell, ring_on_local_changes

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
