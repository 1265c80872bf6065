"""Storage faults of the spool: which errors heal by themselves, and waiting them out.

Invariant: an error of the spool's file system that a person can fix without
touching prsd (the disk is full, the mount went read-only, the server returned an
I/O error or a stale handle) never ends a daemon or a job. The daemon that meets one
logs it once, reports it (heartbeats carry :attr:`FaultState.condition`), retries
with a capped exponential backoff, and carries on when the spool is healthy again.
Any other error is a fault of one job (or a bug) and is handled at that job's
boundary by the caller.

Errors: :func:`probe_writable` raises the ``OSError`` of a folder that cannot take a
new file now.
"""

from __future__ import annotations

import errno
import os
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

# errno -> the condition as people say it
STORAGE_ERRNOS: dict[int, str] = {
    errno.ENOSPC: "the spool's disk is full",
    errno.EDQUOT: "the spool's disk quota is exceeded",
    errno.EROFS: "the spool is mounted read-only",
    errno.EIO: "the spool's file system returned an I/O error",
    errno.ESTALE: "the spool's file server returned a stale file handle",
}

BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 10.0


def storage_fault(exc: BaseException) -> str | None:
    """The condition ``exc`` stands for when it is a storage fault, else None.

    Looks through causes, contexts and exception groups (a task group's failure).
    """
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        cur = todo.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur, OSError) and cur.errno in STORAGE_ERRNOS:
            return f"{STORAGE_ERRNOS[cur.errno]} ({os.strerror(cur.errno)})"
        if isinstance(cur, BaseExceptionGroup):
            todo.extend(cur.exceptions)
        todo.extend(e for e in (cur.__cause__, cur.__context__) if e is not None)
    return None


def fault_line(exc: BaseException, doing: str, spool: object) -> str | None:
    """One line for a command that met a storage fault while ``doing``; None if not one."""
    condition = storage_fault(exc)
    if condition is None:
        return None
    return (
        f"cannot {doing}: {condition} (spool {spool}); free space or make it writable "
        "again, then retry"
    )


def next_backoff_s(previous_s: float) -> float:
    """The next wait after a storage fault: doubling from BACKOFF_FIRST_S, capped."""
    if previous_s <= 0:
        return BACKOFF_FIRST_S
    return min(previous_s * 2, BACKOFF_MAX_S)


@dataclass
class FaultState:
    """A daemon's current storage condition: "" while the spool is healthy.

    :meth:`hit` returns True the first time a condition is seen (log it then, not at
    every retry); :meth:`clear` returns True when a fault just ended.
    """

    condition: str = ""
    since: float = 0.0  # monotonic seconds
    backoff_s: float = 0.0
    retry_at: float = 0.0

    def hit(self, condition: str, now: float) -> bool:
        new = condition != self.condition
        if new:
            self.condition, self.since = condition, now
        self.backoff_s = next_backoff_s(self.backoff_s)
        self.retry_at = now + self.backoff_s
        return new

    def clear(self) -> bool:
        ended = bool(self.condition)
        self.condition, self.backoff_s, self.retry_at = "", 0.0, 0.0
        return ended

    def waiting(self, now: float) -> bool:
        return bool(self.condition) and now < self.retry_at


PROBE_BYTES = 128 * 1024  # a probe file this big must fit before a fault counts as healed
PAD_BYTES = 4096  # small status files are padded to a multiple of this (a page; see below)


def padded(data: bytes) -> bytes:
    """``data`` (JSON) padded with spaces to the next multiple of PAD_BYTES.

    A heartbeat written padded leaves room to be overwritten in place when the disk
    is full (:func:`overwrite_in_place`): liveness and the fault itself stay visible.
    """
    return data + b" " * (-len(data) % PAD_BYTES)


def overwrite_in_place(path: Path, data: bytes) -> bool:
    """Overwrite an existing file's blocks with ``data`` (padded to its size); True if done.

    Only for a full disk: it needs no new block, but a reader may see a torn file
    (readers of heartbeats skip one that does not parse and keep their last view).
    False when the file is missing or smaller than ``data``.
    """
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        if size < len(data):
            return False
        os.pwrite(fd, data + b" " * (size - len(data)), 0)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def probe_writable(folder: Path) -> None:
    """Create, fsync and remove a PROBE_BYTES file in ``folder``.

    Raises:
        OSError: the folder cannot take a new file now.
    """
    path = folder / f".probe-{os.getpid()}-{secrets.token_hex(4)}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        # room for more than a heartbeat, so a fault does not flap healed and back
        if os.write(fd, b"\0" * PROBE_BYTES) < PROBE_BYTES:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        os.fsync(fd)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
