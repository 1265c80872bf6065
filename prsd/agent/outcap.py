"""A worker's captured stdout and stderr stay under a size: the tail is kept, in two files.

Invariant: while a worker lives (and once more when it exits or the check is
cancelled), each of its ``user/stdout`` and ``user/stderr`` files is checked at every
tick of its watch (:mod:`prsd.agent.workerwatch`, every 0.2 s);
one over ``cap_bytes`` (``PRSD_MAX_CAPTURED_OUTPUT``, default 64 MiB) has its last
``cap_bytes`` copied to ``<file>.1`` (replacing the one before), is truncated to
nothing, and starts again with a line saying that output was cut. ``<file>.1`` never
holds more than ``cap_bytes``, however fast the worker writes while its tail is
copied (the copy starts again at the newest ``cap_bytes`` when more came meanwhile),
and the last check cuts the file itself when the worker is gone: a job printing
without end holds at most ``2 x cap_bytes`` per file once it stopped, and while it
runs, what it writes in one check interval more.

The worker writes through its own descriptor opened with ``O_APPEND``, so after the
truncation its next write lands at the new start. What it wrote during the copy is
copied along (a few rounds); bytes written in the instant between the last round and
the truncation are lost, and the worker's next write may come before the line.

The agent works on the descriptors it opened for the worker (never by path on the
original files), and creates ``.1`` inside the folder it opened, with ``O_EXCL`` and
``O_NOFOLLOW``, owned like the original: a link planted in the job's log folder is
never followed. Errors (a vanished folder, a full disk) skip that check.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

if TYPE_CHECKING:
    from pathlib import Path
    from typing import IO

_CHUNK = 1024 * 1024
_CATCH_UP_ROUNDS = 3


@dataclass
class CapturedFile:
    """One captured stream: its path (for names) and the agent's descriptor on it."""

    path: Path
    fd: int

    @classmethod
    def pair(
        cls, stdout: tuple[Path, IO[bytes]], stderr: tuple[Path, IO[bytes]]
    ) -> list[CapturedFile]:
        """The agent's own descriptors on a worker's stdout and stderr files (duplicated, so
        they outlive the files opened to start the worker)."""
        return [cls(path, os.dup(f.fileno())) for path, f in (stdout, stderr)]


def cut_notice(cap_bytes: int, name: str) -> bytes:
    """The line a truncated file starts with."""
    mib = cap_bytes / 1024**2
    return (
        f"[prsd] output was truncated here: over the {mib:g} MiB cap "
        f"(PRSD_MAX_CAPTURED_OUTPUT); the {mib:g} MiB before this point are in "
        f"{name}.1, anything earlier was dropped\n"
    ).encode()


def rotate_if_over(captured: CapturedFile, cap_bytes: int) -> bool:
    """Copy the tail to ``.1`` and truncate when the file is over ``cap_bytes``."""
    try:
        info = os.fstat(captured.fd)
        if info.st_size <= cap_bytes:
            return False
        _copy_tail(captured, info, cap_bytes)
        os.ftruncate(captured.fd, 0)
        os.write(captured.fd, cut_notice(cap_bytes, captured.path.name))
    except OSError:
        return False
    return True


def _copy_tail(captured: CapturedFile, info: os.stat_result, cap_bytes: int) -> None:
    folder = os.open(captured.path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        name = captured.path.name + ".1"
        try:
            os.unlink(name, dir_fd=folder)
        except FileNotFoundError:
            pass
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        out = os.open(name, flags, 0o644, dir_fd=folder)
    finally:
        os.close(folder)
    try:
        os.fchown(out, info.st_uid, info.st_gid)
        offset, end = info.st_size - cap_bytes, info.st_size
        base = offset
        for _ in range(_CATCH_UP_ROUNDS):  # what the worker wrote meanwhile goes along too
            offset = _copy_range(captured.fd, out, offset, end)
            end = os.fstat(captured.fd).st_size
            if end <= offset:
                break
            if end - base > cap_bytes:  # more came than the cap holds: the newest cap bytes
                base = offset = end - cap_bytes
                os.ftruncate(out, 0)
                os.lseek(out, 0, os.SEEK_SET)
                offset = _copy_range(captured.fd, out, offset, end)  # never left empty
    finally:
        os.close(out)


def _copy_range(src: int, dst: int, offset: int, end: int) -> int:
    """Copy bytes ``[offset, end)`` of ``src`` to ``dst``; return where it stopped."""
    while offset < end:
        data = os.pread(src, min(_CHUNK, end - offset), offset)
        if not data:
            break
        os.write(dst, data)
        offset += len(data)
    return offset


async def check_caps(files: list[CapturedFile], cap_bytes: int) -> None:
    """One check of ``files``: any over ``cap_bytes`` is cut (its tail kept in ``.1``)."""
    for captured in files:
        if _size(captured) > cap_bytes:  # an fstat: cheap enough for every tick
            await anyio.to_thread.run_sync(rotate_if_over, captured, cap_bytes)


async def last_check(files: list[CapturedFile], cap_bytes: int) -> None:
    """The check made when the worker is gone, also when the caller is cancelled (a
    worker that printed fast after the check before must not leave its file over the
    cap); then the descriptors are closed."""
    with anyio.CancelScope(shield=True):
        for captured in files:  # rotate_if_over reports no OSError: never masks one
            await anyio.to_thread.run_sync(rotate_if_over, captured, cap_bytes)
    for captured in files:
        os.close(captured.fd)


def _size(captured: CapturedFile) -> int:
    try:
        return os.fstat(captured.fd).st_size
    except OSError:
        return 0
