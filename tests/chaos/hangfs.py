"""A FUSE passthrough that hangs chosen operations of chosen processes (a partial outage).

``python -m tests.chaos.hangfs BACKING MOUNT CONTROL`` serves BACKING at MOUNT
(foreground, multithreaded: one hung call does not stop the others). Every rename
reads CONTROL, a JSON object ``{"op": "rename", "name": "status.json", "pid": 123}``:
a rename whose destination's last component is ``name`` (or ends with ``suffix``, when
the rule names one instead), called by process ``pid`` (any thread of it), blocks
until CONTROL no longer says so, then happens. An empty or
missing CONTROL blocks nothing. This is what a hard-mounted NFS or Lustre client does
to one process while the rest of the machine goes on.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import time
from typing import Any

import mfusepy as fuse  # type: ignore[import-untyped]  # mfusepy ships no type hints


def _blocked(control: str, op: str, path: str) -> bool:
    try:
        with open(control, encoding="utf-8") as f:
            rule = json.load(f)
    except (OSError, ValueError):
        return False
    if not isinstance(rule, dict) or rule.get("op") != op:
        return False
    base = os.path.basename(path)
    suffix = rule.get("suffix")
    if base != rule.get("name") and not (suffix and base.endswith(suffix)):
        return False
    _, _, pid = fuse.fuse_get_context()
    return _tgid(pid) == rule.get("pid")


def _tgid(pid: int) -> int:
    """The process (thread group) of thread ``pid``."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Tgid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return pid


class HangFS(fuse.Operations):  # type: ignore[misc]  # mfusepy ships no type hints
    """Passthrough of BACKING; renames hang while CONTROL says so."""

    def __init__(self, root: str, control: str) -> None:
        self.root = root
        self.control = control

    def _p(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except OSError as exc:
            raise fuse.FuseOSError(exc.errno or errno.EIO) from None

    def access(self, path: str, amode: int) -> int:
        if not os.access(self._p(path), amode):
            raise fuse.FuseOSError(errno.EACCES)
        return 0

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        st = self._call(os.lstat, self._p(path))
        keys = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_ino")
        out = {k: getattr(st, k) for k in keys}
        out.update(st_atime=st.st_atime, st_mtime=st.st_mtime, st_ctime=st.st_ctime)
        return out

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *self._call(os.listdir, self._p(path))]

    def readlink(self, path: str) -> str:
        return str(self._call(os.readlink, self._p(path)))

    def mkdir(self, path: str, mode: int) -> int:
        self._call(os.mkdir, self._p(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        self._call(os.rmdir, self._p(path))
        return 0

    def unlink(self, path: str) -> int:
        self._call(os.unlink, self._p(path))
        return 0

    def symlink(self, target: str, source: str) -> int:
        self._call(os.symlink, source, self._p(target))
        return 0

    def link(self, target: str, source: str) -> int:
        self._call(os.link, self._p(source), self._p(target))
        return 0

    def rename(self, old: str, new: str) -> int:
        while _blocked(self.control, "rename", new):
            time.sleep(0.1)
        self._call(os.rename, self._p(old), self._p(new))  # noqa: TID251 - the file system's own rename
        return 0

    def chmod(self, path: str, mode: int) -> int:
        self._call(os.chmod, self._p(path), mode)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        self._call(os.lchown, self._p(path), uid, gid)
        return 0

    def utimens(self, path: str, times: tuple[float, float] | None = None) -> int:
        # UTIME_NOW / UTIME_OMIT arrive as tv_sec 0 with a special tv_nsec: "now"
        if times is None or min(times) < 1e6:
            self._call(os.utime, self._p(path))
        else:
            self._call(lambda p: os.utime(p, times), self._p(path))
        return 0

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        if fh is not None:
            self._call(os.ftruncate, fh, length)
        else:
            self._call(os.truncate, self._p(path), length)
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        st = self._call(os.statvfs, self._p(path))
        keys = (
            "f_bavail f_bfree f_blocks f_bsize f_favail f_ffree f_files f_flag f_frsize f_namemax"
        )
        return {k: getattr(st, k) for k in keys.split()}

    def open(self, path: str, flags: int) -> int:
        return int(self._call(os.open, self._p(path), flags))

    def create(self, path: str, mode: int, flags: int) -> int:
        return int(self._call(os.open, self._p(path), flags | os.O_CREAT, mode))

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return bytes(self._call(os.pread, fh, size, offset))

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        return int(self._call(os.pwrite, fh, data, offset))

    def flush(self, path: str, fh: int) -> int:
        return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        self._call(os.fsync, fh)
        return 0

    def release(self, path: str, fh: int) -> int:
        self._call(os.close, fh)
        return 0


def main() -> None:
    backing, mount, control = sys.argv[1:4]
    fuse.FUSE(
        HangFS(backing, control),
        mount,
        foreground=True,
        nothreads=False,
        allow_other=True,
        default_permissions=True,
    )


if __name__ == "__main__":
    main()
