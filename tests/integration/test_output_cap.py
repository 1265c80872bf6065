"""``keep_under_cap`` on real files: the last check is made even when it is cancelled."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel

from prsd.agent.outcap import CapturedFile, keep_under_cap

if TYPE_CHECKING:
    from pathlib import Path

CAP = 64 * 1024


def test_a_cancelled_check_still_cuts_a_file_over_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "process000.stdout.txt"
    writer = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    captured = CapturedFile(path, os.open(path, os.O_RDWR))

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_under_cap, [captured], CAP, lambda: True)
            await anyio.lowlevel.checkpoint()
            os.write(writer, b"x" * (CAP - 10) + b"the tail\n" + b"y" * (3 * CAP))
            tg.cancel_scope.cancel()  # before the check interval has passed once

    try:
        anyio.run(main)
    finally:
        os.close(writer)
    assert path.stat().st_size < 1024, path.stat().st_size  # cut: only the notice is left
    assert path.read_bytes().startswith(b"[prsd] output was truncated here")
    tail = path.with_name(path.name + ".1").read_bytes()
    assert len(tail) == CAP and tail == b"y" * CAP
    try:
        os.fstat(captured.fd)
    except OSError:
        pass
    else:
        raise AssertionError("the agent's descriptor was left open")
