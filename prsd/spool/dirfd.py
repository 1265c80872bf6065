"""Opening a folder under a trusted anchor without following a link on the way.

Invariant: :func:`open_under` returns a descriptor on the folder ``anchor/p1/p2/...``
reached one component at a time with ``openat(O_DIRECTORY | O_NOFOLLOW)`` from the
anchor's own descriptor, so no component below the anchor can be a symlink and no
name is looked up twice: what the caller then creates or renames relative to the
descriptor lands in that very folder, whatever is renamed or linked meanwhile. Only
the anchor is opened by name and may be reached through links: it is a folder the
daemons own or were configured with (a job's folder in the spool, an allowed root).
A folder its opener may enter but not list (a job's folder, mode 0711, opened by the
job's owner) is opened ``O_PATH``: good for every ``*at`` call below it, and for
``fstat``.

Checked after open, never before: the type (``O_DIRECTORY``) and, on request, the
folder's owner (:func:`check_owner`), so root never writes into a folder that belongs
to someone other than the job's owner or the daemons.

Errors: every refusal is :class:`UnsafeFolder` (a :class:`SpoolError`) naming the
path, the component and why, so the caller fails the one job concerned.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING

from prsd.errors import SpoolError

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_PATH_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


def _open_dir(name: str | Path, flags: int, dir_fd: int | None = None) -> int:
    """Open a folder to read, or only to reach below it when it may not be listed."""
    try:
        return os.open(name, _DIR_FLAGS | flags, dir_fd=dir_fd)
    except PermissionError:
        return os.open(name, _PATH_FLAGS | flags, dir_fd=dir_fd)


class UnsafeFolder(SpoolError):
    """A folder on the way is a link, not a folder, missing, or someone else's."""


def open_under(
    anchor: Path,
    parts: Sequence[str],
    *,
    create_mode: int | None = None,
    owner: tuple[int, int] | None = None,
) -> int:
    """A descriptor on ``anchor/parts...``, no link followed below ``anchor``.

    Args:
        anchor: a trusted folder (opened by name).
        parts: the folder names below it, one per component.
        create_mode: create missing folders with this mode (None: refuse them).
        owner: (uid, gid) given to folders this call creates.

    Raises:
        UnsafeFolder: a component is a link, not a folder, missing (and not created),
            or a name such as ``..``; or the anchor cannot be opened.
    """
    try:
        fd = _open_dir(anchor, 0)
    except OSError as exc:
        raise UnsafeFolder(f"cannot open {anchor}: {exc.strerror}") from None
    for i, part in enumerate(parts):
        where = "/".join([str(anchor).rstrip("/"), *parts[: i + 1]])
        try:
            if part in ("", ".", "..") or "/" in part:
                raise UnsafeFolder(f"{where}: {part!r} is not a folder name")
            child = _open_child(fd, part, where, create_mode, owner)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        fd = child
    return fd


def _open_child(
    fd: int, name: str, where: str, create_mode: int | None, owner: tuple[int, int] | None
) -> int:
    try:
        return _open_dir(name, os.O_NOFOLLOW, fd)
    except FileNotFoundError:
        if create_mode is None:
            raise UnsafeFolder(f"{where} does not exist") from None
    except OSError as exc:
        raise _refusal(exc, fd, name, where) from None
    try:
        os.mkdir(name, create_mode, dir_fd=fd)
        if owner is not None:
            os.chown(name, *owner, dir_fd=fd, follow_symlinks=False)
    except FileExistsError:
        pass  # made meanwhile: opened (and checked) below like any other
    except OSError as exc:
        raise UnsafeFolder(f"cannot create {where}: {exc.strerror}") from None
    try:
        return _open_dir(name, os.O_NOFOLLOW, fd)
    except OSError as exc:
        raise _refusal(exc, fd, name, where) from None


def _refusal(exc: OSError, fd: int, name: str, where: str) -> UnsafeFolder:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        # Linux answers ENOTDIR for a link under O_DIRECTORY: say which it was.
        try:
            link = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            link = exc.errno == errno.ELOOP
        if link:
            return UnsafeFolder(f"{where} is a symbolic link; prsd does not follow it")
        return UnsafeFolder(f"{where} is not a folder")
    return UnsafeFolder(f"cannot open {where}: {exc.strerror}")


def check_owner(fd: int, where: Path, uids: Collection[int]) -> None:
    """Refuse the folder open on ``fd`` unless one of ``uids`` owns it.

    Raises:
        UnsafeFolder: naming the folder, its owner and the owners accepted.
    """
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeFolder(f"{where} is not a folder")
    if info.st_uid not in uids:
        accepted = ", ".join(str(u) for u in sorted(uids))
        raise UnsafeFolder(
            f"{where} belongs to uid {info.st_uid}, not to the job's owner or the daemons "
            f"(uid {accepted}); nothing was written there"
        )


def same_folder(a: int, b: int) -> bool:
    """True when two descriptors are on the same folder (device and inode)."""
    sa, sb = os.fstat(a), os.fstat(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)
