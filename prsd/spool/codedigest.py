"""The digest of a job's code snapshot: what ``origin.json`` and a retry plan record.

A short digest (blake2b, 8 bytes) of every file's path relative to the snapshot and
its bytes, walked in name order, so the same snapshot always gives the same digest.
The client records it at submit (``origin.json``'s ``code``) and when it writes a
retry; a retry compares it with the earlier job's to say whether the code changed.

The leader computes it too, over a job's snapshot in the spool, whose files the job's
owner may replace at any time: each file is opened without following a link and
without blocking (``O_NOFOLLOW | O_NONBLOCK``) and read only when ``fstat`` says it
is a regular file, so a link to another file is never read through and a FIFO never
blocks the caller. Never raises: a file that cannot be read, a link or any other
special file counts as ``?``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def code_digest(folder: Path) -> str:
    """A short digest of a code snapshot: every file's relative path and bytes."""
    h = hashlib.blake2b(digest_size=8)
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            h.update(os.path.relpath(path, folder).encode("utf-8", "surrogateescape") + b"\0")
            h.update(_file_bytes(path))
    return h.hexdigest()


def _file_bytes(path: str) -> bytes:
    """The bytes of the regular file at ``path`` (a link not followed), else ``?``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b"?"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b"?"
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    except OSError:
        return b"?"
    finally:
        os.close(fd)
