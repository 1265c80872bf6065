"""The only place that renames or replaces files in the spool.

Invariants:
- A reader never sees a partial file: content is written aside in the *same*
  directory (``.tmp-...``, a dot name every lister skips), flushed, and renamed over
  the final name. rename(2) is atomic within one file system and needs no lock.
- A rename that reports an error may still have happened (rename(2), BUGS: "On NFS
  filesystems, you can not assume that if the operation failed, the file was not
  renamed"; reproduced on sshfs under connection loss). So every exclusive move
  (:func:`move_verified`) checks its destination with a *fresh listing* of the
  destination directory before it concludes it lost: opening a directory
  revalidates it under NFS close-to-open, while a bare ``stat()`` may be answered
  from the negative dentry cache. This only works because every destination name
  is unique to its mover (claims go to ``claimed/<node>/``).
- ``durable=True`` adds fsync of the file before the rename and of the directory
  after it, so the write survives a machine crash, not just a process crash. Close
  alone already publishes the data to other NFS clients (close-to-open). A writer of
  several files into one directory may flush the directory once after the last
  rename (``sync_folder=False``, then :func:`fsync_dir`): each file's content is
  still on stable storage before its name is visible.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

from prsd.fdio import write_all

TMP_PREFIX = ".tmp-"


def tmp_path_for(path: Path) -> Path:
    """A fresh, hidden temp name beside ``path`` (same directory, so same file system)."""
    return path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}-{secrets.token_hex(4)}")


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (new names, renames) to stable storage."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError as exc:  # some FUSE file systems refuse fsync on directories
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """Flush every file and folder under ``root`` (files first, then their folders).

    Call it on a folder written aside before the rename that publishes it (a
    submitted job): after a machine crash the published folder must not hold empty
    or short files. Symbolic links are not followed.

    Raises:
        OSError: a file cannot be opened or flushed.
    """
    for folder, _dirs, files in os.walk(root, topdown=False):
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(folder))


def write_atomic(
    path: Path, data: bytes, *, durable: bool = True, mode: int = 0o644, sync_folder: bool = True
) -> None:
    """Write ``data`` to ``path`` so that readers see the old or the new file, never a mix.

    ``mode`` (before the umask) is the new file's from its creation on: a private file
    is never readable by others, not even for a moment. ``durable`` with
    ``sync_folder=False``: the file is flushed before its rename, its folder is left
    for the caller to flush (:func:`fsync_dir`) once after several writes.

    Raises:
        OSError: the directory is missing or not writable, or the disk is full; the
            temp file is removed and ``path`` is unchanged.
    """
    tmp = tmp_path_for(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        write_all(fd, data)
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    if durable and sync_folder:
        fsync_dir(path.parent)


def publish(tmp: Path, path: Path, *, durable: bool = True) -> None:
    """Rename a finished temp file (written by someone else, closed) onto ``path``.

    Raises:
        OSError: the rename failed; ``tmp`` is left for inspection.
    """
    if durable:
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def listed(path: Path) -> bool:
    """True when ``path``'s name appears in a fresh listing of its directory."""
    try:
        with os.scandir(path.parent) as it:
            return any(entry.name == path.name for entry in it)
    except FileNotFoundError:
        return False


def move_verified(src: Path, dst: Path) -> bool:
    """Move ``src`` to ``dst`` (a name only this caller ever uses); True if it moved.

    Any error (ENOENT from a lost race, EIO, ESTALE, EPERM, a timeout) is answered
    by looking for ``dst`` in a fresh listing: present means the move happened,
    absent means another mover won or nothing happened. Either way ``src`` is no
    longer ours to touch.
    """
    try:
        os.rename(src, dst)
    except FileNotFoundError:
        # The common loser's answer. On NFS a retransmitted rename that had already
        # happened also answers ENOENT, so check before concluding.
        return listed(dst)
    except OSError:
        return listed(dst)
    return True


def move_out_verified(src_dir_fd: int, name: str, dst: Path) -> bool:
    """Move the entry ``name`` of the folder open on ``src_dir_fd`` to ``dst``; True if it moved.

    As :func:`move_verified`, but the source is reached through a descriptor (see
    :mod:`prsd.spool.dirfd`), so no link on its way is followed.
    """
    try:
        os.rename(name, dst, src_dir_fd=src_dir_fd)
    except OSError:
        return listed(dst)
    return True


def create_exclusive(path: Path, data: bytes) -> bool:
    """Create ``path`` with ``data`` only if it does not exist (O_EXCL); True if we made it.

    On an error other than a clean EEXIST the file is read back: if it holds exactly
    ``data`` (which must name the creator), the create happened. A file created whose
    content cannot be written (ENOSPC) is removed again and the error raised.

    Raises:
        OSError: the content could not be written.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    except OSError:
        try:
            return path.read_bytes() == data
        except OSError:
            return False
    try:
        if os.write(fd, data) < len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        os.fsync(fd)
    except OSError:
        # A create whose content could not be written (a full disk: the inode took no
        # block) is undone, so an empty file never stands for a reservation or a lease.
        os.close(fd)
        _unlink_quietly(path)
        raise
    os.close(fd)
    return True


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def rename_at(src_name: str, dst_name: str, dir_fd: int, *, durable: bool = True) -> None:
    """Rename ``src_name`` to ``dst_name`` inside the folder open on ``dir_fd``.

    Both names are single components relative to the descriptor (see
    :mod:`prsd.spool.dirfd`): the rename happens in that very folder, whatever its
    path leads to meanwhile. ``dst_name`` is replaced if it exists (a link there is
    replaced itself, never followed).

    Raises:
        OSError: the rename failed (``src_name`` is left in place).
    """
    os.rename(src_name, dst_name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    if durable:
        try:
            os.fsync(dir_fd)
        except OSError as exc:  # some FUSE file systems refuse fsync on directories
            if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
                raise
