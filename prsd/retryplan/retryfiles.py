"""The retry files a leader trusts: made the daemons' own at intake, re-checked at every use.

Invariant: ``retry.json`` and ``retry_kept.jsonl`` arrive in a job folder written by
``prsctl retry`` as the job's owner. At intake the leader reads each once (one
``open`` with ``O_NOFOLLOW | O_NONBLOCK``, a regular file, bounded) and writes it
again as the daemons' file, mode 0640, group the job owner's group: the owner can
read it (``prsctl retry`` of a retry reads what it kept), but no longer change it
(the job's folder is the daemons'). Every later read by a daemon
(:func:`read_trusted`) accepts only a regular file of the daemons, read without
following a link, so a file the owner rewrote or swapped after intake is refused,
not believed. ``retry_order.json`` is written by the leader itself.

Errors: :class:`RetryFileError` (a :class:`PrsdError`) names the file and why; the
retry job fails with it, nothing is mixed into its output.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.spool.atomic import write_atomic
from prsd.spool.readsafe import UntrustedFile, read_small

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.jobowner import JobOwner
    from prsd.spool.layout import JobLayout

MAX_RETRY_FILE_BYTES = 1 << 28


class RetryFileError(PrsdError):
    """A retry file is not a regular file of the daemons (rewritten, swapped, a link)."""


def adopt_retry_files(layout: JobLayout, owner: JobOwner) -> None:
    """Make the submitted retry files the daemons' (0640, the owner's group may read).

    Raises:
        RetryFileError: a retry file is a link, not a regular file, or too big.
    """
    for path in (layout.retry_plan, layout.retry_kept):
        if not os.path.lexists(path):
            continue
        try:
            data = read_small(path, MAX_RETRY_FILE_BYTES, daemon_owned=False)
        except UntrustedFile as exc:
            raise RetryFileError(f"{exc.one_line()}: the retry cannot use it") from exc
        write_atomic(path, data, mode=0o640)
        if os.geteuid() == 0:
            os.chown(path, 0, owner.gid, follow_symlinks=False)


def read_trusted(path: Path) -> bytes | None:
    """The bytes of a retry file the daemons wrote; None when there is none.

    Raises:
        RetryFileError: it exists but is a link, not a regular file, not the
            daemons' (rewritten by someone else after intake) or too big.
    """
    if not os.path.lexists(path):
        return None
    try:
        return read_small(path, MAX_RETRY_FILE_BYTES, daemon_owned=True)
    except UntrustedFile as exc:
        raise RetryFileError(f"{exc.one_line()}: the retry does not trust it") from exc
