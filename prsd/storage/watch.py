"""Waking loops early: in-process doorbells (and file events, as hints only).

The directory listing is the truth; a doorbell only shortens the wait before the
next look. Every loop still rescans on a timeout, so a lost ring costs latency,
never correctness. Across machines nothing rings: agents and leaders poll (inotify
does not see other clients' changes on network file systems).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from pathlib import Path


class Doorbell:
    """A re-armable wake-up: ``ring()`` from the event loop, ``wait(timeout_s)`` in a loop."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def ring(self) -> None:
        self._event.set()

    async def wait(self, timeout_s: float) -> bool:
        """Wait for a ring or the timeout; True if rung. Re-arms the bell."""
        rung = False
        with anyio.move_on_after(timeout_s):
            await self._event.wait()
            rung = True
        if self._event.is_set():
            self._event = anyio.Event()
            rung = True
        return rung


async def ring_on_local_changes(paths: list[Path], bell: Doorbell) -> None:
    """Ring ``bell`` when files under ``paths`` change (a local disk spool only).

    File events are hints: on a network file system inotify sees only this machine's
    own changes, so callers use this only where the spool is on a local disk, and
    their loops poll on a timer regardless. Ends quietly if the paths cannot be watched.
    """
    from watchfiles import awatch

    existing = [p for p in paths if p.exists()]
    if not existing:
        return
    try:
        async for _changes in awatch(*existing, debounce=100, step=20, recursive=True):
            bell.ring()
    except (OSError, RuntimeError):
        return
