"""Waking loops early: in-process doorbells (and file events, as hints only).

The directory listing is the truth; a doorbell only shortens the wait before the
next look. Every loop still rescans on a timeout, so a lost ring costs latency,
never correctness. Across machines nothing rings: agents and leaders poll (inotify
does not see other clients' changes on network file systems).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

WATCH_RETRY_S = 30.0
"""After the file-event watcher failed (an undecodable name): the wait before it is
started again. The daemons' loops list on their own timers meanwhile."""


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


def relevant_changes(roots: list[Path], folders: frozenset[str]) -> Callable[[object, str], bool]:
    """A ``watchfiles`` filter: a change counts if it lies under ``roots[0]`` (every
    change there), or if a folder on its path below any other root is named in
    ``folders`` (``{"pending"}``: new tasks; not the workers' log lines or results).

    Without it every log line a worker writes wakes every daemon on the machine.
    """
    whole = str(roots[0]) + os.sep
    prefixes = [str(r) + os.sep for r in roots[1:]]

    def keep(_change: object, path: str) -> bool:
        if path.startswith(whole):
            return True
        for prefix in prefixes:
            if path.startswith(prefix):
                return not folders.isdisjoint(path[len(prefix) :].split(os.sep)[:-1])
        return False

    return keep


async def ring_on_local_changes(
    paths: list[Path],
    bell: Doorbell,
    folders: frozenset[str] | None = None,
    retry_s: float = WATCH_RETRY_S,
) -> None:
    """Ring ``bell`` when files under ``paths`` change (a local disk spool only).

    File events are hints: on a network file system inotify sees only this machine's
    own changes, so callers use this only where the spool is on a local disk, and
    their loops poll on a timer regardless. Ends quietly if the paths cannot be watched.
    Any error of the watcher (``watchfiles`` raises, inside an exception group, on a
    name that is not UTF-8: ``Unable to decode path``) only costs the hints: the watch
    is started again after ``retry_s`` (the loops list on their timers meanwhile), so a
    name no daemon can decode never stops one.
    With ``folders``, only the changes :func:`relevant_changes` keeps ring (every change
    under the first path, and those in the named folders under the others).
    """
    from watchfiles import awatch

    existing = [p for p in paths if p.exists()]
    if not existing:
        return
    keep = relevant_changes(paths, folders) if folders is not None else None
    # watchfiles' thread takes the interpreter lock every ``step`` ms to look for a stop
    # request, changes or not: at 10 ms that was 100 takes a second per daemon (an idle
    # agent spent 10 ms of CPU a second, 3 at 50 ms). A change rings at most 50 ms late;
    # the loops listing after a ring poll on their own timers anyway.
    while True:
        try:
            async for _changes in awatch(
                *existing, watch_filter=keep, debounce=100, step=50, recursive=True
            ):
                bell.ring()
        except OSError:
            return
        except Exception:  # noqa: BLE001 - the watcher's boundary: hints only, never fatal
            bell.ring()  # whatever changed is found by the next listing
            await anyio.sleep(retry_s)
            continue
        return
