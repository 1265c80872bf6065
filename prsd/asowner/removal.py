"""Emptying a job owner's folder with the owner's rights (``prsctl gc``).

Promise: :func:`empty_folder` removes everything inside the folder open on a
descriptor, with this process's ids (in the owner-side process: the job owner's), so
the kernel decides what may go: the owner's files and folders go, anything the owner
may not remove stays for the daemons to judge. Nothing is followed: a symlink is
removed itself, a folder is removed with ``shutil.rmtree`` relative to the
descriptor (fd-based, no link followed). Names are never decoded: whatever bytes a
name holds, it is passed back to the kernel as it came.

Errors: none raised for an entry that cannot be removed; the count of entries left
is returned, and the caller says what it could not remove.
"""

from __future__ import annotations

import os
import shutil
import stat

from prsd.spool.listing import names


def empty_folder(dir_fd: int) -> int:
    """Remove the entries of the folder on ``dir_fd``; how many are left."""
    left = 0
    for name in names(dir_fd):
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(name, dir_fd=dir_fd)
            else:
                os.unlink(name, dir_fd=dir_fd)
        except OSError:
            left += 1
    return left
