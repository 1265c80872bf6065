"""The append_row bytes of consecutive mini-batches, appended to the agent's ``out`` file.

Invariant: every byte in the file belongs to exactly one reported ``(offset, length)``
of a succeeded append. Writes are unbuffered ``O_APPEND`` writes, so nothing of a
mini-batch stays in a buffer after its ``done`` (the agent reads the file while the
worker keeps it open); a write that fails halfway is cut off again (``ftruncate``),
so a later mini-batch's offset never points past garbage.

Standard library only, Python 3.7 syntax.
"""

from __future__ import annotations

import os

from prsd.fdio import write_all

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)


class AppendFile:
    """One open ``out`` file at a time, kept open across ``run`` frames that share it."""

    def __init__(self) -> None:
        self.path: str | None = None
        self._fd: int | None = None

    def append(self, path: str, data: bytes) -> tuple[int, int]:
        """Append ``data`` to ``path``; return ``(offset, length)`` of the bytes written.

        Raises:
            OSError: the file cannot be opened or written (nothing of ``data`` stays).
        """
        fd = self._open(path)
        offset = os.fstat(fd).st_size
        try:
            write_all(fd, data)
        except BaseException:
            # Cut off a partial write (also when interrupted), then let it propagate.
            os.ftruncate(fd, offset)
            raise
        return offset, len(data)

    def close(self) -> None:
        """Close the open file, if any."""
        fd, self._fd, self.path = self._fd, None, None
        if fd is not None:
            os.close(fd)

    def _open(self, path: str) -> int:
        if self._fd is not None and self.path == path:
            return self._fd
        self.close()
        self._fd = os.open(path, _FLAGS, 0o644)
        self.path = path
        return self._fd
