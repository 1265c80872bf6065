"""One timer per worker: its memory sample and its output cap, at the same tick.

Promise: while ``alive()`` holds, every :data:`TICK_S` the worker's memory is sampled
(:class:`prsd.agent.memwatch.MemoryWatch`, until its process is gone) and each of its
captured output files is checked against the cap (:mod:`prsd.agent.outcap`); when the
loop ends, returned or cancelled, the files get their last check and the descriptors
of both are closed.

One loop, not one per concern, and all of an agent's workers ticking together (on a
grid of :data:`TICK_S` on the event loop's clock, so they are watched in one wake-up
of its loop; the grid's phase is the agent's own, so that the agents of one machine
do not all wake at the same instant): an agent whose job's workers are busy in
``run()`` wakes for nothing else, and each wake-up of an asyncio loop costs more than
the sample and the ``fstat`` it is for (two loops per worker, each on its own phase, were about half of
an agent's CPU while its workers slept: bench/README.md, round 4o).

Errors: none raised; each part is best effort (a vanished process ends the samples, a
file that cannot be read skips a check).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio

from prsd.agent.outcap import check_caps, last_check

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.agent.memwatch import MemoryWatch
    from prsd.agent.outcap import CapturedFile

TICK_S = 0.2
"""How often a worker's memory is sampled and its output sizes checked: a memory peak
shorter than this may go unseen (the kernel's OOM count still names an OOM kill), and
output may pass the cap by what the worker writes in this long."""

_PHASE = (os.getpid() % 101) / 101
"""Where in each tick this process's watches wake, as a fraction of the tick."""


def until_tick(now: float, tick_s: float, phase: float) -> float:
    """Seconds from ``now`` to the next point of the grid ``(k + phase) * tick_s``: more
    than 0, at most ``tick_s`` (a call on the grid waits a whole tick)."""
    return tick_s - (now - phase * tick_s) % tick_s


async def watch_worker(
    memory: MemoryWatch,
    files: list[CapturedFile],
    cap_bytes: int,
    alive: Callable[[], bool],
    tick_s: float = TICK_S,
) -> None:
    """Sample ``memory`` and check ``files`` every ``tick_s`` while ``alive()``; then the
    files' last check (also when cancelled) and every descriptor closed."""
    sampling = True
    try:
        while alive():
            if sampling:
                sampling = memory.tick()
            await anyio.sleep(until_tick(anyio.current_time(), tick_s, _PHASE))
            await check_caps(files, cap_bytes)
    finally:
        memory.close()
        await last_check(files, cap_bytes)
