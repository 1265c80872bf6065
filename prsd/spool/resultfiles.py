"""Reading result files from the spool; the records themselves are :mod:`prsd.spool.taskrecords`.

A result file is what one attempt of one task produced on one node::

    <payload of mini-batch a><payload of b>...<metadata JSON><16-byte footer>

The footer is ``b"PRSDRES1"`` and the metadata length (8 bytes, big-endian), so the
leader reads the metadata with two small reads at the end of the file and the merge
copies payload byte ranges without parsing them. A torn or truncated file has no
valid footer and is treated as missing (the attempt's results are not used). The
task and metadata records are defined once, in :mod:`prsd.spool.taskrecords`, the
mini-batch and the outcome they carry in :mod:`prsd.wire.records`.

The job's owner can write in the folder that holds a result file (the worker appends
to it as the owner), so the leader, running as root, reads one by descriptor only:
opened once without following a link, checked to be a regular file, and the payload
later read only from a descriptor proven to be the same file (device and inode).
A link or a swapped file raises :class:`UntrustedResult`: nothing is copied from it.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.errors import SpoolError
from prsd.spool.taskrecords import FOOTER, RESULT_MAGIC, ResultMeta

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["ResultFile", "UntrustedResult", "open_result", "read_result", "read_result_meta"]


class UntrustedResult(SpoolError):
    """A result file that is a link, not a regular file, or not the one read before."""


@dataclass(frozen=True)
class ResultFile:
    """A result file's metadata and the identity (device, inode) it was read from."""

    meta: ResultMeta
    ident: tuple[int, int]


def open_result(path: Path, ident: tuple[int, int] | None = None) -> int | None:
    """A read descriptor on the result file ``path``; None if it is absent.

    Opened once with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat``: a link in
    its place is never followed, a FIFO never blocks, and with ``ident`` the file must be
    the very one (device, inode) an earlier read checked.

    Raises:
        UntrustedResult: a symlink, not a regular file, or another file than ``ident``.
        OSError: any other open error.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UntrustedResult(
                f"result file {path} is a symbolic link, not a file an agent wrote; it was not read"
            ) from None
        raise
    info = os.fstat(fd)
    problem = ""
    if not stat.S_ISREG(info.st_mode):
        problem = "is not a regular file"
    elif ident is not None and (info.st_dev, info.st_ino) != ident:
        problem = "was replaced after the leader read it"
    if problem:
        os.close(fd)
        raise UntrustedResult(f"result file {path} {problem}; it was not read")
    return fd


def read_result(path: Path) -> ResultFile | None:
    """Read a result file's metadata through one descriptor; None if missing, torn or not a result.

    The payload ranges the metadata names are later read from the same file only
    (:func:`open_result` with :attr:`ResultFile.ident`), never from whatever the name
    leads to then.

    Raises:
        UntrustedResult: see :func:`open_result`.
        OSError: a read error other than the file being absent.
    """
    fd = open_result(path)
    if fd is None:
        return None
    try:
        info = os.fstat(fd)
        meta = _read_meta(fd, info.st_size)
    finally:
        os.close(fd)
    if meta is None:
        return None
    return ResultFile(meta, (info.st_dev, info.st_ino))


def read_result_meta(path: Path) -> ResultMeta | None:
    """The metadata of a result file (see :func:`read_result`); None if missing or torn.

    Raises:
        UntrustedResult: see :func:`open_result`.
        OSError: a read error other than the file being absent.
    """
    found = read_result(path)
    return found.meta if found is not None else None


def _read_meta(fd: int, size: int) -> ResultMeta | None:
    if size < FOOTER.size:
        return None
    magic, meta_len = FOOTER.unpack(os.pread(fd, FOOTER.size, size - FOOTER.size))
    if magic != RESULT_MAGIC or meta_len > size - FOOTER.size:
        return None
    meta = os.pread(fd, meta_len, size - FOOTER.size - meta_len)
    try:
        result = ResultMeta.decode(meta)
    except (ValueError, KeyError, TypeError):
        return None
    payload_end = size - FOOTER.size - len(meta)
    if any(o.offset + o.length > payload_end for o in result.outcomes):
        return None
    return result
