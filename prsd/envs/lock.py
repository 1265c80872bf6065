"""Node-local locks on a cache entry: one builder at a time, and "in use" marks.

Invariant: every lock is an ``flock`` on a file in the cache's ``.locks`` folder, so
the kernel drops it when its holder dies (kill -9 included): a killed builder never
holds a lock past its death, and nobody has to judge liveness from a pid. The cache
is node-local by design (flock on a shared mount is not trusted).

- build lock (exclusive): held while an entry is built; others wait on it.
- use lock (shared): held by an agent for as long as a job runs on the entry;
  eviction takes it exclusive without waiting, so an entry in use is never removed.

Errors: OSError from opening the lock file (a cache folder that is not writable).
"""

from __future__ import annotations

import fcntl
import os
import time
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from pathlib import Path


class FileLock:
    """An flock on ``path``; released by :meth:`release` or by the holder's death."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self, *, shared: bool = False, wait_s: float | None = None) -> bool:
        """Take the lock; False when ``wait_s`` passed (0: do not wait) before it came."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    os.close(fd)
                    return False
                time.sleep(0.2)
        self.fd = fd
        if not shared:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
