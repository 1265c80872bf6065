"""Who a job's workers run as: the owner of the job folder, never more.

The model (docs/security.md):

- An agent running as root runs a job's workers as the user and group the leader
  recorded at intake (``jobs/<id>/owner.json``: the owner of the folder the user
  submitted), with that user's supplementary groups. Root only when root owns the
  job. A job without a valid record is not run.
- An agent running as another user runs workers as itself, and only for jobs that
  user owns, unless ``PRSD_RUN_OTHERS_JOBS=1`` says otherwise (then still as itself).
- The files and folders the agent makes for a worker (working folder, log files, the
  result file the worker appends to) are handed to the owner before the worker
  starts, so every file the job writes in the spool carries the owner's ids.
- Nothing here follows a symlink: the job folder is looked at with ``lstat``, the
  record is read with ``O_NOFOLLOW`` and ownership is changed with ``lchown`` semantics.

:func:`decide` is pure; the rest reads the user database and changes ownership.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.spool.dirfd import UnsafeFolder, open_under
from prsd.spool.jobowner import OwnerRecordError, owner

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from prsd.spool.layout import JobLayout

WORKER_UMASK = 0o022
ALLOW_OTHERS_ENV = "PRSD_RUN_OTHERS_JOBS"


class JobOwnerRefused(PrsdError, PermissionError):
    """This agent may not run the job's workers (owned by someone else, or a symlink).

    A PermissionError too, so a worker that cannot be started for this reason fails
    the way any worker that cannot be started does: with this message in the job's logs.
    """


@dataclass(frozen=True)
class RunAs:
    """The identity a worker gets: ``uid``, primary ``gid``, supplementary ``groups``."""

    uid: int
    gid: int
    groups: tuple[int, ...]
    name: str

    def ids(self) -> tuple[int, int, list[int]]:
        """``(uid, gid, supplementary groups)``, as ``subprocess`` takes them."""
        return self.uid, self.gid, list(self.groups)

    def spawn_args(self) -> dict[str, object]:
        """Keyword arguments for ``spawn_worker`` / ``anyio.open_process``."""
        return {"user": self.uid, "group": self.gid, "extra_groups": list(self.groups)}


@dataclass(frozen=True)
class Decision:
    """What to do about one job: ``switch`` to its owner, run as ``self``, or ``refuse``."""

    action: str  # "switch" | "self" | "refuse"
    reason: str = ""


def decide(owner_uid: int, service_uid: int, *, allow_others: bool) -> Decision:
    """Whose identity a job's workers get (pure).

    Args:
        owner_uid: the uid owning the job folder.
        service_uid: the agent's own uid.
        allow_others: a non-root agent may run jobs of other users (as itself).
    """
    if service_uid == 0:
        return Decision("switch") if owner_uid != 0 else Decision("self")
    if owner_uid == service_uid or allow_others:
        return Decision("self")
    return Decision(
        "refuse",
        f"the job folder belongs to uid {owner_uid} but this agent runs as uid {service_uid} "
        f"and cannot run it as its owner; run the agent as root, or set {ALLOW_OTHERS_ENV}=1 "
        "to run others' jobs as the agent's user",
    )


def allow_others_from_env(env: Mapping[str, str] | None = None) -> bool:
    """``PRSD_RUN_OTHERS_JOBS=1`` (the systemd environment file)."""
    value = (os.environ if env is None else env).get(ALLOW_OTHERS_ENV, "")
    return value.strip().lower() in ("1", "yes", "true")


def identity(uid: int, gid: int) -> RunAs:
    """``uid`` with primary group ``gid`` and the user's supplementary groups.

    A uid without a password entry (a folder owned by a deleted user) gets no
    supplementary groups, and runs with just its uid and gid.
    """
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        return RunAs(uid, gid, (), str(uid))
    groups = set(os.getgrouplist(entry.pw_name, entry.pw_gid))
    return RunAs(uid, gid, tuple(sorted(groups)), entry.pw_name)


def group_name(gid: int) -> str:
    """The name of ``gid`` (the number when it has none), for messages."""
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def run_as_for_job(layout: JobLayout, *, allow_others: bool | None = None) -> RunAs | None:
    """The identity for the workers of a job; None: keep the agent's own.

    The owner is the one the leader recorded at intake (``owner.json``), never the
    current owner of a file or folder the job's owner could change.

    Raises:
        JobOwnerRefused: the job folder is a symlink or not a folder, the job has no
            valid owner record, or it belongs to another user and this non-root agent
            is not configured to run it.
    """
    info = os.lstat(layout.root)
    if not stat.S_ISDIR(info.st_mode):
        raise JobOwnerRefused(f"{layout.root} is not a folder (a symlink?); the job is not run")
    try:
        recorded = owner(layout)
    except OwnerRecordError as exc:
        raise JobOwnerRefused(f"the job's owner is unknown, so it is not run: {exc}") from exc
    others = allow_others_from_env() if allow_others is None else allow_others
    decision = decide(recorded.uid, os.geteuid(), allow_others=others)
    if decision.action == "refuse":
        raise JobOwnerRefused(decision.reason)
    if decision.action == "self":
        return None
    return identity(recorded.uid, recorded.gid)


def hand_over(run_as: RunAs | None, paths: Iterable[Path]) -> None:
    """Give existing ``paths`` (made by the agent for the job) to the job's owner.

    Symlinks are never followed: a link planted in place of a folder keeps its target
    untouched. Does nothing when ``run_as`` is None.
    """
    if run_as is None:
        return
    for path in paths:
        os.chown(path, run_as.uid, run_as.gid, follow_symlinks=False)


def unreadable_for(run_as: RunAs, path: str, *, list_from: str | None = None) -> str | None:
    """Why ``run_as`` cannot read ``path``, or None when it can. Mode bits only: owner,
    group, others. Every folder on the way must let it enter; those at or below
    ``list_from`` must also let it list them (Python's import system lists the folders
    it imports from); the file must let it read.

    A worker run as the job's owner starts from prsd's own ``worker/boot.py``; an
    installation in a folder only root may enter (``mktemp -d`` makes 0700 folders)
    would otherwise fail every ``init()`` with a bare return code.
    """
    if run_as.uid == 0:
        return None
    target = Path(os.path.abspath(path))
    listed = Path(os.path.abspath(list_from)) if list_from is not None else None
    for place in [*reversed(target.parents), target]:
        try:
            info = os.stat(place)
        except OSError as exc:
            return f"{place}: {exc.strerror}"
        if place == target:
            need, what = 4, "read"
        elif listed is not None and place.is_relative_to(listed):
            need, what = 5, "list"
        else:
            need, what = 1, "enter"
        if info.st_uid == run_as.uid:
            bits = (info.st_mode >> 6) & 7
        elif info.st_gid == run_as.gid or info.st_gid in run_as.groups:
            bits = (info.st_mode >> 3) & 7
        else:
            bits = info.st_mode & 7
        if bits & need != need:
            return (
                f"{run_as.name} (uid {run_as.uid}) may not {what} {place} "
                f"(mode {stat.filemode(info.st_mode)}, owner uid {info.st_uid})"
            )
    return None


def make_dirs_for(
    run_as: RunAs | None, folders: Iterable[Path], *, anchor: Path | None = None
) -> None:
    """Create ``folders`` (with parents) and give the folders themselves to the owner.

    With ``anchor`` (the job's folder) every folder is reached from it one component at
    a time without following a link (prsd/spool/dirfd.py) and handed over by
    descriptor, so a link the owner planted on the way is refused, never followed.

    Raises:
        JobOwnerRefused: a folder on the way is a link or not a folder.
    """
    folders = list(folders)
    if anchor is None:
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
        hand_over(run_as, folders)
        return
    for folder in folders:
        fd = _open_folder(anchor, folder)
        try:
            if run_as is not None:
                os.fchown(fd, run_as.uid, run_as.gid)
        finally:
            os.close(fd)


def make_files_for(
    run_as: RunAs | None, files: Iterable[Path], *, anchor: Path | None = None
) -> None:
    """Create empty ``files`` if missing (never through a symlink) and give them to the owner.

    With ``anchor`` (the job's folder) each file's folder is reached without following
    a link, as in :func:`make_dirs_for`, and the file is created relative to it.

    Raises:
        JobOwnerRefused: a folder on the way, or the file itself, is a link.
    """
    files = list(files)
    if run_as is None:
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    if anchor is None:
        for path in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(path, flags, 0o644))
        hand_over(run_as, files)
        return
    for path in files:
        dir_fd = _open_folder(anchor, path.parent)
        try:
            fd = os.open(path.name, flags, 0o644, dir_fd=dir_fd)
        except OSError as exc:
            raise JobOwnerRefused(f"cannot prepare {path} for the worker: {exc.strerror}") from exc
        finally:
            os.close(dir_fd)
        try:
            os.fchown(fd, run_as.uid, run_as.gid)
        finally:
            os.close(fd)


def _open_folder(anchor: Path, folder: Path) -> int:
    parts = Path(os.path.abspath(folder)).relative_to(os.path.abspath(anchor)).parts
    try:
        return open_under(anchor, parts, create_mode=0o755)
    except UnsafeFolder as exc:
        raise JobOwnerRefused(f"the worker's files cannot be prepared: {exc}") from exc
