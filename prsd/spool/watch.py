"""Waking loops early: the in-process doorbell that file events and other loops ring.

The directory listing is the truth; a doorbell only shortens the wait before the
next look. Every loop still rescans on a timeout, so a lost ring costs latency,
never correctness. Across machines nothing rings: agents and leaders poll (inotify
does not see other clients' changes on network file systems). The file events that
ring it on a local spool are inotify watches of exactly the folders whose changes
start work: :mod:`prsd.spool.entrybell` (``inbox/``, ``active/``),
:mod:`prsd.spool.arrivalbell` (a job's ``pending/``), :mod:`prsd.spool.commitbell`
(a job's ``done/``, ``returned/``, ``void/``).
"""

from __future__ import annotations

import anyio


class Doorbell:
    """A re-armable wake-up: ``ring()`` from the event loop, ``wait(timeout_s)`` in a loop."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def ring(self) -> None:
        self._event.set()

    def clear(self) -> None:
        """Forget a ring not waited for yet (what it announced is being handled)."""
        if self._event.is_set():
            self._event = anyio.Event()

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
