"""A job's status and final records, each split in a public and a private file.

``state/status.json`` stays readable by every user (state, counts, times), but the
fields that carry text from the job (its reason, ``first_error``, ``errors``,
``last_errors``: tracebacks and messages written from the job's data) are written
only to ``state/status.private.json`` beside it, mode 0640, the daemons' uid and the
job's group (from ``owner.json``); ``state/final.json`` likewise keeps the state, exit
code and time for everyone and leaves its ``reason`` and ``root_cause`` to
``state/final.private.json`` (same owner and mode). Each private file, once its group
and mode are set, is handed to ``grant`` through its descriptor (the leader adds the
admin group's read access there: prsd/leader/end/adminread.py).

Promise: the private record is written before the public one, so a reader who can
read both never finds a public record newer than the private text it should show.

Errors: writing raises what :func:`prsd.spool.atomic.write_atomic` raises (OSError);
a job with no valid owner record keeps its private files the daemons' alone (0640,
the daemons' group). :func:`read_final` raises
:class:`prsd.spool.readsafe.UntrustedFile`.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from prsd.spool.atomic import write_atomic
from prsd.spool.finalrecord import PRIVATE_FINAL, public_final
from prsd.spool.jobowner import OwnerRecordError, owner
from prsd.spool.readsafe import UntrustedFile, read_small
from prsd.spool.statusschema import PRIVATE_STATUS, split_private

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.spool.layout import JobLayout

    Grant = Callable[[int], None]

__all__ = [
    "PRIVATE_MODE",
    "give_to_job",
    "job_gid",
    "read_final",
    "write_final",
    "write_status",
]

PRIVATE_MODE = 0o640


def _no_grant(fd: int) -> None:
    """Nobody beyond the job's group."""


def job_gid(layout: JobLayout) -> int | None:
    """The job's group (from its owner record); None when there is no valid record."""
    try:
        return owner(layout).gid
    except OwnerRecordError:
        return None


def give_to_job(layout: JobLayout, name: str, gid: int | None, grant: Grant = _no_grant) -> None:
    """Give ``state/<name>`` (a daemons' file) mode 0640 and the job's group, then
    ``grant`` its descriptor."""
    fd = os.open(layout.state / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if gid is not None and os.geteuid() == 0:
            os.fchown(fd, -1, gid)
        os.fchmod(fd, PRIVATE_MODE)
        grant(fd)
    finally:
        os.close(fd)


def write_status(
    layout: JobLayout,
    doc: dict[str, Any],
    gid: int | None,
    *,
    durable: bool = False,
    grant: Grant = _no_grant,
) -> None:
    """Write the private fields of ``doc`` (0640, job's group), then the public rest.

    Raises:
        OSError: a file could not be written.
    """
    public, private = split_private(doc)
    write_atomic(
        layout.state / PRIVATE_STATUS,
        json.dumps(private, indent=1).encode(),
        durable=durable,
        mode=0o600,
    )
    give_to_job(layout, PRIVATE_STATUS, gid, grant)
    write_atomic(layout.status, json.dumps(public, indent=1).encode(), durable=durable)


def write_final(
    layout: JobLayout, data: bytes, gid: int | None, *, grant: Grant = _no_grant
) -> None:
    """Write ``state/final.private.json`` (0640, the job's group), then ``final.json``
    with its ``reason`` and ``root_cause`` blanked (every user's: state, exit code, time).

    Raises:
        OSError: a file could not be written.
    """
    write_atomic(layout.state / PRIVATE_FINAL, data, mode=0o600)
    give_to_job(layout, PRIVATE_FINAL, gid, grant)
    write_atomic(layout.final, public_final(data))


def read_final(layout: JobLayout, max_bytes: int) -> bytes:
    """The whole ``final.json`` record (the private copy where there is one: a job ended
    by an older leader has only ``final.json``), read as the daemons' own file.

    Raises:
        UntrustedFile: neither is a regular file of the daemons within ``max_bytes``.
    """
    try:
        return read_small(layout.state / PRIVATE_FINAL, max_bytes, daemon_owned=True)
    except UntrustedFile:
        return read_small(layout.final, max_bytes, daemon_owned=True)
