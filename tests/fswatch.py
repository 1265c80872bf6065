"""A real file-system watch (Linux inotify) for tests of the order files are written in.

:class:`Watch` reports, in the order the kernel saw them, the names renamed into
(``moved``), created in and removed from the folders it watches: an atomic write
(a temporary name renamed into place) shows as one ``moved`` event with the final
name, so the order of a writer's publications is read from the kernel, not guessed
from time stamps.
"""

from __future__ import annotations

import ctypes
import os
import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

IN_CREATE = 0x100
IN_DELETE = 0x200
IN_MOVED_TO = 0x80
IN_CLOSE_WRITE = 0x08
_HEADER = struct.Struct("iIII")
_KINDS = {IN_MOVED_TO: "moved", IN_CREATE: "created", IN_DELETE: "deleted"}

_libc = ctypes.CDLL(None, use_errno=True)


class Watch:
    """Events in the watched folders: (kind, folder, name), oldest first."""

    def __init__(self) -> None:
        self.fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.folders: dict[int, Path] = {}
        self.events: list[tuple[str, Path, str]] = []

    def add(self, folder: Path) -> None:
        wd = _libc.inotify_add_watch(
            self.fd, os.fsencode(folder), IN_MOVED_TO | IN_CREATE | IN_DELETE
        )
        if wd < 0:
            raise OSError(ctypes.get_errno(), "inotify_add_watch", str(folder))
        self.folders[wd] = folder

    def read(self) -> list[tuple[str, Path, str]]:
        """Every event so far (those not read before are appended)."""
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return self.events
            at = 0
            while at < len(data):
                wd, mask, _cookie, size = _HEADER.unpack_from(data, at)
                raw = data[at + _HEADER.size : at + _HEADER.size + size]
                at += _HEADER.size + size
                kind = next((k for bit, k in _KINDS.items() if mask & bit), "")
                if kind and wd in self.folders:
                    self.events.append((kind, self.folders[wd], os.fsdecode(raw.rstrip(b"\0"))))

    def moved(self) -> list[str]:
        """The names renamed into place, in order (folder-relative names)."""
        return [name for kind, _folder, name in self.read() if kind == "moved"]

    def close(self) -> None:
        os.close(self.fd)
