"""A job's error text is its owner's (and its admins'): the leader's private records.

The split of ``state/status.json`` and ``state/final.json`` into a public and a
private file, and the order they are written in, are the storage layer's
(prsd/spool/privaterecords.py). The leader adds one thing: members of
``PRSD_ADMIN_GROUP`` read each private file too, through an ACL entry
(prsd/leader/end/adminread.py), so ``prsctl status`` shows them the job's text as it
shows its owner and the job's group.

Errors: as prsd/spool/privaterecords.py (OSError when a file cannot be written).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prsd.leader.end.adminread import let_admins_read
from prsd.spool import privaterecords

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout

GRANT = let_admins_read
"""What the leader grants on each private file: the admin group's read access."""


def give_to_job(layout: JobLayout, name: str, gid: int | None) -> None:
    """Give ``state/<name>`` mode 0640, the job's group, and the admins' read access."""
    privaterecords.give_to_job(layout, name, gid, GRANT)


def write_status(
    layout: JobLayout, doc: dict[str, Any], gid: int | None, *, durable: bool = False
) -> None:
    """:func:`prsd.spool.privaterecords.write_status`, the admins let in."""
    privaterecords.write_status(layout, doc, gid, durable=durable, grant=GRANT)


def write_final(layout: JobLayout, data: bytes, gid: int | None) -> None:
    """:func:`prsd.spool.privaterecords.write_final`, the admins let in."""
    privaterecords.write_final(layout, data, gid, grant=GRANT)
