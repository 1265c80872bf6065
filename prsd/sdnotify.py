"""systemd's notification protocol (``sd_notify(3)``) in a few lines of standard library.

A service started with ``Type=notify`` gets ``NOTIFY_SOCKET`` in its environment: a
Unix datagram socket (a path, or an abstract name written with a leading ``@``).
Each message is one datagram of ``KEY=VALUE`` lines. prsd sends ``READY=1`` once the
spool passed its start-up check and the loop runs, ``WATCHDOG=1`` at half the
``WatchdogSec=`` interval (``WATCHDOG_USEC``) while the event loop is alive and the
daemon's work makes progress,
``STATUS=...`` for ``systemctl status``, and ``STOPPING=1`` when it drains.

Without ``NOTIFY_SOCKET`` (a daemon started by hand, a test) every call does nothing.
A failed send never stops the daemon: the notification is advisory.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping


def _address(value: str) -> str | bytes | None:
    if value.startswith("@"):
        return b"\0" + value[1:].encode()  # abstract namespace
    if value.startswith("/"):
        return value
    return None


def notify(message: str, env: Mapping[str, str] | None = None) -> bool:
    """Send ``message`` (``READY=1``, ``WATCHDOG=1``...) to systemd; True if it was sent.

    Returns False when not started by systemd (no ``NOTIFY_SOCKET``) or when the
    datagram cannot be delivered.
    """
    env = os.environ if env is None else env
    address = _address(env.get("NOTIFY_SOCKET", ""))
    if address is None:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.setblocking(False)  # never stall the event loop on a full queue
            sock.connect(address)
            sock.send(message.encode())
    except OSError:
        return False
    return True


def watchdog_interval_s(env: Mapping[str, str] | None = None, pid: int | None = None) -> float:
    """Seconds between ``WATCHDOG=1`` pings (half of ``WatchdogSec=``); 0 when not asked.

    ``WATCHDOG_PID``, when set, names the process systemd watches: any other process
    (a child that inherited the environment) must not ping.
    """
    env = os.environ if env is None else env
    try:
        usec = int(env.get("WATCHDOG_USEC", "0"))
    except ValueError:
        return 0.0
    owner = env.get("WATCHDOG_PID", "")
    if owner and owner != str(os.getpid() if pid is None else pid):
        return 0.0
    return usec / 2e6 if usec > 0 else 0.0


async def feed_watchdog(
    env: Mapping[str, str] | None = None, stalled: Callable[[], str] | None = None
) -> None:
    """Ping the watchdog forever at half its interval; returns at once when not asked.

    Run it in the daemon's task group: a blocked event loop stops the pings, and so
    does work that makes no progress (``stalled`` says why, "" while it does: a file
    operation that hangs), so systemd restarts the service after ``WatchdogSec=``.
    """
    interval_s = watchdog_interval_s(env)
    if interval_s <= 0:
        return
    while True:
        why = stalled() if stalled is not None else ""
        if why:
            notify(f"STATUS=no progress: {why}", env)
        else:
            notify("WATCHDOG=1", env)
        await anyio.sleep(interval_s)


async def serve_notified(
    loop: Callable[[], Awaitable[object]],
    status: str,
    stalled: Callable[[], str] | None = None,
) -> None:
    """Run ``loop`` with ``READY=1`` and ``STATUS=`` sent and the watchdog fed meanwhile
    (while ``stalled`` says nothing: see :func:`feed_watchdog`).

    ``STOPPING=1`` is sent when ``loop`` returns or is cancelled (SIGTERM).
    """
    async with anyio.create_task_group() as tg:
        tg.start_soon(feed_watchdog, None, stalled)
        notify(f"READY=1\nSTATUS={status}")
        try:
            await loop()
        finally:
            notify("STOPPING=1")
            tg.cancel_scope.cancel()
