"""Who is who for requests: a uid's name, the admin group, and a job's owner.

Invariant: a taken-in job's owner is its ``owner.json`` record, read by the one
policy :func:`prsd.storage.jobowner.owner`. A job in ``jobs/`` whose record is missing
or cannot be believed is treated as root's, so only root and admins may act on it
(never its folder's owner). A job still queued in ``inbox/`` has no record yet: its
owner is the owner of the folder the user put there, which is exactly what intake
will record. Kept apart from
the request desk so that ``prsctl`` can ask the same questions without loading the
leader.
"""

from __future__ import annotations

import grp
import os
import pwd
from typing import TYPE_CHECKING

from prsd.leader.askrule import ADMIN_GROUP_ENV, Person
from prsd.storage.jobowner import OwnerRecordError, owner, owner_of_folder, user_name

if TYPE_CHECKING:
    from prsd.storage.layout import SpoolLayout


def person(uid: int) -> Person:
    return Person(uid, user_name(uid))


def in_group(uid: int, group: str) -> bool:
    """True when ``uid``'s primary group is ``group`` or it is listed as a member."""
    if not group:
        return False
    try:
        entry = grp.getgrnam(group)
        account = pwd.getpwuid(uid)
    except KeyError:
        return False
    return account.pw_gid == entry.gr_gid or account.pw_name in entry.gr_mem


def admin_group_from_env() -> str:
    return os.environ.get(ADMIN_GROUP_ENV, "").strip()


def job_owner(spool: SpoolLayout, job_id: str) -> Person | None:
    """The job's owner: its record (a queued job: its inbox folder's owner).

    None when the job has no folder; root when a taken-in job has no record that can
    be believed (so only root and admins may act on it).
    """
    layout = spool.job(job_id)
    try:
        if os.path.lexists(layout.root):
            found = owner(layout)
            return Person(found.uid, found.user or user_name(found.uid))
        queued = spool.inbox / job_id
        if os.path.lexists(queued):
            found = owner_of_folder(queued)
            return Person(found.uid, found.user)
    except OwnerRecordError:
        return Person(0, "root")
    except FileNotFoundError:
        return None
    return None
