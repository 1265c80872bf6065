"""A daemon's start waits for its spool: missing, unreachable, read-only or full.

Invariant: ``prsd leader`` and ``prsd agent`` never exit because the spool's storage
is not there *yet*. A share that is not mounted, a server that does not answer, a
read-only remount or a full disk all heal without touching prsd, so a start (or a
systemd restart) during such an outage waits, says ``waiting for the spool: <why>``
once per new condition, and goes on by itself once the spool takes a new file.

What does not heal by waiting still ends the start: a spool folder that exists and
is writable by the file system but not by this user (permissions), or an error that
is no storage fault (a file where the folder should be).

File-system assumptions: a missing mount point's parent exists (``/mnt``); a spool
folder whose parent exists is created (a first start), one whose parent is missing
is waited for (an automount not there yet). Unreachable servers show as ENOTCONN,
EHOSTDOWN, EHOSTUNREACH or ETIMEDOUT from ``stat`` (FUSE, NFS ``soft``), or hang
(NFS ``hard``: the start then goes on when the server answers again).

Errors: :func:`wait_for_spool` raises :class:`~prsd.errors.SpoolError` for a spool
this user cannot write, and ``OSError`` for any other error that is not a storage
fault.
"""

from __future__ import annotations

import errno
import os
import time
from typing import TYPE_CHECKING

from prsd.spool.faults import FaultState, probe_writable
from prsd.spool.opening import open_spool

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from prsd.spool.layout import SpoolLayout

# errno -> what the wait is for, in a word or two (the log line's tail)
WAIT_REASONS: dict[int, str] = {
    errno.ENOENT: "missing",
    errno.ENOTCONN: "unreachable",
    errno.EHOSTDOWN: "unreachable",
    errno.EHOSTUNREACH: "unreachable",
    errno.ETIMEDOUT: "unreachable",
    errno.ECONNREFUSED: "unreachable",
    errno.ESTALE: "unreachable",
    errno.EIO: "I/O error",
    errno.EROFS: "read-only",
    errno.ENOSPC: "full",
    errno.EDQUOT: "over quota",
}


def wait_reason(exc: OSError) -> str | None:
    """The short reason a start waits for ``exc``; None when waiting cannot heal it."""
    return WAIT_REASONS.get(exc.errno or 0)


def check_spool_once(root: Path, min_free_bytes: int) -> None:
    """One look at the spool: there, reachable, writable, with room.

    Raises:
        OSError: what is wrong now (ENOENT for a missing folder or mount point, EROFS,
            ENOSPC for less than ``min_free_bytes`` free, ...).
    """
    if not os.path.isdir(root.parent):
        raise OSError(errno.ENOENT, "no such folder", str(root.parent))
    try:
        os.stat(root)
    except FileNotFoundError:
        try:
            os.mkdir(root, 0o755)  # a first start: the spool's parent is there
        except FileExistsError:
            pass  # another daemon's first start made it meanwhile
    probe_writable(root)
    st = os.statvfs(root)
    if st.f_bavail * st.f_frsize < min_free_bytes:
        raise OSError(errno.ENOSPC, f"less than {min_free_bytes >> 20} MiB free", str(root))


def wait_for_spool(
    root: Path, say: Callable[[str], None], *, min_free_bytes: int = 0
) -> SpoolLayout:
    """Block until the spool at ``root`` can be served, then open it (folders made).

    ``say`` hears ``"waiting for the spool: <reason> (<detail>)"`` for each new
    condition, and ``"the spool is back"`` when a wait ends.

    Raises:
        SpoolError: the spool is there but this user cannot write it.
        OSError: an error that waiting does not heal.
    """
    state = FaultState()
    while True:
        try:
            check_spool_once(root, min_free_bytes)
            layout = open_spool(root)
        except OSError as exc:
            reason = wait_reason(exc)
            if reason is None:
                raise
            detail = exc.strerror or str(exc)
            if exc.filename:
                detail = f"{detail}: {exc.filename}"
            if state.hit(reason, time.monotonic()):
                say(f"waiting for the spool: {reason} ({detail})")
            time.sleep(state.backoff_s)
            continue
        if state.clear():
            say("the spool is back")
        return layout
