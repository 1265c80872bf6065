"""Who may act on a job: a uid as a person, the admin group, a job's owner, the rule.

Invariant: a request acts on a job only when the uid that asked is the job's recorded
owner, root, or a member of the configured admin group (``PRSD_ADMIN_GROUP``)
(:func:`may_act`). A taken-in job's owner is its ``owner.json`` record, read by the one
policy :func:`prsd.spool.jobowner.owner`; a job in ``jobs/`` whose record is missing
or cannot be believed is treated as root's, so only root and admins may act on it
(never its folder's owner). A job still queued in ``inbox/`` has no record yet: its
owner is the owner of the folder the user put there, which is exactly what intake will
record. One copy for both sides: the leader's request desk (prsd/leader/requests/desk.py)
and ``prsctl`` (prsd/cli/access.py) ask the same questions. Nothing here raises.
"""

from __future__ import annotations

import grp
import os
import pwd
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.spool.jobowner import OwnerRecordError, owner, owner_of_folder, user_name

if TYPE_CHECKING:
    from prsd.spool.layout import SpoolLayout

ADMIN_GROUP_ENV = "PRSD_ADMIN_GROUP"


@dataclass(frozen=True)
class Person:
    """A uid with its login name (the number when it has none)."""

    uid: int
    name: str

    def __str__(self) -> str:
        return f"{self.name} (uid {self.uid})"


def may_act(asker: Person, owner: Person, *, asker_is_admin: bool) -> bool:
    """True when ``asker`` may act on a job that ``owner`` owns."""
    return asker.uid in (owner.uid, 0) or asker_is_admin


def who_may(admin_group: str) -> str:
    """Who may act on a job, for messages."""
    if admin_group:
        return f"only its owner, root or members of group {admin_group}"
    return "only its owner or root"


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


def job_owner(spool: SpoolLayout, job_id: str, *, wait_s: float = 0.0) -> Person | None:
    """The job's owner: its record (a queued job: its inbox folder's owner).

    None when the job has no folder; root when a taken-in job has no record that can
    be believed (so only root and admins may act on it). A leader moves a job out of
    the inbox, seals the folder (gives it to the daemons) and records the owner a
    moment later; ``wait_s`` (a client's courtesy, never the leader's round) is how
    long a missing record is waited for while the folder is not sealed yet, and
    :data:`SEALED_WAIT_S` at most once it is.
    """
    layout = spool.job(job_id)
    began = time.monotonic()
    while True:
        try:
            if os.path.lexists(layout.root):
                found = owner(layout)
                return Person(found.uid, found.user or user_name(found.uid))
            queued = spool.queued(job_id)
            if os.path.lexists(queued):
                found = owner_of_folder(queued)
                return Person(found.uid, found.user)
        except OwnerRecordError:
            waited = time.monotonic() - began
            limit = wait_s if not _sealed(spool, job_id) else min(wait_s, SEALED_WAIT_S)
            if os.path.lexists(layout.owner_record) or waited >= limit:
                return Person(0, "root")
            time.sleep(0.05)  # being taken in: the record follows the move
            continue
        except FileNotFoundError:
            return None
        return None


SEALED_WAIT_S = 0.5
"""How long a sealed job's missing owner record is waited for (it follows the seal)."""


def _sealed(spool: SpoolLayout, job_id: str) -> bool:
    """True when ``jobs/<id>`` belongs to whoever owns ``jobs/`` (the daemons)."""
    try:
        return os.lstat(spool.job(job_id).root).st_uid == os.lstat(spool.jobs).st_uid
    except OSError:
        return True
