"""Who owns a job: the record the leader writes once at intake, and the only one trusted.

Invariant: a job's owner is decided by the leader when it takes the job in from
``inbox/`` (the uid and gid of the folder the user put there, read with ``lstat`` on
the moved folder), written to ``jobs/<id>/owner.json`` in a folder only the daemons
may write, and never re-derived from a file the owner controls afterwards. Everything
that acts for a user (run-as-owner, ``prsctl`` requests, ``retry``) compares against
this record, so a user who rewrites files in their own job cannot become someone else.

The one policy: :func:`owner` answers "who owns this job" for the leader, the merge,
retries, requests and pipelines. It is fail-closed: a missing or malformed record, or
one that is not a regular file of the daemons, raises :class:`OwnerRecordError`; it
never answers root and never the owner of a folder (a folder's owner is read only at
intake, to write the record). Each caller states what a refusal means for it (the job
is not run, its output is not written, a request on it is for root and admins only).

A missing or malformed record raises :class:`OwnerRecordError`: the caller fails that
job (never the daemon) with the message.
"""

from __future__ import annotations

import json
import os
import pwd
import stat
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from prsd.errors import SpoolError
from prsd.storage.atomic import write_atomic
from prsd.storage.readsafe import UntrustedFile, read_small

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.storage.layout import JobLayout

MAX_RECORD_BYTES = 4096


class OwnerRecordError(SpoolError):
    """``owner.json`` is missing, not a regular file of the daemons, or not a record."""


@dataclass(frozen=True)
class JobOwner:
    """The job's owner as the leader saw it at intake."""

    uid: int
    gid: int
    user: str

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> JobOwner:
        """Parse a record.

        Raises:
            OwnerRecordError: not a JSON object with integer ``uid``/``gid`` and a ``user``.
        """
        try:
            raw = json.loads(data)
        except ValueError as exc:
            raise OwnerRecordError(f"owner.json is not JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise OwnerRecordError("owner.json is not an object")
        uid, gid, user = raw.get("uid"), raw.get("gid"), raw.get("user", "")
        if not (_id(uid) and _id(gid) and isinstance(user, str)):
            raise OwnerRecordError("owner.json does not hold integer uid and gid")
        assert isinstance(uid, int) and isinstance(gid, int)
        return cls(uid, gid, user)


def _id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def user_name(uid: int) -> str:
    """The login name of ``uid``, or the number when it has no password entry."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def owner_of_folder(folder: Path) -> JobOwner:
    """The owner of ``folder`` itself (``lstat``: a symlink is never followed).

    Raises:
        OwnerRecordError: ``folder`` is not a real folder.
    """
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise OwnerRecordError(f"{folder} is not a folder")
    return JobOwner(info.st_uid, info.st_gid, user_name(info.st_uid))


def write_job_owner(layout: JobLayout, owner: JobOwner) -> None:
    """Record the owner (durable: run-as-owner after a failover depends on it)."""
    write_atomic(layout.owner_record, owner.to_json())


def owner(layout: JobLayout) -> JobOwner:
    """Who owns the job: its ``owner.json`` record, and nothing else (fail-closed).

    Raises:
        OwnerRecordError: no record, a link, a file not written by the daemons, too big
            or malformed: the caller refuses (never root, never the folder's owner).
    """
    return read_job_owner(layout)


def read_job_owner(layout: JobLayout) -> JobOwner:
    """The recorded owner of a job, read without following links.

    The record must be a regular file owned by the daemons' own uid (or root), so a
    record planted by a job owner is never believed.

    Raises:
        OwnerRecordError: missing, a link, planted by someone else, too big or malformed.
    """
    try:
        data = read_small(layout.owner_record, MAX_RECORD_BYTES, daemon_owned=True)
    except UntrustedFile as exc:
        raise OwnerRecordError(f"no valid owner record: {exc}") from exc
    return JobOwner.from_json(data)
