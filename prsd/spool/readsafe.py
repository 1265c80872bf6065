"""Reading a small spool file without following a link, bounded in size.

Invariant: a daemon that believes a file (``spec.json``, ``owner.json``, the state a
new leader resumes from) reads it through one ``open`` with ``O_NOFOLLOW`` and checks
what it opened, never the name before: the descriptor must be a regular file, owned
by the daemons' own uid or root when ``daemon_owned`` is asked, and no larger than
the caller's bound. ``O_NONBLOCK`` keeps a FIFO planted under the name from hanging
the reader; the bound keeps ``/dev/zero`` or a huge file from exhausting memory.

Errors: every refusal is :class:`UntrustedFile` (a :class:`SpoolError`) naming the
path and why, so the caller fails the one job concerned, never the daemon; a name
that is not there at all is :class:`MissingFile`, an ``UntrustedFile`` a caller may
tell apart (a file not written yet).
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

from prsd.errors import SpoolError

if TYPE_CHECKING:
    from pathlib import Path


class UntrustedFile(SpoolError):
    """A file the daemons were about to believe is missing, a link, foreign or too big."""


class MissingFile(UntrustedFile):
    """The file is not there (``ENOENT``): not written yet, or removed."""


def read_small(path: Path, max_bytes: int, *, daemon_owned: bool) -> bytes:
    """The bytes of ``path``, read without following a link at its last component.

    Args:
        path: the file.
        max_bytes: the largest size accepted.
        daemon_owned: the file must belong to root or to this process's uid.

    Raises:
        MissingFile: there is no such file.
        UntrustedFile: a link, not a regular file, written by someone other
            than the daemons (when asked), or larger than ``max_bytes``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise MissingFile(f"cannot open {path}: {exc.strerror}") from exc
    except OSError as exc:
        raise UntrustedFile(f"cannot open {path}: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UntrustedFile(f"{path} is not a regular file")
        if daemon_owned and info.st_uid not in (0, os.geteuid()):
            raise UntrustedFile(f"{path} belongs to uid {info.st_uid}, not to the daemons")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise UntrustedFile(f"{path} is larger than {max_bytes} bytes")
    return b"".join(chunks)
