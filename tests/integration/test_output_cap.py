"""A worker's watch (``watch_worker``) on real files and processes: the output cap's
last check is made even when the watch is cancelled, the memory samples read the
process's own ``statm`` and stop once it is gone, and every descriptor is closed."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import psutil

from prsd.agent.memwatch import MemoryWatch
from prsd.agent.outcap import CapturedFile
from prsd.agent.workerwatch import watch_worker

if TYPE_CHECKING:
    from pathlib import Path

CAP = 64 * 1024
HOLD = 200 * 1024 * 1024
HOLDER = (
    "import resource, sys, time\n"
    f"resource.setrlimit(resource.RLIMIT_AS, ({4 * HOLD}, {4 * HOLD}))\n"
    f"held = bytearray({HOLD})\n"  # zero-filled: touched, so resident
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"
)


def closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def test_a_cancelled_watch_still_cuts_a_file_over_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "process000.stdout.txt"
    writer = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    captured = CapturedFile(path, os.open(path, os.O_RDWR))
    memory = MemoryWatch(os.getpid())

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_worker, memory, [captured], CAP, lambda: True)
            await anyio.lowlevel.checkpoint()
            os.write(writer, b"x" * (CAP - 10) + b"the tail\n" + b"y" * (3 * CAP))
            tg.cancel_scope.cancel()  # before the tick has passed once

    try:
        anyio.run(main)
    finally:
        os.close(writer)
    assert path.stat().st_size < 1024, path.stat().st_size  # cut: only the notice is left
    assert path.read_bytes().startswith(b"[prsd] output was truncated here")
    tail = path.with_name(path.name + ".1").read_bytes()
    assert len(tail) == CAP and tail == b"y" * CAP
    assert closed(captured.fd), "the agent's descriptor was left open"
    assert memory.peak.rss_bytes > 0  # the first sample comes before the first tick
    assert not memory.sample(), "the memory watch's statm was left open"


async def watch_until_exit(
    memory: MemoryWatch, captured: CapturedFile, child: subprocess.Popen[bytes]
) -> None:
    """Watch ``child`` (ticks of 0.05 s), write past the cap into its output, let it exit."""
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_worker, memory, [captured], CAP, lambda: child.poll() is None, 0.05)
            with captured.path.open("ab") as sink:  # the worker's own descriptor on its output
                sink.write(b"z" * (2 * CAP))
            await anyio.sleep(0.3)  # a few ticks: the file is cut while the worker lives
            assert captured.path.stat().st_size < 1024
            assert child.stdin is not None
            child.stdin.close()  # the child exits; the watch ends with it
    assert child.returncode == 0


def test_the_watch_samples_a_live_worker_and_ends_with_it(tmp_path: Path) -> None:
    """A real child holding 200 MiB under an address-space limit: the samples show its
    memory (as psutil reads it) and its limit; output past the cap is cut while it
    lives; it exits, the watch ends, and a sample after the reaping reads nothing."""
    out = tmp_path / "process001.stdout.txt"
    out.touch()
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        memory = MemoryWatch(child.pid)
        captured = CapturedFile(out, os.open(out, os.O_RDWR))
        try:
            assert memory.sample()
            rss = psutil.Process(child.pid).memory_info().rss
            assert HOLD <= memory.peak.rss_bytes <= rss * 1.1, (memory.peak, rss)
            assert 0.2 < memory.peak.address_space_fraction < 1.0, memory.peak
            assert resource.prlimit(child.pid, resource.RLIMIT_AS)[0] == 4 * HOLD
            anyio.run(watch_until_exit, memory, captured, child)
        finally:
            child.kill()
    assert out.with_name(out.name + ".1").read_bytes() == b"z" * CAP
    assert closed(captured.fd)
    assert not memory.sample()  # closed with the watch
    assert not MemoryWatch(child.pid).sample()  # reaped: nothing to read, whoever has its pid
