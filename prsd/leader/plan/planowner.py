"""Whose ids read a job's input, and the private folders its planner writes.

Promise: :func:`plan_identity` answers from the job's owner record only (written by
the leader at intake, :mod:`prsd.spool.jobowner`): under a root daemon the input
of a job owned by someone else is read by a process with that owner's uid, gid and
groups; a root-owned job, or any job of a daemon that is not root, is planned in the
daemon's own process (it reads with its own ids already). A job without a valid
record is never planned: fail closed, never root or a folder's owner.

:func:`private_folders` makes the folders the planner writes derived data into
(``partitions/``, ``mltable/``) before the planner starts: reached from the job's
folder without following a link, owned by the job's owner, mode 0700, so the
owner's planner and workers read and write them and no other user can list them.

Errors: :class:`~prsd.errors.InputError` (the job fails with it): no valid owner
record, or a folder that is a link, not a folder, or cannot be made.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prsd.errors import InputError
from prsd.owner import identity
from prsd.spool.dirfd import UnsafeFolder, open_under
from prsd.spool.jobowner import OwnerRecordError, owner

if TYPE_CHECKING:
    from prsd.owner import RunAs
    from prsd.spool.layout import JobLayout

PRIVATE_MODE = 0o700
PLANNER_FOLDERS = ("partitions", "mltable")  # planner.PARTITIONS_FOLDER, mlplan.FOLDER


def plan_identity(layout: JobLayout) -> RunAs | None:
    """Who reads the job's input: its owner's ids, or None (this process, as it is).

    Raises:
        InputError: the daemon is root and the job has no valid owner record.
    """
    if os.geteuid() != 0:
        return None
    try:
        found = owner(layout)
    except OwnerRecordError as exc:
        raise InputError(f"the job's owner is unknown, so its input is not read: {exc}") from exc
    if found.uid == 0:
        return None
    return identity(found.uid, found.gid)


def private_folders(layout: JobLayout, run_as: RunAs | None) -> None:
    """Make (or take back) ``partitions/`` and ``mltable/``: the owner's, mode 0700.

    Raises:
        InputError: a folder is a link or not a folder, or cannot be made.
    """
    for name in PLANNER_FOLDERS:
        try:
            fd = open_under(layout.root, [name], create_mode=PRIVATE_MODE)
        except UnsafeFolder as exc:
            raise InputError(f"the job's {name}/ folder cannot be used: {exc}") from exc
        try:
            if run_as is not None:
                os.fchown(fd, run_as.uid, run_as.gid)
            os.fchmod(fd, PRIVATE_MODE)
        except OSError as exc:
            raise InputError(f"the job's {name}/ folder cannot be made private: {exc}") from exc
        finally:
            os.close(fd)
