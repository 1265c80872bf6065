"""Whose job is it, and what to tell a user the file system refused: one line each.

``prsctl`` looks into a job (``status JOB``, ``logs``, ``report``, ``retry``) for its
owner, root and members of ``PRSD_ADMIN_GROUP`` (the rule of
:mod:`prsd.leader.requests.askrule`); anyone else is told in one line whose job it is (the
jobs table still lists it for everyone). It is a courtesy, not the protection: the
file system's modes are. When those refuse, :func:`permission_line` turns the
``PermissionError`` into one line naming the file, the user and what to change.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.settings import setting
from prsd.spool.askers import ADMIN_GROUP_ENV, in_group, job_owner, may_act, person, who_may
from prsd.spool.atomic import TMP_PREFIX

if TYPE_CHECKING:
    from prsd.spool.layout import SpoolLayout

TAKE_IN_WAIT_S = 5.0
"""How long a job just moved out of the inbox, not sealed yet, may go without its
owner record (:func:`prsd.spool.askers.job_owner`)."""

GUIDE = "docs/deploy.md, 'Spool ownership and permissions'"


class NotYourJob(PrsdError):
    """The user asked to look into (or re-run) a job another user owns."""


def admin_group() -> str:
    found = setting(ADMIN_GROUP_ENV)
    return found.value if found is not None else ""


def require_owner(spool: SpoolLayout, job_id: str, what: str) -> None:
    """Refuse, in one line naming the owner, a user who is not the job's owner or an admin.

    Raises:
        NotYourJob: the job belongs to someone else.
    """
    me = person(os.geteuid())
    group = admin_group()
    admin = in_group(me.uid, group)
    if me.uid == 0 or admin:
        return  # whoever owns it
    owner = job_owner(spool, job_id, wait_s=TAKE_IN_WAIT_S)
    if owner is None or may_act(me, owner, asker_is_admin=admin):
        return
    raise NotYourJob(
        f"job {job_id} belongs to {owner}: {me} may not {what} ({who_may(group)}); "
        f"`prsctl status` lists every job"
    )


def permission_line(exc: PermissionError, spool: SpoolLayout | None) -> str:
    """One line for a refused open, rename or mkdir: the file, the user, what to change."""
    path = Path(exc.filename) if exc.filename else None
    if path is not None and path.name.startswith(TMP_PREFIX):
        path = path.parent  # a file written aside: the folder is what refused it
    me = person(os.geteuid())
    where = str(path) if path is not None else "a file"
    return f"{where}: permission denied for {me}; {_hint(path, spool)}"


def _hint(path: Path | None, spool: SpoolLayout | None) -> str:
    if path is None or spool is None:
        return "check the file's owner and mode"
    for folder, mode in ((spool.inbox, "1777"), (spool.requests, "1777")):
        if path == folder or path.parent == folder:
            return (
                f"{folder} must be mode {mode} (sticky, writable by everyone): ask the "
                f"spool's administrator to run `chmod {mode} {folder}` ({GUIDE})"
            )
    if path.is_relative_to(spool.jobs):
        job = path.relative_to(spool.jobs).parts[0]
        owner = job_owner(spool, job)
        whose = f"job {job} belongs to {owner}" if owner is not None else f"job {job}"
        return f"{whose}; its owner, root or an admin group member may read it ({GUIDE})"
    if path.is_relative_to(spool.root):
        return f"only the daemons write there; ask the spool's administrator ({GUIDE})"
    me = person(os.geteuid()).name
    return f"use a path {me} may use, or ask its owner (`ls -ld` shows who) to change its mode"


def unreadable_line(paths: list[Path]) -> str:
    """One line for log files skipped because this user may not read them."""
    me = person(os.geteuid())
    more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
    return (
        f"{paths[0]}{more}: not readable by {me}, left out; the job's owner, root or an "
        f"admin group member may read them ({GUIDE})"
    )
