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
job (never the daemon) with the message. It is a
:class:`prsd.spool.badrecord.BadRecord` (the one error of a bad spool record) and a
:class:`prsd.errors.SpoolError`, so callers catching either keep working; the record
is decoded through :class:`prsd.spool.badrecord.Doc` (versioned: a record written
before it carried ``schema`` reads as version 1, a newer one is refused).
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.errors import SpoolError
from prsd.spool.atomic import write_atomic
from prsd.spool.badrecord import BadRecord, Doc, encode
from prsd.spool.readsafe import UntrustedFile, read_small

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import JobLayout

MAX_RECORD_BYTES = 4096
SCHEMA = 1


class OwnerRecordError(BadRecord, SpoolError):
    """``owner.json`` is missing, not a regular file of the daemons, or not a record."""


@dataclass(frozen=True)
class JobOwner:
    """The job's owner as the leader saw it at intake."""

    uid: int
    gid: int
    user: str

    def to_json(self) -> bytes:
        return encode({"gid": self.gid, "uid": self.uid, "user": self.user}, SCHEMA)

    @classmethod
    def from_json(cls, data: bytes) -> JobOwner:
        """Parse a record.

        Raises:
            OwnerRecordError: not a JSON object with integer ``uid``/``gid`` (not
                negative) and a ``user``, or of a newer schema.
        """
        try:
            doc = Doc(data, "owner.json", SCHEMA)
            uid, gid = doc.integer("uid"), doc.integer("gid")
            user = doc.text("user", default="")
        except BadRecord as exc:
            raise OwnerRecordError(str(exc)) from None
        if uid < 0 or gid < 0:
            raise OwnerRecordError("owner.json does not hold integer uid and gid")
        return cls(uid, gid, user)


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
