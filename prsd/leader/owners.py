"""Who is who for requests: a uid's name, the admin group, and a job's owner.

Invariant: a job's owner is its ``owner.json`` record (written by the leader at intake,
:mod:`prsd.storage.jobowner`) when the job has one, else the owner of the job's folder
(in ``jobs/`` or still in ``inbox/``): the spool layout from before owner records, a
fallback to remove once every job has a record. A record that cannot be believed
makes root the owner, so only root and admins may act on that job. Kept apart from
the request desk so that ``prsctl`` can ask the same questions without loading the
leader.
"""

from __future__ import annotations

import grp
import os
import pwd
from typing import TYPE_CHECKING

from prsd.leader.askrule import ADMIN_GROUP_ENV, Person
from prsd.storage.jobowner import OwnerRecordError, owner_of_folder, read_job_owner, user_name

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
    """The job's owner: its record, else its folder's owner (in jobs/ or the inbox).

    None when the job has no folder; root when its record cannot be believed (so only
    root and admins may act on it).
    """
    layout = spool.job(job_id)
    try:
        if os.path.lexists(layout.owner_record):
            found = read_job_owner(layout)
            return Person(found.uid, found.user or user_name(found.uid))
        for folder in (layout.root, spool.inbox / job_id):
            if os.path.lexists(folder):
                found = owner_of_folder(folder)
                return Person(found.uid, found.user)
    except OwnerRecordError:
        return Person(0, "root")
    except FileNotFoundError:
        return None
    return None
