"""The operations on a job's output files, done with the rights of whoever runs them.

Promise: each function acts with this process's own ids, so run in the owner-side
process (:mod:`prsd.asowner.server`) the kernel's permission checks for the job's
owner decide, never root's:

- :func:`open_output` walks to the output folder from its anchor one component at a
  time without following a link (:func:`prsd.spool.dirfd.open_under`), making the
  missing ones (mode 0755, so the owner's folder in someone else's private folder
  cannot be made), and creates the temp file ``O_CREAT | O_EXCL | O_NOFOLLOW`` in it;
  it returns both descriptors. The caller writes the output through the file's.
- :func:`publish` renames the temp file to its final name relative to the folder's
  descriptor, after checking that the path still leads to that folder; the rename is
  the owner's, so a folder or a file the owner may not replace stays as it is.
- :func:`discard` unlinks the temp file (abandoned job).
- :func:`make_folder` makes a folder the job's script writes into (a named folder
  output under the job's ``outputs/``), walking and making as :func:`open_output`.
- :func:`open_read` opens a file to read (a kept result of an earlier job) with
  ``O_NOFOLLOW | O_NONBLOCK`` and checks it is a regular file.

Errors: every refusal is :class:`OwnerOpError` (a :class:`PrsdError`) naming the path
and the errno, e.g. ``cannot create /mnt/data/carol/private: Permission denied
[EACCES]``; nothing is left behind by a refused call.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.spool.atomic import rename_at
from prsd.spool.dirfd import UnsafeFolder, open_under, same_folder

if TYPE_CHECKING:
    from collections.abc import Sequence

FOLDER_MODE = 0o755
FILE_MODE = 0o644
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class OwnerOpError(PrsdError):
    """An operation on a user's file was refused (by the kernel, or as unsafe)."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


def refusal(what: str, path: str | Path, exc: OSError) -> OwnerOpError:
    """One line naming the path, why, and the errno's name."""
    name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return OwnerOpError(f"cannot {what} {path}: {exc.strerror or exc} [{name}]", exc.errno or 0)


def _where(anchor: str, parts: Sequence[str]) -> str:
    return "/".join([anchor.rstrip("/"), *parts])


def _folder(anchor: str, parts: Sequence[str], *, create: bool) -> int:
    try:
        return open_under(Path(anchor), parts, create_mode=FOLDER_MODE if create else None)
    except UnsafeFolder as exc:
        cause = exc.__context__
        code = cause.errno if isinstance(cause, OSError) and cause.errno else 0
        name = f" [{errno.errorcode.get(code, code)}]" if code else ""
        raise OwnerOpError(exc.one_line() + name, code) from None


def open_output(anchor: str, parts: Sequence[str], tmp: str, *, create: bool) -> tuple[int, int]:
    """(folder descriptor, temp file descriptor) of a new output under ``anchor/parts``.

    Raises:
        OwnerOpError: a folder on the way is a link, missing (and not to be made), or
            cannot be made or entered; or the temp file cannot be created.
    """
    dir_fd = _folder(anchor, parts, create=create)
    try:
        fd = os.open(tmp, _CREATE, FILE_MODE, dir_fd=dir_fd)
    except OSError as exc:
        os.close(dir_fd)
        raise refusal("create a file in", _where(anchor, parts), exc) from None
    return dir_fd, fd


def make_folder(anchor: str, parts: Sequence[str]) -> None:
    """Make ``anchor/parts`` (and the missing folders on the way); one already there is kept.

    Raises:
        OwnerOpError: a folder on the way is a link or not a folder, or cannot be made.
    """
    os.close(_folder(anchor, parts, create=True))


def publish(
    dir_fd: int, anchor: str, parts: Sequence[str], tmp: str, final: str, *, durable: bool
) -> None:
    """Rename ``tmp`` to ``final`` in the folder on ``dir_fd``, if the path still leads there.

    Raises:
        OwnerOpError: the folder was replaced meanwhile, or the rename was refused.
    """
    where = _where(anchor, parts)
    again = _folder(anchor, parts, create=False)
    try:
        if not same_folder(again, dir_fd):
            raise OwnerOpError(
                f"{where} was replaced while the job ran; the output was not published"
            )
        rename_at(tmp, final, dir_fd, durable=durable)
    except OSError as exc:
        raise refusal("write", f"{where}/{final}", exc) from None
    finally:
        os.close(again)


def discard(dir_fd: int, tmp: str) -> None:
    """Remove the temp file (already gone: nothing to do).

    Raises:
        OwnerOpError: the unlink was refused.
    """
    try:
        os.unlink(tmp, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise refusal("remove", tmp, exc) from None


def open_read(path: str) -> int:
    """A read descriptor on the regular file ``path`` (no link followed at its end).

    Raises:
        OwnerOpError: missing, a link, not a regular file, or not readable.
    """
    try:
        fd = os.open(path, _READ)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OwnerOpError(f"{path} is a symbolic link; prsd does not follow it") from None
        raise refusal("read", path, exc) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OwnerOpError(f"{path} is not a regular file")
    return fd
