"""Opening an input file to plan it: never blocking, never anything but a regular file.

Promise: :func:`open_input` opens with ``O_NONBLOCK`` (a FIFO's ``open`` returns at
once instead of waiting for a writer; a device is not waited on either) and
``O_CLOEXEC``, then ``fstat``\\ s the descriptor, never the name, and refuses anything
that is not a regular file. What is read afterwards is read from that descriptor,
so a name replaced after the check is never read. :func:`input_file` wraps the
descriptor as a binary file object for pyarrow and pandas (reads block as for any
file: ``O_NONBLOCK`` is cleared once the descriptor is known to be a regular file).

Errors: :class:`~prsd.errors.InputError` naming the path and what it is (a FIFO, a
socket, a device, a folder); ``OSError`` when it cannot be opened (the planner turns
that into the job's "cannot read input" error, naming the path).
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from prsd.errors import InputError

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words, for a refusal."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "not a regular file"


def open_input(path: str) -> int:
    """A descriptor on regular file ``path``, opened without blocking.

    Raises:
        InputError: ``path`` is a FIFO, socket, device or folder.
        OSError: it cannot be opened (missing, permission denied).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(
                f"input {path} is {kind_of(info.st_mode)}, not a regular file; it is not read"
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def input_file(path: str) -> BinaryIO:
    """:func:`open_input` as a binary file object (closed with it)."""
    return os.fdopen(open_input(path), "rb")


def input_size(path: str) -> int:
    """The size of regular file ``path``, from its descriptor (see :func:`open_input`)."""
    fd = open_input(path)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)
