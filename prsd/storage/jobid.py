"""Job ids: minted once, by the leader's rules, and never given to two jobs.

Invariant: an id names at most one job over the spool's whole life. The leader
reserves every id it gives with an ``O_EXCL`` create in ``jobs/.ids/`` (a folder only
the daemons write) before it moves a folder into ``jobs/<id>/``, and it only ever
moves into a name it reserved itself. An inbox folder can therefore never name,
replace or re-open a job: ``prsctl submit`` proposes an id of
:func:`make_job_id`'s shape (so it can print it at once), and the leader keeps the
proposal only when it reserves it first and no ``jobs/<id>`` exists; any other name
(a hand-dropped folder, another job's id, a name used before) gets a fresh id.

Errors: none of its own; a reservation that fails in an unclear way (an NFS reply
lost) reads the marker back, which names its creator (prsd.storage.atomic).
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.storage.atomic import create_exclusive
from prsd.storage.layout import valid_job_id

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.storage.layout import SpoolLayout

_UNSAFE = re.compile(r"[^a-z0-9_-]+")
_STAMP = re.compile(r"-\d{8}-\d{6}-[0-9a-f]{4}$")
MAX_NAME_CHARS = 60
REGISTRY = ".ids"
MAX_MINT_TRIES = 20


def sanitize_name(name: str) -> str:
    """Lower-case letters, digits, ``_`` and ``-`` only; never empty."""
    cleaned = _UNSAFE.sub("-", name.lower()).strip("-_")
    return cleaned[:MAX_NAME_CHARS].strip("-_") or "job"


def make_job_id(name: str, when: datetime | None = None) -> str:
    """``<sanitized-name>-<YYYYMMDD>-<HHMMSS>-<4 hex>``: unique, and sorted by start time per name."""
    when = when or datetime.now(UTC)
    return f"{sanitize_name(name)}-{when:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def is_proposal(name: str) -> bool:
    """True for an inbox name shaped like :func:`make_job_id`'s ids (pure)."""
    return valid_job_id(name) and bool(_STAMP.search(name))


def base_name(name: str) -> str:
    """The job name inside an id-shaped folder name (its time stamp and suffix dropped)."""
    return _STAMP.sub("", name) or name


def registry(spool: SpoolLayout) -> Path:
    """``jobs/.ids/``: one empty marker per id ever given."""
    return spool.jobs / REGISTRY


def ever_given(spool: SpoolLayout, job_id: str) -> bool:
    """True when ``job_id`` is (or was) a job of this spool."""
    return os.path.lexists(spool.jobs / job_id) or os.path.lexists(registry(spool) / job_id)


def reserve_job_id(spool: SpoolLayout, job_id: str) -> bool:
    """Reserve ``job_id`` for a job this caller is about to move in; True if it is ours.

    Raises:
        OSError: the registry cannot be written (the spool is full or unwritable).
    """
    if os.path.lexists(spool.jobs / job_id):
        return False  # a job from before the registry existed
    folder = registry(spool)
    folder.mkdir(exist_ok=True)
    token = f"{os.getpid()} {secrets.token_hex(8)}\n".encode()
    return create_exclusive(folder / job_id, token)


def release_job_id(spool: SpoolLayout, job_id: str) -> None:
    """Give back an id reserved for a move that did not happen (no job has it)."""
    (registry(spool) / job_id).unlink(missing_ok=True)


def assign_job_id(spool: SpoolLayout, inbox_name: str, name: str) -> str:
    """The id for the folder ``inbox/<inbox_name>``, reserved: the proposal or a fresh one.

    Args:
        spool: the spool.
        inbox_name: the folder's name in ``inbox/``.
        name: the job name fresh ids are made from.

    Raises:
        OSError: the registry cannot be written.
    """
    if is_proposal(inbox_name) and reserve_job_id(spool, inbox_name):
        return inbox_name
    for _ in range(MAX_MINT_TRIES):
        job_id = make_job_id(name)
        if reserve_job_id(spool, job_id):
            return job_id
    raise OSError(f"no free job id for {name!r} after {MAX_MINT_TRIES} tries")
