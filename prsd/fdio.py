"""Writing a whole buffer to a file descriptor: the one loop that does it.

``os.write`` may write fewer bytes than asked (a signal, a pipe, a full disk on the
way to ENOSPC); every caller that appends a record, a log line or a result must loop
until all of it is written. Standard library only, Python 3.7: workers use it too.
"""

from __future__ import annotations

import os


def write_all(fd: int, data: bytes) -> int:
    """Write all of ``data`` to ``fd``; the number of bytes (OSError propagates)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    return len(data)
