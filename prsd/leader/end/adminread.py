"""The admin group reads a job's private status files: one POSIX ACL entry on each.

``PRSD_ADMIN_GROUP`` (in the leader's environment) names the group whose members may
look into every job. Each private file the leader writes
(prsd/leader/end/privatestatus.py: the job's error text) is mode 0640 with the job's
group; :func:`let_admins_read` adds the access ACL entry ``group:<admin>:r--`` to it
through its open descriptor, so an admin's ``prsctl status`` shows the text as the
owner's does, and nobody else gains anything (``other::---`` stays).

Errors: none raised. On a file system without POSIX ACLs (NFSv4, SMB), with no admin
group set, or one that does not exist, the file keeps its owner and group only and
admins outside the job's group read it as root (docs/security.md, "Known limits").
"""

from __future__ import annotations

import contextlib
import functools
import grp
import os
import struct

from prsd.spool.askers import ADMIN_GROUP_ENV

ACL_XATTR = "system.posix_acl_access"
_VERSION = 2
_USER_OBJ, _GROUP_OBJ, _GROUP, _MASK, _OTHER = 0x01, 0x04, 0x08, 0x10, 0x20
_UNDEFINED = 0xFFFFFFFF
_R, _RW = 4, 6


def acl_bytes(admin_gid: int) -> bytes:
    """The access ACL of a 0640 file that group ``admin_gid`` may read too (pure)."""
    entries = [
        (_USER_OBJ, _RW, _UNDEFINED),
        (_GROUP_OBJ, _R, _UNDEFINED),
        (_GROUP, _R, admin_gid),
        (_MASK, _R, _UNDEFINED),
        (_OTHER, 0, _UNDEFINED),
    ]
    return struct.pack("<I", _VERSION) + b"".join(struct.pack("<HHI", *e) for e in entries)


@functools.lru_cache(maxsize=8)
def _gid_of(group: str) -> int | None:
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        return None


def admin_gid() -> int | None:
    """The gid of ``PRSD_ADMIN_GROUP``; None when it is unset or names no group."""
    group = os.environ.get(ADMIN_GROUP_ENV, "").strip()
    return _gid_of(group) if group else None


def let_admins_read(fd: int) -> None:
    """Add read access for the admin group to the 0640 file open on ``fd`` (see above)."""
    gid = admin_gid()
    if gid is None:
        return
    with contextlib.suppress(OSError):  # no ACLs on this file system: owner and group only
        os.setxattr(fd, ACL_XATTR, acl_bytes(gid))
