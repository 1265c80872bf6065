"""A FUSE file system whose every look below its top folder hangs (a hung mount).

``python -m tests.hostile.hungfs MOUNT CONTROL`` serves an empty folder at MOUNT
(foreground, multithreaded, ``allow_other``): its top folder answers at once, but a
look at any name in it (``stat``, ``open``) blocks while the file CONTROL exists, then
answers "No such file or directory". This is what a hard-mounted NFS share whose
server went away does to every process that looks under it: the call sleeps in the
kernel, and only a fatal signal ends it.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from typing import Any

import mfusepy as fuse  # type: ignore[import-untyped]  # mfusepy ships no type hints


class HungFS(fuse.Operations):  # type: ignore[misc]  # mfusepy ships no type hints
    """An empty top folder; every name below it hangs while CONTROL exists."""

    def __init__(self, control: str) -> None:
        self.control = control
        self.started = time.time()

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        if path == "/":
            t = self.started
            return {
                "st_mode": stat.S_IFDIR | 0o755,
                "st_nlink": 2,
                "st_uid": 0,
                "st_gid": 0,
                "st_size": 0,
                "st_atime": t,
                "st_mtime": t,
                "st_ctime": t,
            }
        while os.path.exists(self.control):
            time.sleep(0.1)
        raise fuse.FuseOSError(errno.ENOENT)

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", ".."]


def main() -> None:
    mount, control = sys.argv[1:3]
    fuse.FUSE(HungFS(control), mount, foreground=True, nothreads=False, allow_other=True)


if __name__ == "__main__":
    main()
