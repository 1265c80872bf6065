"""A doorbell rung the moment an entry appears in (or leaves) one local folder: inotify.

The leader's ``inbox/`` and the agents' ``active/`` are single folders whose new
entries start work (a job submitted; a job taken in). ``watchfiles``
looked for changes every 50 ms and yielded them one or two looks later, so each of
those hops cost 50-100 ms; here the kernel's inotify descriptor wakes the event loop
itself, at once, and there is no polling thread (no CPU while idle). The daemons use
it on a local-disk spool only (on a network file system inotify sees only this
machine's changes), and step on a longer timer where it watches.

Promise: hints only, as every bell: the listing is the truth, and the loops list on
their timers regardless. Linux only; ``ctypes`` is loaded when a watch starts, never
on import (``prsd run`` does not pay for it).

Errors: none raised. Where inotify cannot be had (no such libc function, the folder
cannot be watched, the user's watch limit reached) :func:`watch_entries` starts
nothing and says so; a read error ends the ringing quietly.
"""

from __future__ import annotations

import functools
import os
import struct
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from anyio.abc import TaskGroup

    from prsd.spool.watch import Doorbell

IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000
IN_ISDIR = 0x40000000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
ENTRY_EVENTS = IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM
READ_BYTES = 1 << 16
EVENT_HEAD = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows


def events(buffer: bytes) -> Iterator[tuple[int, int, bytes]]:
    """The events in a buffer read from an inotify descriptor: (watch, mask, name)."""
    at = 0
    while at + EVENT_HEAD.size <= len(buffer):
        wd, mask, _cookie, length = EVENT_HEAD.unpack_from(buffer, at)
        name = buffer[at + EVENT_HEAD.size : at + EVENT_HEAD.size + length].rstrip(b"\0")
        at += EVENT_HEAD.size + length
        yield wd, mask, name


@functools.cache
def inotify_calls() -> tuple[Any, Any, Any] | None:
    """libc's ``inotify_init1``, ``inotify_add_watch`` and ``inotify_rm_watch``; None
    where there are none."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        init, add, rm = libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch
    except (OSError, AttributeError):
        return None
    add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
    rm.argtypes = (ctypes.c_int, ctypes.c_int)
    return init, add, rm


def add_watch(fd: int, folder: Path, mask: int) -> int:
    """Watch ``folder`` on inotify descriptor ``fd``; its watch number, or -1 (not
    watchable: missing, not a folder, the watch limit reached)."""
    calls = inotify_calls()
    if calls is None:
        return -1
    return int(calls[1](fd, os.fsencode(folder), mask | IN_ONLYDIR))


def remove_watch(fd: int, wd: int) -> None:
    """Stop watch ``wd`` of inotify descriptor ``fd`` (one the kernel already dropped,
    with its folder, is no error)."""
    calls = inotify_calls()
    if calls is not None:
        calls[2](fd, wd)


def open_inotify() -> int | None:
    """A new non-blocking inotify descriptor watching nothing yet; None where none can
    be had."""
    calls = inotify_calls()
    if calls is None:
        return None
    fd = int(calls[0](IN_NONBLOCK | IN_CLOEXEC))
    return None if fd < 0 else fd


def open_watch(folder: Path, mask: int) -> int | None:
    """A non-blocking inotify descriptor watching ``folder`` for ``mask``; None where
    none can be had."""
    fd = open_inotify()
    if fd is None:
        return None
    if add_watch(fd, folder, mask) < 0:
        os.close(fd)
        return None
    return fd


def open_entry_watch(folder: Path) -> int | None:
    """An inotify descriptor (non-blocking) that becomes readable when an entry of
    ``folder`` is made, moved in or out, or removed; None where none can be had."""
    return open_watch(folder, ENTRY_EVENTS)


async def ring_per_wake(
    fd: int, bell: Doorbell, each: Callable[[bytes], None] | None = None
) -> None:
    """Ring ``bell`` once per wake of inotify descriptor ``fd``, after every event queued
    is read (each buffer given to ``each`` first); until cancelled or a read error."""
    while True:
        await anyio.wait_readable(fd)
        try:
            while buffer := os.read(fd, READ_BYTES):
                if each is not None:
                    each(buffer)
        except BlockingIOError:
            pass
        except OSError:
            return
        bell.ring()


def watch_entries(tg: TaskGroup, folder: Path, bell: Doorbell) -> bool:
    """Ring ``bell`` whenever an entry of ``folder`` comes or goes, from a task started in
    ``tg`` (it runs until cancelled, then closes its descriptor). False, and nothing
    started, where inotify cannot watch ``folder``: a caller waits on a longer timer
    only when this is True."""
    fd = open_entry_watch(folder)
    if fd is None:
        return False
    tg.start_soon(_ring_and_close, fd, bell)
    return True


async def _ring_and_close(fd: int, bell: Doorbell) -> None:
    try:
        await ring_per_wake(fd, bell)
    finally:
        os.close(fd)
