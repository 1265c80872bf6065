"""Asking the leader to act on a job (``prsctl cancel``): a request file, then its answer.

The user never writes into a job's folder: the request goes to ``requests/`` (see
:mod:`prsd.spool.requests`) and the leader checks it against the job's owner. When a
leader is alive ``prsctl`` waits for its answer (``wait_s``) and prints it; when none
is, it says so at once: the request stays and is answered when a leader starts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.errors import SpoolError
from prsd.read.fleet import fleet_warning, read_fleet
from prsd.spool.requests import read_reply, send_request

if TYPE_CHECKING:
    from prsd.spool.layout import SpoolLayout

WAIT_S = 30.0
POLL_S = 0.1


@dataclass(frozen=True)
class Answer:
    """What to print, and whether the leader did (or will do) what was asked."""

    ok: bool
    message: str


def ask(spool: SpoolLayout, job_id: str, action: str, *, wait_s: float = WAIT_S) -> Answer:
    """Send ``action`` for ``job_id`` and wait for the leader's answer.

    Raises:
        SpoolError: the spool has no ``requests/`` folder (daemons older than it).
        PermissionError: ``requests/`` is not writable by this user.
    """
    if not spool.requests.is_dir():
        raise SpoolError(
            f"{spool.requests} is missing: the daemons create it when they start (restart "
            f"them after an upgrade), or an administrator runs "
            f"`install -d -m 1777 {spool.requests}`"
        )
    request = send_request(spool, job_id, action)
    down = fleet_warning(read_fleet(spool, datetime.now(UTC)), f"{action} of {job_id} requested")
    if down is not None and "leader" in down:
        return Answer(True, f"{down}: the request waits for a leader")
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        reply = read_reply(spool, request)
        if reply is not None:
            return Answer(reply.ok, reply.message)
        time.sleep(POLL_S)
    return Answer(
        True,
        f"{action} of {job_id} requested; the leader has not answered within {wait_s:.0f} s "
        "(a job still queued is canceled when it is taken in)",
    )
