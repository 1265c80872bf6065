"""Sealing a job folder at intake: the daemons own ``jobs/<id>/``, the owner is on record.

Invariant: once :func:`seal_job_root` returns, ``jobs/<id>/`` belongs to the daemons'
uid with mode 0711, so the job's owner can reach the files they own inside it but can
no longer create, rename, replace or delete any entry of the job root; the owner is
the one the folder had when it left ``inbox/`` (read from the same descriptor that was
then changed: no name is looked up twice). Everything is done through one descriptor
opened with ``O_DIRECTORY | O_NOFOLLOW``: a link in place of the folder is refused,
never followed.

The entries the daemons write themselves (:data:`RESERVED`) must not exist when the
folder is sealed: the listing taken *after* the change of owner is final (the owner
can no longer add names), and :func:`planted_names` picks the ones the submitter left
there. The caller moves those aside before it writes anything, so a planted ``logs``
symlink or a forged ``state/`` is never written through or believed.

Privacy (:func:`make_job_folders`): the daemons' folders inside are created with the
modes that let the owner read, and nobody else (docs/security.md, "Privacy of a job's
files"); ``state/`` stays readable by all for the status row.

Errors: :class:`SealError` when the folder cannot be opened or taken over (a link, or
a file system that refuses ``fchown`` to root, such as NFS with ``root_squash``).
Without root the change of owner is skipped: in a user's own ``prsd run`` the owner
and the daemons are the same user, and everything works as it did.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.errors import SpoolError
from prsd.spool.atomic import move_verified
from prsd.spool.jobowner import JobOwner, user_name

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

ROOT_MODE = 0o711
"""Everyone may pass through (``state/status.json`` is every user's status row); nobody
but the daemons may list, add, rename or remove."""

RESERVED = frozenset(
    {"spec.json", "owner.json", "state", "tasks", "results", "nodes", "logs", "work"}
    | {"partitions"}  # the leader's spilled key groups (prsd/inputsplit/planner.py)
)
"""Names of the job root that only the daemons create (prsd/spool/layout.py)."""

OWNER_FOLDERS = frozenset({"outputs"})
"""Folders the job itself writes: a submitted one is kept if it is a real folder."""

CANCEL_NAME = "cancel"

PUBLIC_FOLDERS = ("state", "nodes")
"""Daemon folders every user may read: the status row, the nodes' views of the job."""
GATE_FOLDERS = ("logs", "results", "tasks", "work")
"""Daemon folders only the daemons and the job's group may enter (mode 0750)."""
GATE_MODE = 0o750
OWNER_MODE = 0o700
SPEC_MODE = 0o640


class SealError(SpoolError):
    """The job folder could not be taken over by the daemons; nothing was written in it."""


@dataclass(frozen=True)
class Entry:
    """One name in the job root as listed after sealing (``lstat``: links not followed)."""

    name: str
    is_dir: bool
    is_link: bool = False

    @property
    def kind(self) -> str:
        """``a symlink``, ``a folder`` or ``a file`` (anything else), for messages."""
        return "a symlink" if self.is_link else "a folder" if self.is_dir else "a file"


@dataclass(frozen=True)
class Sealed:
    """A sealed job root: its recorded owner and what the listing after sealing held."""

    owner: JobOwner
    entries: tuple[Entry, ...]


def planted_names(entries: Iterable[Entry]) -> list[str]:
    """Reserved names present in a submitted folder, sorted (pure).

    ``outputs`` is accepted when it is a real folder (results of an earlier run, or
    the user's own files), refused when it is a link or a file.
    """
    return sorted(
        e.name
        for e in entries
        if e.name in RESERVED or (e.name in OWNER_FOLDERS and (e.is_link or not e.is_dir))
    )


def seal_job_root(root: Path) -> Sealed:
    """Record the owner of ``root``, give it to the daemons (mode 0711), list it again.

    Raises:
        SealError: ``root`` is a link or not a folder, or its owner cannot be changed.
    """
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise SealError(f"cannot open the job folder {root}: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        owner = JobOwner(info.st_uid, info.st_gid, user_name(info.st_uid))
        me = os.geteuid()
        try:
            if me == 0:
                os.fchown(fd, 0, os.getegid())
            if me in (0, info.st_uid):
                os.fchmod(fd, ROOT_MODE)
        except OSError as exc:
            raise SealError(
                f"cannot give the job folder {root} to the daemons: {exc.strerror} (the "
                "leader needs CAP_CHOWN, and root must keep its rights on the spool's "
                "file system: no root_squash)"
            ) from exc
        with os.scandir(fd) as listing:
            entries = tuple(
                Entry(e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in listing
            )
    finally:
        os.close(fd)
    return Sealed(owner, entries)


def make_private(root: Path, sealed: Sealed) -> None:
    """Take the others' rights from the owner's submitted files and folders at the top.

    Only regular files and folders the owner owns are changed, each through a
    descriptor opened with ``O_NOFOLLOW`` (links and special files are left alone);
    what lies deeper is reached only through these.
    """
    for entry in sealed.entries:
        if entry.is_link or entry.name in RESERVED:
            continue
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        flags |= os.O_DIRECTORY if entry.is_dir else 0
        try:
            fd = os.open(root / entry.name, flags)
        except OSError:
            continue  # gone, a FIFO's open refused, or unreadable: nothing to expose
        try:
            info = os.fstat(fd)
            kind_ok = stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)
            if kind_ok and info.st_uid == sealed.owner.uid and info.st_mode & 0o007:
                os.fchmod(fd, stat.S_IMODE(info.st_mode) & ~0o007)
        except OSError:
            pass  # not ours to change (a non-root leader): it keeps the modes it was given
        finally:
            os.close(fd)


def only_cancel_inside(folder: Path) -> bool:
    """True when ``folder`` is a real folder holding just a regular file ``cancel``.

    That is what ``prsctl cancel`` leaves in a job still waiting in ``inbox/``.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        with os.scandir(fd) as listing:
            entries = [(e.name, e.is_file(follow_symlinks=False)) for e in listing]
    finally:
        os.close(fd)
    return entries == [(CANCEL_NAME, True)]


def make_job_folders(root: Path, owner: JobOwner) -> None:
    """Create the daemons' folders of a sealed job root with their owners and modes.

    ``state/`` and ``nodes/`` (0755) belong to the daemons and are readable by all;
    ``logs/``, ``results/``, ``tasks/`` and ``work/`` (0750) belong to the daemons with
    the job's group (the submitted folder's, the owner's own group by default), so the
    owner reads them and nobody else does; ``outputs/`` (0700) is the owner's.

    Raises:
        OSError: a folder cannot be made (the spool is full or unwritable).
    """
    root_user = os.geteuid() == 0
    for name in PUBLIC_FOLDERS:
        _make(root / name, 0o755, (-1, -1))
    for name in GATE_FOLDERS:
        _make(root / name, GATE_MODE, (-1, owner.gid) if root_user else (-1, -1))
    _make(root / "outputs", OWNER_MODE, (owner.uid, owner.gid) if root_user else (-1, -1))


def restrict_to_job(path: Path, owner: JobOwner) -> None:
    """Give a file the daemons wrote (``spec.json``) the job's group, mode 0640."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.geteuid() == 0:
            os.fchown(fd, -1, owner.gid)
        os.fchmod(fd, SPEC_MODE)
    finally:
        os.close(fd)


def _make(folder: Path, mode: int, ids: tuple[int, int]) -> None:
    """Create ``folder`` (or keep the real folder already there) with ``ids`` and ``mode``.

    A new folder is made under a name of its own, given its owner and mode, and only
    then renamed into place: made at its name with 0700 and opened up after, it was
    briefly unreadable to the job's owner, and a ``prsctl status`` run right after the
    submit read ``nodes/`` in that moment and failed (permission denied)."""
    if not os.path.lexists(folder):
        aside = folder.with_name(f".{folder.name}-{os.getpid()}-{secrets.token_hex(4)}")
        os.mkdir(aside, 0o700)
        _set(aside, mode, ids)
        if move_verified(aside, folder) and not os.path.lexists(aside):
            return
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(aside)  # made meanwhile (a resumed intake): that one is kept, as below
    _set(folder, mode, ids)


def _set(folder: Path, mode: int, ids: tuple[int, int]) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        me = os.geteuid()
        if me in (0, os.fstat(fd).st_uid):
            os.fchmod(fd, mode)
        if ids != (-1, -1):
            os.fchown(fd, *ids)
    finally:
        os.close(fd)
